#pragma once

#include "gguf/gguf_file.h"
#include "measure/tensor_portrait.h"
#include "measure/zmeasure.h"
#include "open_models.h"

#include <QWidget>
#include <memory>
#include <optional>

class QCheckBox;
class QCustomPlot;
class QLabel;
class QStackedWidget;

namespace organ::widgets {

class MatrixPlot;

// One tensor, seen: its indicators and θ, a histogram of its values (log scale toggle), the
// cross-scale spectrum (log2 E_j per Haar level with the fitted slope β), and an image of
// the weight matrix (averaged down to fit, diverging colours on a symmetric scale).
class TensorInspector : public QWidget {
    Q_OBJECT
public:
    // `model`: the model's display name, for the titles of exported charts.
    explicit TensorInspector(const QString& model, QWidget* parent = nullptr);

    ~TensorInspector() override;

    // A tensor was selected: shows its name at once, the rest when it arrives.
    void showTensor(int tensor, const TensorInfo& info);
    // The indicators and spectrum show the selected tensor's result in `results` (the model's,
    // stored in OpenModels; null: none) and follow it.
    void setResults(const model::TensorResults* results);
    void setPortrait(int tensor, std::shared_ptr<const TensorPortrait> portrait);
    int tensor() const { return m_tensor; }
    bool hasPortrait() const { return m_portrait != nullptr; }
    QString indicatorsText() const;
    QCustomPlot* histogramPlot() const { return m_histogram; }
    QCustomPlot* spectrumPlot() const { return m_spectrum; }
    QCustomPlot* imagePlot() const { return m_image; }
    QCheckBox* logScale() const { return m_logScale; }
    MatrixPlot* matrix() const { return m_matrix.get(); }
    QString matrixCaption() const; // how the matrix was averaged, whether it keeps its aspect
    bool isEmptyShown() const;     // no tensor yet: the page that says how to choose one

private:
    QCustomPlot* makePlot(const QString& title, const QString& fileSuffix);
    void drawHistogram();
    void drawSpectrum();
    void drawImage();
    const std::optional<ZResult>& result() const;
    void resultChanged();

    QString m_model;
    std::uint64_t m_columns = 0;
    std::uint64_t m_rows = 0;
    QString m_name;
    int m_tensor = -1;
    const model::TensorResults* m_results = nullptr;
    std::shared_ptr<const TensorPortrait> m_portrait;
    QLabel* m_title = nullptr;
    QLabel* m_indicators = nullptr;
    QCheckBox* m_logScale = nullptr;
    QCustomPlot* m_histogram = nullptr;
    QCustomPlot* m_spectrum = nullptr;
    QCustomPlot* m_image = nullptr;
    std::unique_ptr<MatrixPlot> m_matrix;
    QLabel* m_matrixCaption = nullptr;
    QStackedWidget* m_pages = nullptr;
    QLabel* m_empty = nullptr;
};

} // namespace organ::widgets
