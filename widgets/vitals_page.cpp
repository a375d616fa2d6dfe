#include "vitals_page.h"

#include "display_names.h"
#include "layer_importance_chart.h"
#include "vertical_scroll.h"
#include "wrapped_label.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <qcustomplot.h>

namespace organ::widgets {
namespace {

// The chunk: 0 (automatic) or kMinVitalsChunk and more, since 1 to 3 tokens leave nothing to score.
// The arrows step over 1-3; a 1-3 typed becomes kMinVitalsChunk once the editing ends (not while
// typing: "128" passes through "1").
class ChunkSpinBox : public QSpinBox {
public:
    explicit ChunkSpinBox(QWidget* parent) : QSpinBox(parent) {
        connect(this, &QSpinBox::editingFinished, this, [this] {
            if (value() > 0 && value() < int(kMinVitalsChunk)) {
                setValue(int(kMinVitalsChunk));
            }
        });
    }
    void stepBy(int steps) override {
        const int at = value();
        if (at == 0 && steps > 0) {
            setValue(int(kMinVitalsChunk) + steps - 1);
        } else if (at <= int(kMinVitalsChunk) && at + steps < int(kMinVitalsChunk)) {
            setValue(0);
        } else {
            QSpinBox::stepBy(steps);
        }
    }
};

} // namespace

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
    // The text they are taken on, shared by every model's page and Check chimera.
    auto* text = new QHBoxLayout;
    m_text.path = new QLineEdit(this);
    m_text.path->setObjectName(QStringLiteral("vitalsText"));
    m_text.path->setPlaceholderText(tr("the built-in short stories"));
    m_text.path->setToolTip(
        tr("A text file to score (UTF-8, at most 4 MiB); empty: the built-in short stories. "
           "Every model's vital signs and Check chimera use it"));
    auto* choose = new QPushButton(tr("Choose…"), this);
    choose->setObjectName(QStringLiteral("chooseVitalsText"));
    m_text.chunk = new ChunkSpinBox(this);
    m_text.chunk->setObjectName(QStringLiteral("vitalsChunk"));
    m_text.chunk->setRange(0, int(kMaxVitalsTokens));
    m_text.chunk->setSpecialValueText(tr("automatic"));
    m_text.chunk->setSuffix(tr(" tokens"));
    m_text.chunk->setToolTip(
        tr("A text longer than the model's context is scored in pieces of this many tokens (%1 at least), "
           "the second half of each (as llama-perplexity -c). Automatic: a file whole when it fits the "
           "context, else in pieces of the context (of half the text when that is less, so that two are "
           "scored); the built-in text is cut to the context")
            .arg(kMinVitalsChunk));
    text->addWidget(new QLabel(tr("Text"), this));
    text->addWidget(m_text.path, 1);
    text->addWidget(choose);
    text->addWidget(new QLabel(tr("in chunks of"), this));
    text->addWidget(m_text.chunk);
    layout->addLayout(text);
    const auto chosen = [this] { emit textChosen(m_text.path->text().trimmed(), m_text.chunk->value()); };
    connect(m_text.path, &QLineEdit::textChanged, this, chosen); // typed: chosen, though not confirmed
    connect(m_text.chunk, &QSpinBox::valueChanged, this, chosen);
    connect(choose, &QPushButton::clicked, this, [this] {
        const QString current = m_text.path->text().trimmed();
        const QString path =
            askForText(this, current.isEmpty() ? QFileInfo(m_model).absolutePath() : current);
        if (!path.isEmpty()) {
            m_text.path->setText(path);
        }
    });
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
        new QLabel(tr("<h3>Does it live?</h3><p><b>Take vital signs</b> runs the model on a text (the "
                      "built-in short stories, or the file chosen above; on the CPU, in the background): its "
                      "perplexity, its divergence from the other open "
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
    // The vital signs shown, if any, keep saying what they were taken on.
    m_status->setText(m_report ? tr("%1\nShown still: %2").arg(message, model::afterColon(m_taken))
                               : message);
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

QString VitalsPage::askForText(QWidget* parent, const QString& start) {
    return QFileDialog::getOpenFileName(parent, tr("Text for vital signs"), start,
                                        tr("Text (*.txt);;All files (*)"));
}

void VitalsPage::showTextChoice(const QString& path, int chunk) {
    const QSignalBlocker quietPath(m_text.path);
    const QSignalBlocker quietChunk(m_text.chunk);
    if (m_text.path->text().trimmed() != path) {
        m_text.path->setText(path);
    }
    m_text.chunk->setValue(chunk);
}

void VitalsPage::setOpenModels(const QSet<QString>& labels) {
    m_open = labels;
    if (m_report) {
        m_summary->setText(summaryText());
    }
}

namespace {

// What the vital signs were taken on: "Taken on farm.txt: 2 437 tokens in chunks of 256, …".
QString takenOnText(const VitalsReport& r, const QString& text) {
    const QString on = text.isEmpty() ? VitalsPage::tr("the built-in text") : text;
    if (r.clippedFrom > 0) {
        return VitalsPage::tr(
                   "Taken on %1 tokens: the first of the built-in text's %2, as many as the model's "
                   "context holds.")
            .arg(r.tokens.size())
            .arg(r.clippedFrom);
    }
    if (r.chunk > 0) {
        return VitalsPage::tr("Taken on %1: %2 tokens in chunks of %3, %4 scored (the second half of each).")
            .arg(on)
            .arg(r.tokens.size())
            .arg(r.chunk)
            .arg(r.scored);
    }
    return VitalsPage::tr("Taken on %1 tokens of %2.").arg(r.tokens.size()).arg(on);
}

} // namespace

void VitalsPage::setReport(std::shared_ptr<const VitalsReport> report, const QString& text) {
    m_report = std::move(report);
    setIdle();
    const VitalsReport& r = *m_report;
    m_taken = takenOnText(r, text);
    m_status->setText(m_taken);
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
            const QString label = model::displayText(p.label);
            const bool closed = m_open && !m_open->contains(QString::fromStdString(p.label));
            html +=
                QStringLiteral("<tr><td>%1</td><td align=\"right\">%2</td><td align=\"right\">%3</td>"
                               "<td align=\"right\">%4</td><td align=\"right\">%5 %</td></tr>")
                    .arg(closed ? tr("%1 (closed since)").arg(label).toHtmlEscaped() : label.toHtmlEscaped(),
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
