#pragma once

#include "gguf/gguf_file.h"
#include "measure/spectral.h"
#include "measure/tensor_portrait.h"
#include "measure/zmeasure.h"
#include "open_models.h"

#include <QWidget>
#include <memory>
#include <optional>

class QCheckBox;
class QGridLayout;
class QCustomPlot;
class QLabel;
class QStackedWidget;

namespace organ::widgets {

class MatrixPlot;

// One tensor, seen: its indicators and θ, a histogram of its values (log scale toggle), the
// cross-scale spectrum (log2 E_j per Haar level with the fitted slope β), and an image of
// the weight matrix (averaged down to fit, diverging colours on a symmetric scale) and, for a
// weight matrix, its eigenvalue spectrum with the fitted power-law tail (spectral v1). A partner
// inspector beside it shows another model's tensor of the same name (a diff's row).
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
    // The eigenvalues λ of the tensor's matrix (ascending, as measure/spectral gives them) and
    // their fit; `what` names the matrix ("expert 0 of 8"; empty for a 2-D tensor).
    void setEigenvalues(int tensor, std::shared_ptr<const std::vector<double>> lambda, const SpectralFit& fit,
                        const QString& what);
    // No spectrum to show, and why ("computing…", "1-D: no spectrum", "cancelled").
    void setEigenvalueNote(int tensor, const QString& note);
    QString eigenvalueCaption() const;
    const std::vector<double>* eigenvalues() const { return m_lambda.get(); }
    QCustomPlot* eigenvaluePlot() const { return m_eigen; }
    // Another model's tensor beside this one (created on first use), or none (`show` false). With
    // a partner, both titles name their model.
    TensorInspector* partner();
    void showPartner(bool show);
    bool hasPartnerShown() const;
    void setModelName(const QString& model) { m_model = model; }
    QString titleText() const;
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
    void drawEigenvalues();
    void setNamed(bool named);
    // The charts two a row (alone) or one a row (with a partner beside).
    void arrangeCharts(bool oneColumn);
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
    QGridLayout* m_grid = nullptr;
    QCustomPlot* m_eigen = nullptr;
    QLabel* m_eigenCaption = nullptr;
    std::shared_ptr<const std::vector<double>> m_lambda;
    SpectralFit m_fit;
    QString m_matrixWhat;
    bool m_named = false; // the title names the model
    QString m_typeShape;
    TensorInspector* m_partner = nullptr;
    QStackedWidget* m_pages = nullptr;
    QLabel* m_empty = nullptr;
};

} // namespace organ::widgets
