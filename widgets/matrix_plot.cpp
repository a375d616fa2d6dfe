#include "matrix_plot.h"

#include "theta_scale.h"

#include <QCoreApplication>
#include <QLocale>
#include <cmath>
#include <qcustomplot.h>

namespace organ::widgets {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("organ::widgets::MatrixPlot", text);
}

QString number(std::uint64_t n) {
    return QLocale().toString(qulonglong(n));
}

} // namespace

MatrixPlot::MatrixPlot(QCustomPlot* plot) : m_plot(plot) {
    m_scale = new QCPColorScale(plot);
    m_scale->setVisible(false);
    m_scale->axis()->setLabel(tr("value (cell mean)"));
    plot->plotLayout()->addElement(1, 1, m_scale);
    auto* margins = new QCPMarginGroup(plot);
    plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    plot->yAxis->setRangeReversed(true); // row 0 on top, as a matrix is written
    plot->xAxis->setLabel(tr("column (ne[0])"));
    plot->yAxis->setLabel(tr("row"));
    // The axes are fitted once the layout knows the axis rect's size, before every draw.
    QObject::connect(plot, &QCustomPlot::afterLayout, plot, [this] { fitAxes(); });
}

void MatrixPlot::clear() {
    if (m_map != nullptr) {
        m_plot->removePlottable(m_map);
        m_map = nullptr;
    }
    m_portrait.reset();
    m_scale->setVisible(false);
    m_caption.clear();
}

void MatrixPlot::show(std::shared_ptr<const TensorPortrait> portrait, std::uint64_t columns,
                      std::uint64_t rows) {
    clear();
    if (!portrait || portrait->image.empty() || columns == 0 || rows == 0) {
        return;
    }
    m_portrait = std::move(portrait);
    m_columns = columns;
    m_rows = rows;
    const int cellColumns = static_cast<int>(m_portrait->imageColumns);
    const int cellRows = static_cast<int>(m_portrait->imageRows);
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->data()->setSize(cellColumns, cellRows);
    // Cell centres in the tensor's own coordinates: column 0 … columns − 1.
    const double cw = double(columns) / cellColumns;
    const double ch = double(rows) / cellRows;
    m_map->data()->setRange(QCPRange(0.5 * cw - 0.5, columns - 0.5 * cw - 0.5),
                            QCPRange(0.5 * ch - 0.5, rows - 0.5 * ch - 0.5));
    for (int r = 0; r < cellRows; ++r) {
        for (int c = 0; c < cellColumns; ++c) {
            m_map->data()->setCell(c, r, m_portrait->image[static_cast<std::size_t>(r) * cellColumns + c]);
        }
    }
    QCPColorGradient diverging = divergingGradient(QColor(0xf7, 0xf7, 0xf7));
    diverging.setNanHandling(QCPColorGradient::nhNanColor);
    diverging.setNanColor(Qt::black);
    m_map->setInterpolate(false);
    // Attached first: a colour scale hands its gradient and range to the maps it holds.
    m_map->setColorScale(m_scale);
    m_map->setGradient(diverging);
    const double limit = m_portrait->imageAbsMax > 0 ? m_portrait->imageAbsMax : 1.0;
    m_map->setDataRange(QCPRange(-limit, limit)); // symmetric: white is zero
    m_scale->setVisible(true);
    const double stretch = double(std::max(columns, rows)) / double(std::min(columns, rows));
    m_keepAspect = stretch <= kMaxStretch;
    const std::uint64_t perColumn = (columns + cellColumns - 1) / cellColumns;
    const std::uint64_t perRow = (rows + cellRows - 1) / cellRows;
    m_caption = tr("%1 rows × %2 columns").arg(number(rows), number(columns));
    m_caption += perColumn * perRow > 1
                     ? tr("; each cell the mean of up to %1 × %2 values").arg(perRow).arg(perColumn)
                     : tr("; every value shown");
    if (!m_keepAspect) {
        m_caption += tr("; stretched to fit (%1 : 1)").arg(stretch, 0, 'f', 0);
    }
}

void MatrixPlot::fitAxes() {
    if (!m_portrait) {
        return;
    }
    const QRect rect = m_plot->axisRect()->rect();
    if (rect.width() <= 0 || rect.height() <= 0) {
        return;
    }
    double width = double(m_columns);
    double height = double(m_rows);
    if (m_keepAspect) {
        // Equal pixels per row and per column: widen whichever side has room to spare.
        const double scale = std::min(rect.width() / width, rect.height() / height);
        width = rect.width() / scale;
        height = rect.height() / scale;
    }
    const double cx = (double(m_columns) - 1) / 2;
    const double cy = (double(m_rows) - 1) / 2;
    const QCPRange x(cx - width / 2, cx + width / 2);
    const QCPRange y(cy - height / 2, cy + height / 2);
    // The ticks of this draw were laid out for the old ranges (a chart drawn before its first
    // layout, as a partner inspector's is): draw once more when they change.
    if (x != m_plot->xAxis->range() || y != m_plot->yAxis->range()) {
        m_plot->xAxis->setRange(x);
        m_plot->yAxis->setRange(y);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> MatrixPlot::cellAt(const QPoint& pixel) const {
    if (!m_portrait || !m_plot->axisRect()->rect().contains(pixel)) {
        return std::nullopt;
    }
    const double column = std::round(m_plot->xAxis->pixelToCoord(pixel.x()));
    const double row = std::round(m_plot->yAxis->pixelToCoord(pixel.y()));
    if (column < 0 || row < 0 || column >= double(m_columns) || row >= double(m_rows)) {
        return std::nullopt;
    }
    return std::pair(static_cast<std::uint64_t>(row), static_cast<std::uint64_t>(column));
}

QString MatrixPlot::readout(const QPoint& pixel) const {
    const auto at = cellAt(pixel);
    if (!at) {
        return {};
    }
    const auto [row, column] = *at;
    // The cell holding it, as the portrait averaged them.
    const std::uint64_t cellRow = row * m_portrait->imageRows / m_rows;
    const std::uint64_t cellColumn = column * m_portrait->imageColumns / m_columns;
    const float value = m_portrait->image[cellRow * m_portrait->imageColumns + cellColumn];
    const bool averaged = m_rows > m_portrait->imageRows || m_columns > m_portrait->imageColumns;
    const QString shown = std::isnan(value) ? tr("no finite value") : QString::number(value, 'g', 5);
    return tr("row %1, column %2: %3%4")
        .arg(number(row), number(column), shown, averaged ? tr(" (the mean of its cell)") : QString());
}

} // namespace organ::widgets
