#pragma once

#include "measure/tensor_portrait.h"

#include <QPoint>
#include <QString>
#include <cstdint>
#include <memory>
#include <optional>

class QCPColorMap;
class QCPColorScale;
class QCustomPlot;
class QMouseEvent;

namespace organ::widgets {

// The weight matrix of a tensor portrait, on a diverging scale symmetric around zero with its
// colour scale. Axes count the tensor's own rows and columns; cells are square (the matrix
// keeps its aspect ratio) unless one side is more than kMaxStretch times the other, when the
// matrix fills the chart and the caption says so. The caption says how cells were averaged,
// and the pointer reads out row, column and value.
class MatrixPlot {
public:
    static constexpr double kMaxStretch = 8.0;

    explicit MatrixPlot(QCustomPlot* plot);

    // columns × rows: the tensor as a matrix (columns = ne[0]).
    void show(std::shared_ptr<const TensorPortrait> portrait, std::uint64_t columns, std::uint64_t rows);
    void clear();

    QString caption() const { return m_caption; }
    bool keepsAspect() const { return m_keepAspect; }
    // What the pointer at `pixel` reads: "row 3, column 17: 0.0123", or empty off the matrix.
    QString readout(const QPoint& pixel) const;
    // The tensor row and column under a pixel, when on the matrix.
    std::optional<std::pair<std::uint64_t, std::uint64_t>> cellAt(const QPoint& pixel) const;
    QCPColorScale* colorScale() const { return m_scale; }

private:
    void fitAxes();

    QCustomPlot* m_plot;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    std::shared_ptr<const TensorPortrait> m_portrait;
    std::uint64_t m_columns = 0;
    std::uint64_t m_rows = 0;
    bool m_keepAspect = true;
    QString m_caption;
};

} // namespace organ::widgets
