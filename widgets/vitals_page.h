#pragma once

#include "vitals/vitals_report.h"

#include <QSet>
#include <QWidget>
#include <memory>
#include <optional>

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace organ::widgets {

class LayerImportanceChart;

// A model's vital signs (organ vitals, in the window): a button that takes them on the engine
// thread, then perplexity, KL divergence and top-1 agreement against the other open models
// with its vocabulary, a greedy continuation, and layer importance as a chart (angular
// distance and block influence per layer). On the recipient, "Suggest layers to remove"
// plans the removal of the n consecutive layers the distance says matter least.
class VitalsPage : public QWidget {
    Q_OBJECT
public:
    VitalsPage(const QString& model, QWidget* parent = nullptr);

    // A job runs: the button cancels it, the text says what runs.
    void setRunning(const QString& text);
    bool isRunning() const { return m_running; }
    void setProgress(const QString& text);
    void setFailed(const QString& message);
    // `text`: the file name of the text it was taken on (empty: the built-in text).
    void setReport(std::shared_ptr<const VitalsReport> report, const QString& text = {});
    // The text vital signs are taken on (empty: the built-in text) and its chunk (0: the text whole,
    // or in chunks of the model's context when it is longer), as chosen on any page.
    void showTextChoice(const QString& path, int chunk);
    // Asks for a text file to score, starting at `start` (a file or a folder): its path, or empty.
    static QString askForText(QWidget* parent, const QString& start);
    QLineEdit* textPath() const { return m_text.path; }
    QSpinBox* textChunk() const { return m_text.chunk; }
    // The models open now (their labels): a parent of the report shown that is no longer open is
    // said to be closed.
    void setOpenModels(const QSet<QString>& labels);
    const VitalsReport* report() const { return m_report.get(); }
    // Layer removal is offered on the recipient only.
    void setCanPlanRemoval(bool on);
    // A plan changes this recipient: layers to remove are suggested from the planned chimera's
    // vital signs (Check chimera), null until the plan as it stands is checked.
    void setPlannedChimera(bool planned, std::shared_ptr<const VitalsReport> chimera);

    QPushButton* takeButton() const { return m_take; }
    QPushButton* suggestButton() const { return m_removal.suggest; }
    QSpinBox* blockSize() const { return m_removal.blockSize; }
    LayerImportanceChart* chart() const { return m_chart; }
    QString summaryText() const;

signals:
    void takeRequested();
    void cancelRequested();
    // The user chose the text (a path; empty: the built-in text) or its chunk.
    void textChosen(const QString& path, int chunk);
    // Remove `count` layers from `first`: the cheapest block of that size.
    void removeLayersRequested(std::uint32_t first, std::uint32_t count);

private:
    // "Suggest layers to remove": how many, the button, and what it suggests.
    struct RemovalControls {
        QSpinBox* blockSize = nullptr;
        QPushButton* suggest = nullptr;
        QLabel* suggestion = nullptr;
    };

    // The text's path and its chunk.
    struct TextControls {
        QLineEdit* path = nullptr;
        QSpinBox* chunk = nullptr;
    };

    void setIdle();
    void updateSuggestion();
    const VitalsReport* suggestionSource() const;

    QString m_model;
    std::shared_ptr<const VitalsReport> m_report;
    QString m_taken;                     // what it was taken on ("Taken on farm.txt: …")
    std::optional<QSet<QString>> m_open; // the labels of the models open now, once told
    TextControls m_text;
    QPushButton* m_take = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_summary = nullptr;
    LayerImportanceChart* m_chart = nullptr;
    RemovalControls m_removal;
    QLabel* m_empty = nullptr;
    bool m_canPlanRemoval = false;
    bool m_running = false;
    bool m_planned = false;                        // a plan changes this recipient
    std::shared_ptr<const VitalsReport> m_chimera; // the planned chimera's, once checked
};

} // namespace organ::widgets
