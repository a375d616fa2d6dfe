#pragma once

#include <QPointF>
#include <QString>
#include <cstdint>
#include <qcustomplot.h>
#include <vector>

namespace organ::widgets {

// A merge parameter that varies over the blocks, as mergekit's gradients say it: k control
// points spread evenly from the first block to the last, the value piecewise linear between them
// (merge-v1, "Parameters that vary over the model"). A point is dragged up or down with the mouse
// (landing on hundredths), or moved with the arrow keys once clicked, or given an exact value by a
// double-click; hovering it tells its value and the layers it shapes. The dots show the value each block
// gets. Disabled (no parameter varies), the curve is grey, without points to drag, and says so.
class ParamCurveEditor : public QCustomPlot {
    Q_OBJECT
public:
    explicit ParamCurveEditor(QWidget* parent = nullptr);

    void setBlocks(std::uint32_t blocks);
    // The values drawn, and those a point may take (points outside are brought in) until
    // setLimits() allows more: a point typed or moved by the keys beyond the drawn range widens
    // the drawing.
    void setValueRange(double low, double high);
    void setLimits(double min, double max);
    void setValueLabel(const QString& label);
    // At least two points; the curve is redrawn.
    void setPoints(std::vector<double> points);
    const std::vector<double>& points() const { return m_points; }
    // The curve resampled at `count` points (2 to maxPointCount()): the shape is kept as far as
    // that many can. The points last set or shaped by hand stay the source: fewer points and then
    // as many again give them back, a shaped middle point included.
    void setPointCount(int count);
    // As many points as blocks (every point then shapes a block), at most 16, at least 2.
    int maxPointCount() const;
    // Where control point `index` is drawn, in the widget's pixels.
    QPointF pixelOfPoint(int index) const;
    QSize sizeHint() const override { return {440, 200}; }

signals:
    void pointsChanged();

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    double xOfPoint(int index) const;
    int pointAt(QPointF pixel) const; // -1 when none is within grabbing distance
    QString pointText(int index) const;
    void redraw();
    void moveTo(int index, double value);
    void showPoints(std::vector<double> points); // drawn, m_shaped unchanged

    std::uint32_t m_blocks = 1;
    double m_low = 0; // drawn
    double m_high = 1;
    double m_min = 0; // allowed
    double m_max = 1;
    double m_dragLow = 0; // what a drag may reach: the range drawn when it began
    double m_dragHigh = 1;
    std::vector<double> m_points{1, 1};
    std::vector<double> m_shaped{1, 1}; // what setPointCount() resamples
    int m_dragged = -1;
    int m_current = -1;
    QCPGraph* m_curve = nullptr;
    QCPGraph* m_handles = nullptr;
    QCPGraph* m_currentHandle = nullptr;
    QCPItemText* m_idle = nullptr; // says why the curve is grey
};

} // namespace organ::widgets
