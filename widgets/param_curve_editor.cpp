#include "param_curve_editor.h"

#include "chart_style.h"
#include "merge/merge_parameter.h"

#include <QInputDialog>
#include <QToolTip>
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
    m_curve = addGraph(); // its pen is redraw()'s: blue, or grey while disabled
    m_handles = addGraph();
    m_handles->setLineStyle(QCPGraph::lsNone);
    m_handles->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(0xe0, 0x7b, 0x1a), 2), Qt::white, 11));
    m_currentHandle = addGraph();
    m_currentHandle->setLineStyle(QCPGraph::lsNone);
    m_currentHandle->setScatterStyle(QCPScatterStyle(
        QCPScatterStyle::ssCircle, QPen(QColor(0xe0, 0x7b, 0x1a), 2), QColor(0xe0, 0x7b, 0x1a), 11));
    m_idle = new QCPItemText(this);
    m_idle->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_idle->position->setCoords(0.5, 0.5);
    m_idle->setText(tr("No parameter varies over the layers:\nchoose one above to shape it here."));
    m_idle->setTextAlignment(Qt::AlignCenter);
    m_idle->setPadding(QMargins(8, 4, 8, 4));
    m_idle->setPen(Qt::NoPen);
    setMouseTracking(true);
    followPalette(this);
    redraw();
}

int ParamCurveEditor::maxPointCount() const {
    return std::clamp(int(m_blocks), 2, kMaxPoints);
}

void ParamCurveEditor::setBlocks(std::uint32_t blocks) {
    m_blocks = std::max<std::uint32_t>(blocks, 1);
    redraw();
}

void ParamCurveEditor::setValueRange(double low, double high) {
    m_low = low;
    m_high = high;
    setLimits(low, high);
}

void ParamCurveEditor::setLimits(double min, double max) {
    m_min = min;
    m_max = max;
    for (auto* points : {&m_points, &m_shaped}) {
        for (double& p : *points) {
            p = std::clamp(p, m_min, m_max);
        }
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
        p = std::clamp(p, m_min, m_max);
    }
    m_shaped = points;
    showPoints(std::move(points));
}

void ParamCurveEditor::setPointCount(int count) {
    count = std::clamp(count, 2, maxPointCount());
    if (count == int(m_points.size())) {
        return;
    }
    if (count == int(m_shaped.size())) {
        showPoints(m_shaped);
        return;
    }
    std::vector<double> resampled(static_cast<std::size_t>(count));
    for (int j = 0; j < count; ++j) {
        resampled[std::size_t(j)] = gradientAt(m_shaped, double(j) / (count - 1));
    }
    showPoints(std::move(resampled));
}

void ParamCurveEditor::showPoints(std::vector<double> points) {
    m_points = std::move(points);
    m_current = std::min(m_current, int(m_points.size()) - 1);
    redraw();
    emit pointsChanged();
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
    const bool active = isEnabled();
    const QColor line =
        active ? QColor(0x3b, 0x6e, 0xb4) : palette().color(QPalette::Disabled, QPalette::Text);
    m_curve->setPen(QPen(line, 1.5));
    m_curve->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, line, 4));
    m_handles->setVisible(active);
    m_currentHandle->setVisible(active);
    m_idle->setVisible(!active);
    m_idle->setColor(palette().color(QPalette::Active, QPalette::Text));
    m_idle->setBrush(palette().color(QPalette::Base)); // the plot's background: no line through it
    const double margin = std::max(0.4, 0.03 * m_blocks);
    xAxis->setRange(-margin, double(m_blocks - 1) + margin);
    const auto [lowest, highest] = std::minmax_element(m_points.begin(), m_points.end());
    const double low = std::min(m_low, *lowest);
    const double high = std::max(m_high, *highest);
    const double pad = (high - low) * 0.08;
    yAxis->setRange(low - pad, high + pad);
    replot(rpQueuedReplot);
}

void ParamCurveEditor::moveTo(int index, double value) {
    const double clamped = std::clamp(value, m_min, m_max);
    if (m_points[std::size_t(index)] == clamped) {
        return;
    }
    m_points[std::size_t(index)] = clamped;
    m_shaped = m_points;
    redraw();
    emit pointsChanged();
}

int ParamCurveEditor::pointAt(QPointF pixel) const {
    int found = -1;
    double nearest = kGrabPixels;
    for (int j = 0; j < int(m_points.size()); ++j) {
        const QPointF d = pixelOfPoint(j) - pixel;
        const double distance = std::hypot(d.x(), d.y());
        if (distance <= nearest) {
            nearest = distance;
            found = j;
        }
    }
    return found;
}

QString ParamCurveEditor::pointText(int index) const {
    // The blocks whose value this point moves: those strictly between its neighbours.
    const double x = xOfPoint(index);
    const double step = double(m_blocks - 1) / double(m_points.size() - 1);
    QStringList layers;
    for (std::uint32_t l = 0; l < m_blocks; ++l) {
        if (std::abs(double(l) - x) < step - 1e-9) {
            layers << QString::number(l);
        }
    }
    const QString at =
        std::abs(x - std::round(x)) < 1e-9
            ? tr("at layer %1").arg(std::lround(x))
            : tr("between layers %1 and %2").arg(int(std::floor(x))).arg(int(std::floor(x)) + 1);
    return tr("Point %1 of %2, %3: %4\nShapes layer(s) %5. Double-click to type a value.")
        .arg(index + 1)
        .arg(m_points.size())
        .arg(at, QString::number(m_points[std::size_t(index)], 'f', 3), layers.join(QStringLiteral(", ")));
}

void ParamCurveEditor::mousePressEvent(QMouseEvent* event) {
    m_dragged = isEnabled() ? pointAt(event->position()) : -1;
    if (m_dragged >= 0 && event->button() == Qt::LeftButton) {
        m_current = m_dragged;
        const auto [lowest, highest] = std::minmax_element(m_points.begin(), m_points.end());
        m_dragLow = std::min(m_low, *lowest);
        m_dragHigh = std::max(m_high, *highest);
        redraw();
        event->accept();
        return;
    }
    QCustomPlot::mousePressEvent(event);
}

void ParamCurveEditor::mouseMoveEvent(QMouseEvent* event) {
    if (m_dragged >= 0 && (event->buttons() & Qt::LeftButton)) {
        // Dragged values land on hundredths (a pixel is some 0.005 here): 0 is 0, not −0.000548.
        const double value = std::round(yAxis->pixelToCoord(event->position().y()) * 100) / 100;
        moveTo(m_dragged, std::clamp(value, m_dragLow, m_dragHigh));
        QToolTip::showText(event->globalPosition().toPoint(), pointText(m_dragged), this);
        event->accept();
        return;
    }
    const int hovered = isEnabled() ? pointAt(event->position()) : -1;
    if (hovered >= 0) {
        QToolTip::showText(event->globalPosition().toPoint(), pointText(hovered), this);
    } else {
        QToolTip::hideText();
    }
    QCustomPlot::mouseMoveEvent(event);
}

void ParamCurveEditor::mouseDoubleClickEvent(QMouseEvent* event) {
    const int index = isEnabled() ? pointAt(event->position()) : -1;
    if (index < 0 || event->button() != Qt::LeftButton) {
        QCustomPlot::mouseDoubleClickEvent(event);
        return;
    }
    m_current = index;
    redraw();
    bool ok = false;
    const double value =
        QInputDialog::getDouble(this, tr("Point %1").arg(index + 1),
                                tr("%1 at point %2 of %3:")
                                    .arg(yAxis->label().isEmpty() ? tr("Value") : yAxis->label())
                                    .arg(index + 1)
                                    .arg(m_points.size()),
                                m_points[std::size_t(index)], m_min, m_max, 3, &ok);
    if (ok) {
        moveTo(index, value);
    }
    event->accept();
}

void ParamCurveEditor::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::EnabledChange) {
        if (!isEnabled()) {
            m_dragged = -1;
            m_current = -1;
        }
        redraw();
    }
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
