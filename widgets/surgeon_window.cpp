#include "surgeon_window.h"

#include "display_names.h"
#include "surgeon_charts.h"

#include <QCloseEvent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace organ::widgets {
namespace {

QString endText(SurgeonRecord::End end) {
    switch (end) {
    case SurgeonRecord::End::Done:
        return SurgeonWindow::tr("Done");
    case SurgeonRecord::End::Budget:
        return SurgeonWindow::tr("Budget spent");
    case SurgeonRecord::End::Cancelled:
        return SurgeonWindow::tr("Cancelled");
    }
    return {};
}

QTableWidgetItem* numberItem(double value, int decimals) {
    auto* item = new QTableWidgetItem(model::finiteNumber(value, decimals));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

SurgeonWindow::SurgeonWindow(const QString& model, QWidget* parent)
    : QWidget(parent, Qt::Window), m_model(model) {
    setObjectName(QStringLiteral("surgeonWindow"));
    setWindowTitle(tr("Auto-surgeon — %1").arg(model));
    auto* layout = new QVBoxLayout(this);
    m_headline = new QLabel(this);
    m_headline->setWordWrap(true);
    QFont bold = m_headline->font();
    bold.setBold(true);
    m_headline->setFont(bold);
    layout->addWidget(m_headline);
    auto* bar = new QHBoxLayout;
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("surgeonStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bar->addWidget(m_status, 1);
    m_cancel = new QPushButton(tr("Cancel (keep the best)"), this);
    m_cancel->setToolTip(tr("Stops the search: the best candidate scored so far is kept"));
    m_load = new QPushButton(tr("Load into plan"), this);
    m_load->setToolTip(tr("Makes the chosen plan the plan dock's plan, as one step Edit → Undo takes back"));
    m_load->setEnabled(false);
    bar->addWidget(m_cancel);
    bar->addWidget(m_load);
    layout->addLayout(bar);
    connect(m_cancel, &QPushButton::clicked, this, &SurgeonWindow::cancelRequested);
    connect(m_load, &QPushButton::clicked, this, [this] {
        if (m_record && m_record->best) {
            emit loadRequested(m_record->candidates[*m_record->best].plan);
        }
    });

    auto* grid = new QGridLayout;
    m_charts.objective = new SurgeonObjectiveChart(model, this);
    m_charts.pareto = new SurgeonParetoChart(model, this);
    m_charts.changes = new SurgeonChangesChart(model, this);
    for (QWidget* chart : {static_cast<QWidget*>(m_charts.objective), static_cast<QWidget*>(m_charts.pareto),
                           static_cast<QWidget*>(m_charts.changes)}) {
        chart->setMinimumSize(320, 260);
    }
    grid->addWidget(m_charts.objective, 0, 0);
    grid->addWidget(m_charts.pareto, 0, 1);
    grid->addWidget(m_charts.changes, 1, 0);
    auto* vitals = new QVBoxLayout;
    auto* caption =
        new QLabel(tr("<b>The chosen plan's vital signs</b> against the recipient and the donors"), this);
    caption->setWordWrap(true);
    vitals->addWidget(caption);
    m_vitals.status = new QLabel(this);
    m_vitals.status->setWordWrap(true);
    vitals->addWidget(m_vitals.status);
    m_vitals.table = new QTableWidget(0, 5, this);
    m_vitals.table->setObjectName(QStringLiteral("surgeonVitals"));
    m_vitals.table->setHorizontalHeaderLabels(
        {tr("model"), tr("mean NLL"), tr("perplexity"), tr("KL(model ‖ plan)"), tr("top-1 agrees")});
    m_vitals.table->verticalHeader()->setVisible(false);
    m_vitals.table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_vitals.table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    for (int c = 1; c < m_vitals.table->columnCount(); ++c) {
        m_vitals.table->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    }
    vitals->addWidget(m_vitals.table, 1);
    grid->addLayout(vitals, 1, 1);
    grid->setRowStretch(0, 1);
    grid->setRowStretch(1, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    layout->addLayout(grid, 1);
    resize(1200, 820);
}

void SurgeonWindow::start(SurgeonGoal goal, const QString& headline, const QString& objective,
                          std::uint32_t blocks) {
    m_goal = goal;
    m_objectiveName = objective;
    m_blocks = blocks;
    m_running = true;
    m_candidates.clear();
    m_record.reset();
    m_vitals.report.reset();
    m_headline->setText(headline);
    m_status->setText(tr("Reading the text and taking the recipient's vital signs…"));
    m_cancel->setEnabled(true);
    m_load->setEnabled(false);
    m_charts.objective->setObjectiveName(objective);
    m_charts.objective->clear();
    m_charts.pareto->setCandidates({}, goal, std::nullopt, objective);
    m_charts.changes->setChanges(PlanChanges{}, QString());
    m_vitals.table->setRowCount(0);
    m_vitals.status->setText(tr("Taken once the search has chosen a plan."));
}

void SurgeonWindow::addCandidate(const SurgeonCandidate& candidate, std::size_t index) {
    if (index != m_candidates.size()) {
        return; // not this search's (a late delivery of an earlier one)
    }
    m_candidates.push_back(candidate);
    m_charts.objective->add(candidate, index);
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < m_candidates.size(); ++i) {
        if (m_candidates[i].feasible &&
            (!best || m_candidates[i].score.objective < m_candidates[*best].score.objective)) {
            best = i;
        }
    }
    m_charts.pareto->setCandidates(m_candidates, m_goal, best, m_objectiveName);
    showChosen(best);
}

void SurgeonWindow::showChosen(std::optional<std::size_t> chosen) {
    if (!chosen) {
        m_charts.changes->setChanges(PlanChanges{}, QString());
        return;
    }
    const SurgeonCandidate& c = m_candidates[*chosen];
    m_charts.changes->setChanges(planChanges(c.plan, m_blocks), QString::fromStdString(c.summary));
}

void SurgeonWindow::setProgress(const QString& text) {
    m_status->setText(text);
}

void SurgeonWindow::setRecord(std::shared_ptr<const SurgeonRecord> record) {
    m_running = false;
    m_record = std::move(record);
    m_cancel->setEnabled(false);
    m_candidates = m_record->candidates;
    m_charts.objective->clear();
    for (std::size_t i = 0; i < m_candidates.size(); ++i) {
        m_charts.objective->add(m_candidates[i], i);
    }
    m_charts.pareto->setCandidates(m_candidates, m_goal, m_record->best, m_objectiveName);
    showChosen(m_record->best);
    const QString counts = tr("%1 run, %2 from the cache, %3 s (%4 a second)")
                               .arg(model::countOf(qint64(m_record->runs), tr("candidate"), tr("candidates")))
                               .arg(m_record->cacheHits)
                               .arg(model::finiteNumber(m_record->seconds, 1),
                                    model::finiteNumber(m_record->evaluationsPerSecond(), 2));
    if (!m_record->best) {
        m_status->setText(tr("%1: no candidate may be chosen (none within the constraints). %2")
                              .arg(endText(m_record->end), counts));
        m_load->setEnabled(false);
        return;
    }
    const SurgeonCandidate& best = m_record->candidates[*m_record->best];
    QString text = tr("%1. Chosen: %2 — %3 %4")
                       .arg(endText(m_record->end), QString::fromStdString(best.summary), m_objectiveName,
                            model::finiteNumber(best.score.objective, 4));
    if (best.holdout) {
        text += tr(" (held out %1)").arg(model::finiteNumber(*best.holdout, 4));
    }
    if (m_record->end == SurgeonRecord::End::Cancelled) {
        text += tr(" — the best of the candidates scored before the search was cancelled");
    }
    m_status->setText(text + u'\n' + counts);
    m_load->setEnabled(true);
}

void SurgeonWindow::setFailed(const QString& message) {
    m_running = false;
    m_cancel->setEnabled(false);
    m_load->setEnabled(false);
    m_status->setText(message);
    m_vitals.status->clear();
}

void SurgeonWindow::setVitalsStatus(const QString& text) {
    m_vitals.status->setText(text);
}

void SurgeonWindow::setVitals(std::shared_ptr<const VitalsReport> report, const QString& text) {
    m_vitals.report = std::move(report);
    m_vitals.status->setText(text);
    const VitalsReport& r = *m_vitals.report;
    m_vitals.table->setRowCount(int(r.parents.size()) + 1);
    m_vitals.table->setItem(0, 0, new QTableWidgetItem(tr("the chosen plan")));
    m_vitals.table->setItem(0, 1, numberItem(r.perplexity.meanNll, 4));
    m_vitals.table->setItem(0, 2, numberItem(r.perplexity.perplexity, 3));
    m_vitals.table->setItem(0, 3, new QTableWidgetItem(QStringLiteral("—")));
    m_vitals.table->setItem(0, 4, new QTableWidgetItem(QStringLiteral("—")));
    for (std::size_t p = 0; p < r.parents.size(); ++p) {
        const VitalsReport::Parent& parent = r.parents[p];
        const int row = int(p) + 1;
        m_vitals.table->setItem(row, 0, new QTableWidgetItem(model::displayText(parent.label)));
        m_vitals.table->setItem(row, 1, numberItem(parent.perplexity.meanNll, 4));
        m_vitals.table->setItem(row, 2, numberItem(parent.perplexity.perplexity, 3));
        m_vitals.table->setItem(row, 3, numberItem(parent.divergence.meanKl, 4));
        auto* agrees = numberItem(100 * parent.divergence.topAgreement, 1);
        agrees->setText(agrees->text() + QStringLiteral(" %"));
        m_vitals.table->setItem(row, 4, agrees);
    }
}

void SurgeonWindow::closeEvent(QCloseEvent* event) {
    if (m_running) {
        emit cancelRequested();
    }
    QWidget::closeEvent(event);
}

} // namespace organ::widgets
