#include "vitals_page.h"

#include "display_names.h"
#include "layer_importance_chart.h"
#include "vertical_scroll.h"
#include "wrapped_label.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <qcustomplot.h>

namespace organ::widgets {
VitalsPage::VitalsPage(const QString& model, QWidget* parent) : QWidget(parent), m_model(model) {
    setObjectName(QStringLiteral("vitalsPage"));
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    m_take = new QPushButton(tr("Take vital signs"), this);
    m_take->setObjectName(QStringLiteral("takeVitals"));
    m_take->setToolTip(
        tr("Run the model on a text (on the engine thread): perplexity, divergence from the other "
           "open models, layer importance and a sample of its text"));
    connect(m_take, &QPushButton::clicked, this, [this] {
        if (m_running) {
            emit cancelRequested();
        } else {
            emit takeRequested();
        }
    });
    m_status = wrappedLabel(this, QStringLiteral("vitalsStatus"));
    m_status->setText(tr("Not taken yet."));
    top->addWidget(m_take);
    top->addWidget(m_status, 1);
    layout->addLayout(top);
    // What the run found scrolls between the buttons: a long comparison table or sample never
    // makes the page (and so the window) taller.
    auto* body = new QWidget(this);
    auto* bodyLayout = new QVBoxLayout(body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    m_summary = wrappedLabel(body, QStringLiteral("vitalsSummary"), Qt::AutoText, true);
    bodyLayout->addWidget(m_summary);

    m_chart = new LayerImportanceChart(m_model, body);
    m_chart->setMinimumHeight(220);
    bodyLayout->addWidget(m_chart, 1);
    m_chart->hide(); // until there is something to draw
    m_empty =
        new QLabel(tr("<h3>Does it live?</h3><p><b>Take vital signs</b> runs the model on a short text "
                      "(on the CPU, in the background): its perplexity, its divergence from the other open "
                      "models that share its vocabulary, a sample of its text, and how much each layer "
                      "changes the hidden state — the layers that change it least are the ones a "
                      "pruning would remove first.</p>"),
                   body);
    m_empty->setWordWrap(true);
    m_empty->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    bodyLayout->addWidget(m_empty, 1);
    layout->addWidget(verticalScroll(body, this, QStringLiteral("vitalsScroll")), 1);

    auto* suggest = new QHBoxLayout;
    m_removal.blockSize = new QSpinBox(this);
    m_removal.blockSize->setObjectName(QStringLiteral("removalBlockSize"));
    m_removal.blockSize->setRange(1, 1);
    m_removal.blockSize->setSuffix(tr(" layer(s)"));
    m_removal.suggest = new QPushButton(tr("Suggest layers to remove"), this);
    m_removal.suggest->setObjectName(QStringLiteral("suggestRemoval"));
    m_removal.suggest->setToolTip(
        tr("Plans the removal of the consecutive layers whose input and output are closest "
           "(Gromov et al.); Check chimera then shows what it costs"));
    m_removal.suggestion = wrappedLabel(this, QStringLiteral("removalSuggestion"));
    suggest->addWidget(m_removal.blockSize);
    suggest->addWidget(m_removal.suggest);
    suggest->addWidget(m_removal.suggestion, 1);
    layout->addLayout(suggest);
    connect(m_removal.blockSize, &QSpinBox::valueChanged, this, &VitalsPage::updateSuggestion);
    connect(m_removal.suggest, &QPushButton::clicked, this, [this] {
        const std::size_t n = std::size_t(m_removal.blockSize->value());
        const VitalsReport* source = suggestionSource();
        if (source != nullptr && n >= 1 && n <= source->importance.cheapest.size()) {
            emit removeLayersRequested(source->importance.cheapest[n - 1].first, std::uint32_t(n));
        }
    });
    updateSuggestion();
}

void VitalsPage::setRunning(const QString& text) {
    m_running = true;
    m_take->setText(tr("Cancel"));
    m_status->setText(text);
}

void VitalsPage::setIdle() {
    m_running = false;
    m_take->setText(tr("Take vital signs"));
}

void VitalsPage::setProgress(const QString& text) {
    m_status->setText(text);
}

void VitalsPage::setFailed(const QString& message) {
    setIdle();
    m_status->setText(message);
}

void VitalsPage::setCanPlanRemoval(bool on) {
    m_canPlanRemoval = on;
    updateSuggestion();
}

void VitalsPage::setPlannedChimera(bool planned, std::shared_ptr<const VitalsReport> chimera) {
    m_planned = planned;
    m_chimera = std::move(chimera);
    updateSuggestion();
}

// What removals are suggested from: the model's own vital signs, or the planned chimera's.
const VitalsReport* VitalsPage::suggestionSource() const {
    return m_planned && m_canPlanRemoval ? m_chimera.get() : m_report.get();
}

void VitalsPage::setReport(std::shared_ptr<const VitalsReport> report) {
    m_report = std::move(report);
    setIdle();
    const VitalsReport& r = *m_report;
    m_status->setText(r.clippedFrom > 0 ? tr("Taken on %1 tokens: the first of the built-in text's %2, as "
                                             "many as the model's context holds.")
                                              .arg(r.tokens.size())
                                              .arg(r.clippedFrom)
                                        : tr("Taken on %1 tokens.").arg(r.tokens.size()));
    m_summary->setText(summaryText());
    m_chart->setImportance(r.importance);
    m_empty->hide();
    m_chart->show();
    updateSuggestion();
}

QString VitalsPage::summaryText() const {
    if (!m_report) {
        return {};
    }
    const VitalsReport& r = *m_report;
    QString html = tr("<b>Perplexity %1</b> &nbsp;(mean NLL %2 nats)")
                       .arg(model::finiteNumber(r.perplexity.perplexity, 3),
                            model::finiteNumber(r.perplexity.meanNll, 4));
    if (r.parents.empty()) {
        html += tr("<br>No other open model shares its vocabulary: no divergence to show.");
    } else {
        html +=
            QStringLiteral("<table cellspacing=\"8\"><tr><th align=\"left\">%1</th><th>%2</th><th>%3</th>"
                           "<th>%4</th><th>%5</th></tr>")
                .arg(tr("against"), tr("its perplexity"), tr("KL mean"), tr("KL p99"), tr("top-1 agrees"));
        for (const auto& p : r.parents) {
            html += QStringLiteral("<tr><td>%1</td><td align=\"right\">%2</td><td align=\"right\">%3</td>"
                                   "<td align=\"right\">%4</td><td align=\"right\">%5 %</td></tr>")
                        .arg(model::displayText(p.label).toHtmlEscaped(),
                             model::finiteNumber(p.perplexity.perplexity, 3),
                             model::finiteNumber(p.divergence.meanKl, 4),
                             model::finiteNumber(p.divergence.p99Kl, 4),
                             model::finiteNumber(100 * p.divergence.topAgreement, 1));
        }
        html += QStringLiteral("</table>");
    }
    html += model::sampleHtml(r.prompt, r.continuation);
    return html;
}

void VitalsPage::updateSuggestion() {
    const VitalsReport* source = suggestionSource();
    const bool chimera = m_planned && m_canPlanRemoval;
    const int blocks = source != nullptr ? int(source->importance.cheapest.size()) : 0;
    {
        const QSignalBlocker quiet(m_removal.blockSize); // the range may clamp the value: no second update
        m_removal.blockSize->setRange(1, std::max(1, blocks));
    }
    const std::size_t n = std::size_t(m_removal.blockSize->value());
    const bool known = source != nullptr && n >= 1 && n <= std::size_t(blocks);
    m_removal.suggest->setEnabled(known && m_canPlanRemoval);
    m_removal.blockSize->setEnabled(known);
    if (!known) {
        m_removal.suggestion->setText(source != nullptr ? tr("The model has too few layers to remove any.")
                                      : chimera
                                          ? tr("The plan changes this model: Check chimera, and layers are "
                                               "suggested from the planned chimera.")
                                          : tr("Take the vital signs first."));
        return;
    }
    const auto& b = source->importance.cheapest[n - 1];
    const QString where = chimera ? tr("least needed in the planned chimera") : tr("least needed");
    m_removal.suggestion->setText(
        n == 1 ? tr("%1: layer %2 (distance %3)").arg(where).arg(b.first).arg(b.distance, 0, 'f', 3)
               : tr("%1: layers %2–%3 (distance %4)")
                     .arg(where)
                     .arg(b.first)
                     .arg(b.first + n - 1)
                     .arg(b.distance, 0, 'f', 3));
    if (!m_canPlanRemoval) {
        m_removal.suggestion->setText(m_removal.suggestion->text() +
                                      tr(" — plans are made on the recipient"));
    }
}

} // namespace organ::widgets
