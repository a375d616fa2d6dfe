#include "quant_lab_page.h"

#include "display_names.h"
#include "pareto_chart.h"
#include "path_row.h"
#include "quant_lab_charts.h"
#include "vertical_scroll.h"
#include "wrapped_label.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

namespace organ::widgets {
QuantLabPage::QuantLabPage(const QString& model, const QString& path, QWidget* parent)
    : QWidget(parent), m_model(model) {
    setObjectName(QStringLiteral("quantLabPage"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    const QString folder = QFileInfo(path).absolutePath();
    m_inputs.imatrix = new QLineEdit(this);
    m_inputs.imatrix->setObjectName(QStringLiteral("quantLabImatrix"));
    m_inputs.imatrix->setPlaceholderText(tr("none: every tensor quantized without one"));
    auto* chooseMatrix = new QPushButton(tr("Choose…"), this);
    form->addRow(tr("Importance matrix"),
                 pathRow(m_inputs.imatrix, chooseMatrix, [this, folder](const QString& current) {
                     return QFileDialog::getOpenFileName(
                         this, tr("Importance matrix"), current.isEmpty() ? folder : current,
                         tr("Importance matrices (*.gguf *.dat);;All files (*)"));
                 }));
    m_inputs.text = new QLineEdit(this);
    m_inputs.text->setObjectName(QStringLiteral("quantLabText"));
    m_inputs.text->setPlaceholderText(tr("the built-in text of vital signs"));
    auto* chooseText = new QPushButton(tr("Choose…"), this);
    form->addRow(
        tr("Text for KL"), pathRow(m_inputs.text, chooseText, [this, folder](const QString& current) {
            return QFileDialog::getOpenFileName(this, tr("Text"), current.isEmpty() ? folder : current,
                                                tr("Text (*.txt);;All files (*)"));
        }));
    m_inputs.chunk = new QSpinBox(this);
    m_inputs.chunk->setObjectName(QStringLiteral("quantLabChunk"));
    m_inputs.chunk->setRange(0, 1 << 16);
    m_inputs.chunk->setSpecialValueText(tr("the text whole (the built-in text cut to the model's context)"));
    m_inputs.chunk->setSuffix(tr(" tokens"));
    m_inputs.chunk->setToolTip(
        tr("A text longer than the model's context runs in pieces of this many tokens, the second "
           "half of each scored (as llama-perplexity -c)"));
    form->addRow(tr("In chunks of"), m_inputs.chunk);
    m_inputs.grouping = new QComboBox(this);
    m_inputs.grouping->setObjectName(QStringLiteral("quantLabGroups"));
    m_inputs.grouping->addItem(tr("each tensor alone (best mixes, slowest)"), int(QuantGrouping::Tensor));
    m_inputs.grouping->addItem(tr("each layer's tensors together"), int(QuantGrouping::Layer));
    m_inputs.grouping->addItem(tr("each role across the layers (fastest)"), int(QuantGrouping::Role));
    form->addRow(tr("Mixes choose a type for"), m_inputs.grouping);
    layout->addLayout(form);

    auto* errors = new QHBoxLayout;
    addRun(Run::Errors, errors, tr("Measure errors"), QStringLiteral("measureQuantErrors"),
           tr("Quantize every tensor to every candidate type in memory (on the engine thread) and compare it "
              "with its values: nothing is written"),
           tr("Not measured yet."));
    m_type = new QComboBox(this);
    m_type->setObjectName(QStringLiteral("quantLabType"));
    m_type->setToolTip(tr("The type the heatmap shows"));
    m_metric = new QComboBox(this);
    m_metric->setObjectName(QStringLiteral("quantLabMetric"));
    m_type->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_metric->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    errors->insertWidget(1, m_type);
    errors->insertWidget(2, m_metric);
    layout->addLayout(errors);
    auto* pareto = new QHBoxLayout;
    addRun(
        Run::Pareto, pareto, tr("Find mixes"), QStringLiteral("findQuantMixes"),
        tr("Measure how much the model minds each group quantized (KL divergence on the text), then choose "
           "the best mix at a sweep of sizes and compare llama-quantize's mixes"),
        tr("Not run yet."));
    layout->addLayout(pareto);

    auto* body = new QWidget(this);
    auto* bodyLayout = new QVBoxLayout(body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    m_empty = new QLabel(
        tr("<h3>What does quantization cost this model?</h3><p><b>Measure errors</b> quantizes each tensor "
           "to "
           "each candidate type (Q2_K … Q8_0, IQ4_NL, IQ4_XS, F16) in memory: its error per layer and role, "
           "and bits per weight against the error per system.</p><p><b>Find mixes</b> runs the model with "
           "one "
           "group at a time quantized and measures how far it moves (KL divergence on the text), then "
           "chooses a type per group to make the least predicted KL at each size, beside llama-quantize's "
           "Q3_K_M, Q4_K_M, Q5_K_M and Q6_K measured the same way. On the recipient, a click on a point "
           "plans that mix; <b>Assemble</b> writes it.</p>"),
        body);
    m_empty->setWordWrap(true);
    m_empty->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    bodyLayout->addWidget(m_empty);
    m_charts.heatmap = new QuantErrorHeatmap(m_model, body);
    m_charts.systems = new QuantSystemChart(m_model, body);
    m_charts.pareto = new ParetoChart(m_model, body);
    for (QWidget* chart : {static_cast<QWidget*>(m_charts.heatmap), static_cast<QWidget*>(m_charts.systems),
                           static_cast<QWidget*>(m_charts.pareto)}) {
        chart->setMinimumHeight(320);
        chart->hide(); // until there is something to draw
        chart->installEventFilter(this);
        bodyLayout->addWidget(chart);
    }
    m_planNote = wrappedLabel(body, QStringLiteral("paretoPlanNote"));
    m_planNote->hide();
    bodyLayout->addWidget(m_planNote);
    m_summary = wrappedLabel(body, QStringLiteral("paretoSummary"), Qt::RichText, true);
    bodyLayout->addWidget(m_summary);
    bodyLayout->addStretch(1);
    m_scroll = verticalScroll(body, this, QStringLiteral("quantLabScroll"));
    layout->addWidget(m_scroll, 1);

    connect(m_type, &QComboBox::currentIndexChanged, this, &QuantLabPage::showErrors);
    connect(m_metric, &QComboBox::currentIndexChanged, this, &QuantLabPage::showErrors);
    connect(m_charts.pareto, &ParetoChart::pointChosen, this, &QuantLabPage::mixChosen);
    m_type->setEnabled(false);
    m_metric->setEnabled(false);
}

QString QuantLabPage::imatrixPath() const {
    return m_inputs.imatrix->text().trimmed();
}

QString QuantLabPage::textPath() const {
    return m_inputs.text->text().trimmed();
}

// The charts take no wheel (they neither zoom nor scroll): the page scrolls under the pointer.
bool QuantLabPage::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Wheel) {
        QCoreApplication::sendEvent(m_scroll->verticalScrollBar(), event);
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

std::size_t QuantLabPage::chunk() const {
    return std::size_t(m_inputs.chunk->value());
}

QuantGrouping QuantLabPage::grouping() const {
    return static_cast<QuantGrouping>(m_inputs.grouping->currentData().toInt());
}

void QuantLabPage::addRun(Run run, QBoxLayout* layout, const QString& text, const QString& name,
                          const QString& tip, const QString& status) {
    RunControls& controls = m_runs[int(run)];
    controls.idle = text;
    controls.button = new QPushButton(text, this);
    controls.button->setObjectName(name);
    controls.button->setToolTip(tip);
    controls.status = wrappedLabel(this, name + QStringLiteral("Status"));
    controls.status->setText(status);
    layout->addWidget(controls.button);
    layout->addWidget(controls.status, 1);
    connect(controls.button, &QPushButton::clicked, this, [this, run] {
        if (isRunning(run)) {
            emit cancelRequested(run);
        } else {
            emit runRequested(run);
        }
    });
}

void QuantLabPage::setRunning(Run run, const QString& text) {
    RunControls& controls = m_runs[int(run)];
    controls.running = true;
    controls.button->setText(tr("Cancel"));
    controls.status->setText(text);
}

void QuantLabPage::setProgress(Run run, const QString& text) {
    m_runs[int(run)].status->setText(text);
}

void QuantLabPage::setIdle(Run run, const QString& message) {
    RunControls& controls = m_runs[int(run)];
    controls.running = false;
    controls.button->setText(controls.idle);
    controls.status->setText(message);
}

void QuantLabPage::setErrorReport(std::shared_ptr<const QuantErrorReport> report) {
    m_errors = std::move(report);
    setIdle(Run::Errors,
            tr("%1 in %2 types%3.")
                .arg(model::countOf(qint64(m_errors->tensors.size()), tr("tensor"), tr("tensors")))
                .arg(m_errors->types.size())
                .arg(m_errors->importance ? tr(", with the importance matrix") : QString()));
    {
        const QSignalBlocker quietType(m_type);
        const QSignalBlocker quietMetric(m_metric);
        const QString previous = m_type->currentText();
        m_type->clear();
        for (TensorType type : m_errors->types) {
            m_type->addItem(QString::fromUtf8(tensorTypeName(type)), int(type));
        }
        const int keep = m_type->findText(previous.isEmpty() ? QStringLiteral("Q4_K") : previous);
        m_type->setCurrentIndex(std::max(keep, 0));
        const QVariant metric = m_metric->currentData();
        m_metric->clear();
        for (QuantMetric m : {QuantMetric::RelativeRms, QuantMetric::WeightedRms, QuantMetric::CosineLoss,
                              QuantMetric::Theta}) {
            if (m != QuantMetric::WeightedRms || m_errors->importance) {
                m_metric->addItem(quantMetricName(m), int(m));
            }
        }
        m_metric->setCurrentIndex(std::max(m_metric->findData(metric), 0));
    }
    m_type->setEnabled(true);
    m_metric->setEnabled(true);
    m_charts.heatmap->setReport(m_errors);
    m_empty->hide();
    m_charts.heatmap->show();
    m_charts.systems->show();
    showErrors();
}

void QuantLabPage::showErrors() {
    if (!m_errors || m_type->count() == 0) {
        return;
    }
    const auto metric = static_cast<QuantMetric>(m_metric->currentData().toInt());
    m_charts.heatmap->showType(static_cast<TensorType>(m_type->currentData().toInt()), metric);
    m_charts.systems->setReport(m_errors, metric);
}

void QuantLabPage::setParetoReport(std::shared_ptr<const ParetoReport> report, bool reused) {
    m_pareto = std::move(report);
    const SensitivityReport& s = m_pareto->sensitivity;
    setIdle(Run::Pareto, tr("%1 groups × %2 types on %3 tokens (%4 scored).")
                             .arg(s.groups.size())
                             .arg(s.types.size())
                             .arg(s.tokens)
                             .arg(s.scored));
    m_charts.pareto->setReport(m_pareto);
    m_summary->setText(summaryText(reused));
    m_empty->hide();
    m_charts.pareto->show();
    setCanPlan(m_canPlan, m_planWhy);
}

void QuantLabPage::setCanPlan(bool on, const QString& why) {
    m_canPlan = on;
    m_planWhy = why;
    m_charts.pareto->setChoosable(on);
    m_planNote->setVisible(m_pareto != nullptr);
    m_planNote->setText(
        on ? tr("Click a point to make it the plan's quantize operation (Edit → Undo takes it "
                "back); Graft → Assemble writes it.")
           : why);
}

QString QuantLabPage::summaryText(bool reused) const {
    const ParetoReport& r = *m_pareto;
    const SensitivityReport& s = r.sensitivity;
    double groupSeconds = 0;
    for (const GroupSensitivity& g : s.groups) {
        groupSeconds += g.seconds;
    }
    QString html =
        reused ? tr("The model's own run on the text was kept from the last run (perplexity %1).")
                     .arg(model::finiteNumber(s.perplexity, 4))
               : tr("The model's own run on the text: %1 s (perplexity %2).")
                     .arg(model::finiteNumber(s.referenceSeconds, 1), model::finiteNumber(s.perplexity, 4));
    html += tr(" The groups quantized one at a time: %1 s; the mixes measured: %2 s.")
                .arg(model::finiteNumber(groupSeconds, 1), model::finiteNumber(r.mixSeconds, 1));
    html += QStringLiteral("<table cellspacing=\"6\"><tr><th align=\"left\">%1</th><th>%2</th><th>%3</th>"
                           "<th>%4</th><th>%5</th></tr>")
                .arg(tr("mix"), tr("bits per weight"), tr("predicted KL"), tr("measured KL"), tr("top-1"));
    const auto row = [&html](const QString& name, const ParetoPoint& p) {
        html += QStringLiteral("<tr><td>%1</td><td align=\"right\">%2</td><td align=\"right\">%3</td>"
                               "<td align=\"right\">%4</td><td align=\"right\">%5</td></tr>")
                    .arg(name.toHtmlEscaped(), model::finiteNumber(p.size.bitsPerWeight(), 4),
                         p.predictedKl ? model::finiteNumber(*p.predictedKl, 5) : tr("—"),
                         p.measured ? model::finiteNumber(p.measured->klMean, 5) : tr("—"),
                         p.measured
                             ? model::finiteNumber(100 * p.measured->topAgreement, 1) + QStringLiteral(" %")
                             : tr("—"));
    };
    for (const ParetoPoint& p : r.references) {
        row(tr("llama-quantize %1").arg(QString::fromStdString(p.label)), p);
        for (const ParetoPoint& m : r.mixes) {
            if (m.label == p.label + "'s size") {
                row(tr("budget mix at its size"), m);
            }
        }
    }
    html += QStringLiteral("</table>");
    return html;
}

} // namespace organ::widgets
