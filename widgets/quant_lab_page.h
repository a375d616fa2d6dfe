#pragma once

#include "measure/quant_error.h"
#include "vitals/quant_pareto.h"

#include <QWidget>
#include <memory>

class QBoxLayout;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSpinBox;

namespace organ::widgets {

class ParetoChart;
class QuantErrorHeatmap;
class QuantSystemChart;

// A model's quantization lab (organ quantize --report and --target-bpw, in the window): what each
// tensor loses in each candidate type (a heatmap of one type's error per layer and role, and bits
// per weight against the error per system), and bits per weight against KL divergence for
// llama-quantize's mixes and budget mixes (a Pareto chart from a sensitivity run on a text). Both
// run on the engine thread; each button cancels its run. On the recipient, a click on the Pareto
// chart plans that mix as the plan's quantize operation.
class QuantLabPage : public QWidget {
    Q_OBJECT
public:
    QuantLabPage(const QString& model, const QString& path, QWidget* parent = nullptr);

    // The inputs: the importance matrix (empty: none), the text (empty: vital signs' built-in
    // text), the sensitivity's grouping.
    QString imatrixPath() const;
    QString textPath() const;
    QuantGrouping grouping() const;
    // Tokens per piece of the text (as organ vitals --chunk); 0: the text whole.
    std::size_t chunk() const;

    // The page's two runs, each a job whose button cancels it while it runs.
    enum class Run { Errors, Pareto };
    void setRunning(Run run, const QString& text);
    bool isRunning(Run run) const { return m_runs[int(run)].running; }
    void setProgress(Run run, const QString& text);
    // It ended: the button starts it again, the status says what it found or why it did not.
    void setIdle(Run run, const QString& message);
    QPushButton* button(Run run) const { return m_runs[int(run)].button; }

    void setErrorReport(std::shared_ptr<const QuantErrorReport> report);
    const QuantErrorReport* errorReport() const { return m_errors.get(); }
    // `reused`: the model's own run on the text was kept from an earlier run.
    void setParetoReport(std::shared_ptr<const ParetoReport> report, bool reused);
    const ParetoReport* paretoReport() const { return m_pareto.get(); }
    // Only the recipient's plan takes a mix; `why` says so on another model.
    void setCanPlan(bool on, const QString& why);

    QComboBox* typeBox() const { return m_type; }
    QComboBox* metricBox() const { return m_metric; }
    QLineEdit* imatrixEdit() const { return m_inputs.imatrix; }
    QLineEdit* textEdit() const { return m_inputs.text; }
    QComboBox* groupingBox() const { return m_inputs.grouping; }
    QSpinBox* chunkBox() const { return m_inputs.chunk; }
    QuantErrorHeatmap* heatmap() const { return m_charts.heatmap; }
    QuantSystemChart* systemChart() const { return m_charts.systems; }
    ParetoChart* paretoChart() const { return m_charts.pareto; }
    QLabel* paretoSummary() const { return m_summary; }
    QLabel* planNote() const { return m_planNote; }

signals:
    void runRequested(organ::widgets::QuantLabPage::Run run);
    void cancelRequested(organ::widgets::QuantLabPage::Run run);
    void mixChosen(const organ::ParetoPoint& point);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void showErrors();
    void addRun(Run run, QBoxLayout* layout, const QString& text, const QString& name, const QString& tip,
                const QString& status);
    QString summaryText(bool reused) const;

    QString m_model;
    std::shared_ptr<const QuantErrorReport> m_errors;
    std::shared_ptr<const ParetoReport> m_pareto;
    QComboBox* m_type = nullptr;
    QComboBox* m_metric = nullptr;
    // What a sweep runs on.
    struct Inputs {
        QLineEdit* imatrix{};
        QLineEdit* text{};
        QComboBox* grouping{};
        QSpinBox* chunk{};
    } m_inputs;
    // What a run draws in.
    struct Charts {
        QuantErrorHeatmap* heatmap{};
        QuantSystemChart* systems{};
        ParetoChart* pareto{};
    } m_charts;
    QLabel* m_summary = nullptr;
    QLabel* m_planNote = nullptr;
    QLabel* m_empty = nullptr;
    QScrollArea* m_scroll = nullptr;
    struct RunControls {
        QPushButton* button{};
        QLabel* status{};
        QString idle; // the button's text while it does not run
        bool running{};
    };
    RunControls m_runs[2];
    bool m_canPlan = false;
    QString m_planWhy;
};

} // namespace organ::widgets
