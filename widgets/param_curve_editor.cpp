#include "param_curve_editor.h"

#include "chart_style.h"
#include "merge/merge_parameter.h"

#include <algorithm>
#include <cmath>

namespace organ::widgets {
namespace {

constexpr int kMaxPoints = 16;
constexpr double kGrabPixels = 14;

} // namespace

ParamCurveEditor::ParamCurveEditor(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("mergeCurve"));
    setFocusPolicy(Qt::StrongFocus);
    setMinimumSize(320, 180);
    xAxis->setLabel(tr("layer"));
    xAxis->setTicker(integerTicker());
    m_curve = addGraph();
    m_curve->setPen(QPen(QColor(0x3b, 0x6e, 0xb4), 1.5));
    m_curve->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(0x3b, 0x6e, 0xb4), 4));
    m_handles = addGraph();
    m_handles->setLineStyle(QCPGraph::lsNone);
    m_handles->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(0xe0, 0x7b, 0x1a), 2), Qt::white, 11));
    m_currentHandle = addGraph();
    m_currentHandle->setLineStyle(QCPGraph::lsNone);
    m_currentHandle->setScatterStyle(QCPScatterStyle(
        QCPScatterStyle::ssCircle, QPen(QColor(0xe0, 0x7b, 0x1a), 2), QColor(0xe0, 0x7b, 0x1a), 11));
    followPalette(this);
    redraw();
}

void ParamCurveEditor::setBlocks(std::uint32_t blocks) {
    m_blocks = std::max<std::uint32_t>(blocks, 1);
    redraw();
}

void ParamCurveEditor::setValueRange(double low, double high) {
    m_low = low;
    m_high = high;
    for (double& p : m_points) {
        p = std::clamp(p, m_low, m_high);
    }
    redraw();
}

void ParamCurveEditor::setValueLabel(const QString& label) {
    yAxis->setLabel(label);
    replot(rpQueuedReplot);
}

void ParamCurveEditor::setPoints(std::vector<double> points) {
    if (points.size() < 2) {
        points.resize(2, points.empty() ? m_low : points.front());
    }
    if (points.size() > std::size_t(kMaxPoints)) {
        points.resize(kMaxPoints);
    }
    for (double& p : points) {
        p = std::clamp(p, m_low, m_high);
    }
    m_points = std::move(points);
    m_current = std::min(m_current, int(m_points.size()) - 1);
    redraw();
    emit pointsChanged();
}

void ParamCurveEditor::setPointCount(int count) {
    count = std::clamp(count, 2, kMaxPoints);
    if (count == int(m_points.size())) {
        return;
    }
    std::vector<double> resampled(static_cast<std::size_t>(count));
    for (int j = 0; j < count; ++j) {
        resampled[std::size_t(j)] = gradientAt(m_points, double(j) / (count - 1));
    }
    setPoints(std::move(resampled));
}

double ParamCurveEditor::xOfPoint(int index) const {
    return double(index) / double(m_points.size() - 1) * double(m_blocks - 1);
}

QPointF ParamCurveEditor::pixelOfPoint(int index) const {
    return {xAxis->coordToPixel(xOfPoint(index)), yAxis->coordToPixel(m_points[std::size_t(index)])};
}

void ParamCurveEditor::redraw() {
    QVector<double> x;
    QVector<double> y;
    for (std::uint32_t l = 0; l < m_blocks; ++l) {
        x << l;
        y << gradientAt(m_points, m_blocks == 1 ? 0.0 : double(l) / double(m_blocks - 1));
    }
    m_curve->setData(x, y, true);
    QVector<double> hx;
    QVector<double> hy;
    for (int j = 0; j < int(m_points.size()); ++j) {
        hx << xOfPoint(j);
        hy << m_points[std::size_t(j)];
    }
    m_handles->setData(hx, hy, true);
    m_currentHandle->data()->clear();
    if (m_current >= 0) {
        m_currentHandle->addData(xOfPoint(m_current), m_points[std::size_t(m_current)]);
    }
    const double margin = std::max(0.4, 0.03 * m_blocks);
    xAxis->setRange(-margin, double(m_blocks - 1) + margin);
    const double pad = (m_high - m_low) * 0.08;
    yAxis->setRange(m_low - pad, m_high + pad);
    replot(rpQueuedReplot);
}

void ParamCurveEditor::moveTo(int index, double value) {
    const double clamped = std::clamp(value, m_low, m_high);
    if (m_points[std::size_t(index)] == clamped) {
        return;
    }
    m_points[std::size_t(index)] = clamped;
    redraw();
    emit pointsChanged();
}

void ParamCurveEditor::mousePressEvent(QMouseEvent* event) {
    m_dragged = -1;
    double nearest = kGrabPixels;
    for (int j = 0; j < int(m_points.size()); ++j) {
        const QPointF d = pixelOfPoint(j) - event->position();
        const double distance = std::hypot(d.x(), d.y());
        if (distance <= nearest) {
            nearest = distance;
            m_dragged = j;
        }
    }
    if (m_dragged >= 0 && event->button() == Qt::LeftButton) {
        m_current = m_dragged;
        redraw();
        event->accept();
        return;
    }
    QCustomPlot::mousePressEvent(event);
}

void ParamCurveEditor::mouseMoveEvent(QMouseEvent* event) {
    if (m_dragged >= 0 && (event->buttons() & Qt::LeftButton)) {
        moveTo(m_dragged, yAxis->pixelToCoord(event->position().y()));
        event->accept();
        return;
    }
    QCustomPlot::mouseMoveEvent(event);
}

void ParamCurveEditor::mouseReleaseEvent(QMouseEvent* event) {
    m_dragged = -1;
    QCustomPlot::mouseReleaseEvent(event);
}

void ParamCurveEditor::keyPressEvent(QKeyEvent* event) {
    const double step = (m_high - m_low) / 50;
    if (m_current >= 0 && (event->key() == Qt::Key_Up || event->key() == Qt::Key_Down)) {
        moveTo(m_current, m_points[std::size_t(m_current)] + (event->key() == Qt::Key_Up ? step : -step));
        return;
    }
    if (event->key() == Qt::Key_Left || event->key() == Qt::Key_Right) {
        const int last = int(m_points.size()) - 1;
        m_current = std::clamp(m_current + (event->key() == Qt::Key_Right ? 1 : -1), 0, last);
        redraw();
        return;
    }
    QCustomPlot::keyPressEvent(event);
}

} // namespace organ::widgets
