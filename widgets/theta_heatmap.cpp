#include "theta_heatmap.h"

#include "chart_export.h"
#include "chart_style.h"
#include "display_names.h"
#include "heatmap_metric.h"
#include "theta_scale.h"
#include "vertical_scroll.h"

#include <QApplication>
#include <QCheckBox>
#include <QFontMetrics>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <limits>
#include <map>
#include <qcustomplot.h>
#include <utility>

namespace organ::widgets {
namespace {

// Presence map levels.
constexpr double kAbsent = 0.0;
constexpr double kPending = 1.0;
constexpr double kConstant = 2.0;

} // namespace

ThetaHeatmap::ThetaHeatmap(std::shared_ptr<const ModelSnapshot> snapshot, QWidget* parent, Mode mode)
    : QWidget(parent), m_snapshot(std::move(snapshot)), m_mode(mode) {
    buildGrid();
    m_values.assign(m_snapshot->anatomy.tensors.size(), std::nullopt);
    m_details.assign(m_values.size(), QString());
    buildPlot();
}

void ThetaHeatmap::buildGrid() {
    const auto& anatomy = m_snapshot->anatomy;
    std::map<std::pair<std::size_t, std::string>, int> rowOf; // (anatomical order, role)
    for (const auto& t : anatomy.tensors) {
        rowOf.emplace(std::pair(t.order, t.role), 0);
    }
    for (auto& [key, row] : rowOf) {
        row = static_cast<int>(m_roles.size());
        m_roles.push_back(key.second);
    }
    // A model without tensors outside layers (a LoRA adapter) has no "global" column.
    m_hasGlobal = std::any_of(anatomy.tensors.begin(), anatomy.tensors.end(),
                              [](const TensorAnatomy& t) { return !t.layer; });
    m_columns = columnOfLayer(anatomy.layerCount());
    m_cells.assign(static_cast<std::size_t>(m_columns) * m_roles.size(), -1);
    for (std::size_t i = 0; i < anatomy.tensors.size(); ++i) {
        const auto& t = anatomy.tensors[i];
        const int column = t.layer ? columnOfLayer(*t.layer) : 0;
        const int row = rowOf.at({t.order, t.role});
        m_cells[static_cast<std::size_t>(column) * m_roles.size() + row] = static_cast<int>(i);
        m_cellOf.emplace_back(column, row);
    }
}

int ThetaHeatmap::columnOfLayer(std::uint32_t layer) const {
    return static_cast<int>(layer) + (m_hasGlobal ? 1 : 0);
}

std::optional<std::uint32_t> ThetaHeatmap::layerOfColumn(int column) const {
    const int layer = column - (m_hasGlobal ? 1 : 0);
    if (column < 0 || column >= m_columns || layer < 0) {
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(layer);
}

void ThetaHeatmap::buildPlot() {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    // The colour scale: fixed (θ 0–90°, comparable across models; Δθ ±45°) or fitted to the
    // values present (a model of random weights is otherwise one colour; a small Δθ invisible).
    m_fixedScale =
        new QCheckBox(m_mode == Mode::Theta ? tr("Fixed scale 0–90°") : fixedScaleText(m_metric), this);
    m_fixedScale->setToolTip(m_mode == Mode::Theta
                                 ? tr("The same colours for every model; uncheck to fit the "
                                      "colours to this model's θ range")
                                 : fixedScaleTip(m_metric));
    m_fixedScale->setObjectName(QStringLiteral("fixedScale"));
    m_fixedScale->setChecked(m_mode == Mode::Theta);
    connect(m_fixedScale, &QCheckBox::toggled, this, [this] {
        updateRange();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    });
    layout->addWidget(m_fixedScale);
    m_plot = new QCustomPlot(this);
    // An explicit minimum: QCustomPlot's computed one is wide enough to keep two panes from
    // fitting side by side on a laptop screen. A model with more roles than the pane has room
    // for a line each scrolls.
    m_plot->setMinimumSize(220, 200);
    layout->addWidget(verticalScroll(m_plot, this, QStringLiteral("heatmapScroll")), 1);
    m_plot->setInteractions({});
    m_plot->setMouseTracking(true);
    followPalette(m_plot);
    fitToWidth(m_plot);
    const int rows = rowCount();
    if (rows == 0) {
        m_plot->plotLayout()->insertRow(0);
        m_plot->plotLayout()->addElement(0, 0, new QCPTextElement(m_plot, tr("This model has no tensors.")));
        m_plot->replot();
        return;
    }

    // A line for each role's name (and the importance row): a pane too short for them scrolls,
    // where the names ran into each other. Below and above the cells: the layer axis with its
    // turned names, its title and a margin.
    constexpr int kAxesHeight = 110;
    const int line = QFontMetrics(m_plot->yAxis->tickLabelFont()).lineSpacing();
    m_plot->setMinimumHeight(std::max(200, (rows + 1) * line + kAxesHeight));

    auto makeMap = [&](QCPColorMap*& map) {
        map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
        map->data()->setSize(m_columns, rows);
        map->data()->setRange(QCPRange(0, std::max(1, m_columns - 1)), QCPRange(0, std::max(1, rows - 1)));
        map->setInterpolate(false);
        map->setTightBoundary(false);
    };
    makeMap(m_presence);
    makeMap(m_theta);
    QCPColorGradient presence;
    presence.clearColorStops();
    presence.setColorStopAt(0.0, Qt::white);
    // In Δθ mode "no counterpart" is darker, so that it never reads as Δθ = 0 (near white).
    presence.setColorStopAt(0.5, m_mode == Mode::Theta ? QColor(0xd9, 0xd9, 0xd9) : QColor(0xa6, 0xa6, 0xa6));
    presence.setColorStopAt(1.0, QColor(0xf4, 0xa5, 0x82));
    presence.setColorInterpolation(QCPColorGradient::ciRGB);
    m_presence->setGradient(presence);
    m_presence->setDataRange(QCPRange(kAbsent, kConstant));
    // Δθ: blue where the donor is noisier, red where it is more structured, and Δθ = 0 the
    // chart's background: unchanged tensors recede, what changed stands out.
    const QCPColorGradient gradient = m_mode == Mode::Theta
                                          ? thetaGradient()
                                          : metricGradient(m_metric, m_plot->palette().color(QPalette::Base));
    m_theta->setGradient(gradient);
    for (int c = 0; c < m_columns; ++c) {
        for (int r = 0; r < rows; ++r) {
            // Absent: transparent, so that the chart's background (the palette's) shows.
            m_presence->data()->setCell(c, r, tensorAt(c, r) < 0 ? kAbsent : kPending);
            m_presence->data()->setAlpha(c, r, tensorAt(c, r) < 0 ? 0 : 255);
            // No θ yet: fully transparent, so that the presence map shows through. (A NaN
            // cell would be painted in the gradient's NaN colour whatever its alpha.)
            m_theta->data()->setCell(c, r, kThetaMin);
            m_theta->data()->setAlpha(c, r, 0);
        }
    }

    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    // In a narrow pane the cells give way, never the scale's bar.
    m_scale->setMinimumSize(m_scale->barWidth(), 0);
    m_scale->setGradient(gradient);
    m_theta->setColorScale(m_scale);
    if (m_mode == Mode::Delta) {
        // "No difference" follows the background when the palette changes (dark mode).
        connect(m_plot, &QCustomPlot::beforeReplot, this, [this] {
            const QCPColorGradient gradient =
                metricGradient(m_metric, m_plot->palette().color(QPalette::Base));
            if (m_scale->gradient() != gradient) {
                m_theta->setGradient(gradient);
                m_scale->setGradient(gradient);
            }
        });
    }
    updateRange();
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);

    auto xTicks = QSharedPointer<QCPAxisTickerText>::create();
    if (m_hasGlobal) {
        xTicks->addTick(0, tr("global"));
    }
    const std::uint32_t layers = m_snapshot->anatomy.layerCount();
    const std::uint32_t step = layers > 40 ? 5 : (layers > 20 ? 2 : 1);
    for (std::uint32_t layer = 0; layer < layers; layer += step) {
        xTicks->addTick(columnOfLayer(layer), QString::number(layer));
    }
    m_plot->xAxis->setTicker(xTicks);
    m_plot->xAxis->setLabel(tr("layer"));
    m_plot->xAxis->setRange(-0.5, m_columns - 0.5);
    m_plot->xAxis->grid()->setVisible(false);
    auto yTicks = QSharedPointer<QCPAxisTickerText>::create();
    for (int r = 0; r < rows; ++r) {
        yTicks->addTick(r, model::displayText(m_roles[static_cast<std::size_t>(r)]));
    }
    m_plot->yAxis->setTicker(yTicks);
    m_plot->yAxis->setRange(-0.5, rows - 0.5);
    m_plot->yAxis->setRangeReversed(true); // the first role (anatomical order) on top
    m_plot->yAxis->grid()->setVisible(false);

    m_plot->plotLayout()->insertRow(1);
    m_key = new QCPTextElement(m_plot);
    setWrappedText(m_key, m_mode == Mode::Theta
                              ? tr("θ: 0° noise … 90° structure · blank: no such tensor · grey: not measured "
                                   "yet · salmon: constant (no θ)")
                              : metricKey(m_metric));
    m_plot->plotLayout()->addElement(1, 0, m_key);

    m_dropMark = new QCPItemRect(m_plot);
    m_dropMark->setBrush(Qt::NoBrush);
    m_dropMark->setVisible(false);
    setScreenOnly(m_dropMark);
    m_plot->installEventFilter(this);

    m_highlight = new QCPItemRect(m_plot);
    m_highlight->setPen(QPen(Qt::red, 2.5));
    m_highlight->setBrush(Qt::NoBrush);
    m_highlight->setVisible(false);
    setScreenOnly(m_highlight);

    installExportMenu(
        m_plot, this,
        [this] {
            const QString name = model::modelDisplayName(*m_snapshot->model);
            return m_mode == Mode::Theta
                       ? ChartLabel{name + QStringLiteral("-theta-heatmap"),
                                    tr("%1 — θ per layer and role").arg(name)}
                       : ChartLabel{name + u'-' + metricSuffix(m_metric), m_comparisonTitle};
        },
        [this](QMenu& menu, const QPoint& at) {
            if (m_contextActions) {
                m_contextActions(menu, tensorAtPixel(at));
            }
        });
    connect(m_plot, &QCustomPlot::mouseMove, this, &ThetaHeatmap::showTooltip);
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* event) {
        if (const int tensor = tensorAtPixel(event->pos()); tensor >= 0) {
            emit tensorActivated(tensor);
        }
    });
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        const int tensor = tensorAtPixel(event->pos());
        const bool selects = m_dragSource || m_contextActions;
        if (tensor >= 0 && selects && (event->modifiers() & Qt::ControlModifier)) {
            toggleSelected(tensor);
            return;
        }
        if (tensor >= 0) {
            // A click selects the cell alone: Ctrl+clicks then add to what is shown selected. A
            // press on a selected cell may start dragging the selection: it is narrowed to the
            // cell only when the button comes up without a drag.
            if (selects && m_selected.contains(tensor)) {
                m_narrowOnRelease = tensor;
            } else if (selects) {
                m_selected = {tensor};
                drawSelection();
            }
            highlightTensor(tensor);
            emit tensorClicked(tensor);
        } else if (selects && !m_selected.empty() && event->button() == Qt::LeftButton &&
                   !(event->modifiers() & Qt::ControlModifier)) {
            // A click where no tensor is lets the selection go.
            m_selected.clear();
            drawSelection();
        }
    });
    connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent*) {
        if (const int tensor = std::exchange(m_narrowOnRelease, -1); tensor >= 0) {
            m_selected = {tensor};
            drawSelection();
        }
    });
    m_plot->replot();
}

int ThetaHeatmap::tensorAt(int column, int row) const {
    if (column < 0 || row < 0 || column >= m_columns || row >= rowCount()) {
        return -1;
    }
    return m_cells[static_cast<std::size_t>(column) * m_roles.size() + static_cast<std::size_t>(row)];
}

std::optional<double> ThetaHeatmap::thetaAt(int column, int row) const {
    const int tensor = tensorAt(column, row);
    return tensor < 0 || m_results == nullptr ? std::nullopt : m_results->theta(tensor);
}

const std::optional<ZResult>& ThetaHeatmap::result(int tensor) const {
    static const std::optional<ZResult> none;
    return m_results == nullptr ? none : m_results->at(tensor);
}

std::pair<int, int> ThetaHeatmap::cellOf(int tensor) const {
    return tensor >= 0 && static_cast<std::size_t>(tensor) < m_cellOf.size()
               ? m_cellOf[static_cast<std::size_t>(tensor)]
               : std::pair(-1, -1);
}

int ThetaHeatmap::tensorAtPixel(const QPoint& pixel) const {
    const double key = m_plot->xAxis->pixelToCoord(pixel.x());
    const double value = m_plot->yAxis->pixelToCoord(pixel.y());
    return tensorAt(static_cast<int>(std::lround(key)), static_cast<int>(std::lround(value)));
}

QPoint ThetaHeatmap::pixelOfTensor(int tensor) const {
    const auto [column, row] = cellOf(tensor);
    return {static_cast<int>(m_plot->xAxis->coordToPixel(column)),
            static_cast<int>(m_plot->yAxis->coordToPixel(row))};
}

void ThetaHeatmap::setResults(const model::TensorResults* results) {
    model::followResults(
        this, m_results, results,
        [this](int tensor) {
            if (m_theta != nullptr) {
                refreshCell(tensor);
                scheduleReplot();
            }
        },
        [this] { refreshAllCells(); });
}

void ThetaHeatmap::refreshAllCells() {
    if (m_theta == nullptr) {
        return;
    }
    for (std::size_t t = 0; t < m_cellOf.size(); ++t) {
        refreshCell(static_cast<int>(t));
    }
    scheduleReplot();
}

void ThetaHeatmap::refreshCell(int tensor) {
    const auto [column, row] = cellOf(tensor);
    const auto& r = result(tensor);
    m_presence->data()->setCell(column, row, r && r->constant ? kConstant : kPending);
    const int preview = m_previewOf.empty() ? -1 : m_previewOf[static_cast<std::size_t>(tensor)];
    const std::optional<double> theta =
        preview >= 0 ? m_preview[static_cast<std::size_t>(preview)].theta : (r ? r->theta : std::nullopt);
    m_theta->data()->setCell(column, row, theta.value_or(kThetaMin));
    m_theta->data()->setAlpha(column, row, theta ? 255 : 0);
}

// Results arrive per tensor: redraw at most every 50 ms.
void ThetaHeatmap::scheduleReplot() {
    redrawSoon(this, m_replotPending, 50, [this] {
        updateRange();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    });
}

void ThetaHeatmap::highlightTensor(int tensor) {
    if (m_highlight == nullptr) {
        return;
    }
    const auto [column, row] = tensor < 0 ? std::pair(-1, -1) : cellOf(tensor);
    m_highlight->setVisible(column >= 0);
    if (column >= 0) {
        m_highlight->topLeft->setCoords(column - 0.5, row - 0.5);
        m_highlight->bottomRight->setCoords(column + 0.5, row + 0.5);
    }
    m_plot->replot(); // a user's selection: shown at once
}

void ThetaHeatmap::setMetric(HeatmapMetric metric) {
    m_metric = metric;
    for (std::size_t t = 0; t < m_values.size(); ++t) {
        setValue(static_cast<int>(t), std::nullopt);
    }
    if (m_theta == nullptr) {
        return;
    }
    const QSignalBlocker quiet(m_fixedScale);
    m_fixedScale->setText(fixedScaleText(metric));
    m_fixedScale->setToolTip(fixedScaleTip(metric));
    m_fixedScale->setChecked(fixedScaleByDefault(metric));
    setWrappedText(m_key, metricKey(metric));
    const QCPColorGradient gradient = metricGradient(metric, m_plot->palette().color(QPalette::Base));
    m_theta->setGradient(gradient);
    m_scale->setGradient(gradient);
    scheduleReplot();
}

void ThetaHeatmap::setValue(int tensor, std::optional<double> value, const QString& detail) {
    if (tensor < 0 || static_cast<std::size_t>(tensor) >= m_values.size() || m_theta == nullptr) {
        return;
    }
    m_values[static_cast<std::size_t>(tensor)] = value;
    m_details[static_cast<std::size_t>(tensor)] = detail;
    const auto [column, row] = cellOf(tensor);
    m_theta->data()->setCell(column, row, value.value_or(0.0));
    m_theta->data()->setAlpha(column, row, value ? 255 : 0);
    scheduleReplot();
}

// The colour range: fixed, or fitted to the values the cells show now.
void ThetaHeatmap::updateRange() {
    if (m_theta == nullptr) {
        return;
    }
    QCPRange range;
    QString label;
    if (m_mode == Mode::Theta) {
        range = QCPRange(kThetaMin, kThetaMax);
        label = tr("θ (°)");
        if (!m_fixedScale->isChecked()) {
            double low = kThetaMax;
            double high = kThetaMin;
            for (int c = 0; c < m_columns; ++c) {
                for (int r = 0; r < rowCount(); ++r) {
                    if (const auto theta = shownThetaAt(c, r)) {
                        low = std::min(low, *theta);
                        high = std::max(high, *theta);
                    }
                }
            }
            if (low <= high) {
                const double pad = std::max(0.5, 0.02 * (high - low));
                range = QCPRange(std::max(kThetaMin, low - pad), std::min(kThetaMax, high + pad));
            }
            label = tr("θ (°), fitted");
        }
    } else {
        double low = std::numeric_limits<double>::infinity();
        double high = -low;
        for (const auto& value : m_values) {
            if (value) {
                low = std::min(low, *value);
                high = std::max(high, *value);
            }
        }
        range = metricRange(m_metric, m_fixedScale->isChecked(), low, high);
        label = scaleLabel(m_metric, m_fixedScale->isChecked(), range);
    }
    m_theta->setDataRange(range);
    m_scale->setDataRange(range);
    m_scale->axis()->setLabel(label);
}

QCPRange ThetaHeatmap::colorRange() const {
    return m_theta != nullptr ? m_theta->dataRange() : QCPRange();
}

std::optional<double> ThetaHeatmap::valueAt(int column, int row) const {
    const int tensor = tensorAt(column, row);
    return tensor < 0 ? std::nullopt : m_values[static_cast<std::size_t>(tensor)];
}

void ThetaHeatmap::setLayerImportance(const std::vector<double>& angular,
                                      const std::vector<double>& influence) {
    if (m_mode != Mode::Theta || rowCount() == 0) {
        return;
    }
    m_angular = angular;
    m_influence = influence;
    if (m_importanceMap == nullptr) {
        // One more row on the same axes, a row's gap below the roles: its columns are theirs.
        const double y = importanceRowBelow(rowCount());
        m_importanceMap = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
        // Two equal rows of half a cell: a colour map draws no cells along an axis it has
        // only one of.
        m_importanceMap->data()->setSize(m_columns, 2);
        m_importanceMap->data()->setRange(QCPRange(0, std::max(1, m_columns - 1)),
                                          QCPRange(y - 0.25, y + 0.25));
        m_importanceMap->setInterpolate(false);
        m_importanceMap->setTightBoundary(false);
        QCPColorGradient darker;
        darker.clearColorStops();
        darker.setColorStopAt(0.0, QColor(0xf2, 0xf2, 0xf2));
        darker.setColorStopAt(1.0, QColor(0x1f, 0x2a, 0x44));
        m_importanceMap->setGradient(darker);
        m_plot->yAxis->ticker().dynamicCast<QCPAxisTickerText>()->addTick(y, tr("importance"));
        m_plot->yAxis->setRange(-0.5, y + 0.5);
        setWrappedText(m_key,
                       wrappedSource(m_key) + tr("\nimportance (vital signs): the lighter, the less the "
                                                 "layer changes the hidden state"));
    }
    // Fitted to the layers' own range: the layer that changes the state least is the lightest.
    double low = std::numeric_limits<double>::infinity();
    double high = -low;
    for (int c = 0; c < m_columns; ++c) {
        const std::optional<double> value = importanceAt(c);
        for (int r = 0; r < 2; ++r) {
            m_importanceMap->data()->setCell(c, r, value.value_or(0.0));
            m_importanceMap->data()->setAlpha(c, r, value ? 255 : 0);
        }
        if (value) {
            low = std::min(low, *value);
            high = std::max(high, *value);
        }
    }
    m_importanceMap->setDataRange(high > low ? QCPRange(low, high) : QCPRange(low - 1, high + 1));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

std::optional<double> ThetaHeatmap::importanceRowPosition() const {
    return m_importanceMap != nullptr ? std::optional(importanceRowBelow(rowCount())) : std::nullopt;
}

std::optional<double> ThetaHeatmap::importanceAt(int column) const {
    const auto layer = layerOfColumn(column);
    if (!layer || *layer >= m_angular.size() || !std::isfinite(m_angular[*layer])) {
        return std::nullopt;
    }
    return m_angular[*layer];
}

void ThetaHeatmap::showTooltip(QMouseEvent* event) {
    if (const auto row = importanceRowPosition();
        row && std::abs(m_plot->yAxis->pixelToCoord(event->pos().y()) - *row) <= 0.5) {
        const int column = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(event->pos().x())));
        const auto layer = layerOfColumn(column);
        if (const auto angular = importanceAt(column); angular && layer) {
            const double influence = *layer < m_influence.size() ? m_influence[*layer] : std::nan("");
            QToolTip::showText(event->globalPosition().toPoint(),
                               tr("layer %1 (vital signs)\nangular distance %2   block influence %3")
                                   .arg(*layer)
                                   .arg(*angular, 0, 'f', 3)
                                   .arg(influence, 0, 'f', 3),
                               m_plot);
            return;
        }
    }
    const int tensor = tensorAtPixel(event->pos());
    if (tensor < 0) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(), tooltipText(tensor), m_plot);
}

QString ThetaHeatmap::tooltipText(int tensor) const {
    const auto& name = m_snapshot->model->tensors()[static_cast<std::size_t>(tensor)].name;
    const auto& r = result(tensor);
    QString text = model::displayText(name);
    if (m_mode == Mode::Delta) {
        const auto& value = m_values[static_cast<std::size_t>(tensor)];
        const QString& detail = m_details[static_cast<std::size_t>(tensor)];
        text += u'\n' + (!detail.isEmpty() ? detail
                         : value           ? metricValueText(m_metric, *value)
                                           : tr("no measured counterpart"));
    } else if (!r) {
        text += tr("\nnot measured yet");
    } else if (r->constant) {
        text += tr("\nconstant: no θ");
    } else if (r->hasTheta()) {
        text += tr("\nθ %1°   H %2   K %3   C %4")
                    .arg(*r->theta, 0, 'f', 2)
                    .arg(*r->H, 0, 'f', 3)
                    .arg(*r->K, 0, 'f', 2)
                    .arg(*r->C, 0, 'f', 2);
        if (r->nonFinite != 0) {
            text += tr("\n%1 NaN or infinite values left out").arg(r->nonFinite);
        }
    }
    if (m_mode == Mode::Theta && !m_previewOf.empty() && m_previewOf[static_cast<std::size_t>(tensor)] >= 0) {
        const PreviewCell& p =
            m_preview[static_cast<std::size_t>(m_previewOf[static_cast<std::size_t>(tensor)])];
        text += p.merged ? tr("\nthe plan merges it (%1)").arg(p.donorName)
                         : tr("\nthe plan replaces it from %1").arg(p.donorName);
        if (p.theta) {
            text += tr(": θ %1° → %2°")
                        .arg(r && r->theta ? QString::number(*r->theta, 'f', 2) : QStringLiteral("?"))
                        .arg(*p.theta, 0, 'f', 2);
            if (r && r->theta) {
                text += tr(" (Δθ %1%2°)")
                            .arg(*p.theta >= *r->theta ? QStringLiteral("+") : QString())
                            .arg(*p.theta - *r->theta, 0, 'f', 2);
            }
        } else if (p.merged) {
            text += tr(": θ being computed");
        }
    }
    return text;
}

void ThetaHeatmap::setPreview(const std::vector<PreviewCell>& cells) {
    // Donor views are told "no preview" at every tab change: nothing to redraw then.
    if (m_theta == nullptr || m_mode != Mode::Theta || (cells.empty() && m_preview.empty())) {
        return;
    }
    m_preview = cells;
    m_previewOf.assign(m_snapshot->model->tensors().size(), -1);
    for (QCPItemRect* mark : m_previewMarks) {
        m_plot->removeItem(mark);
    }
    m_previewMarks.clear();
    for (std::size_t k = 0; k < m_preview.size(); ++k) {
        const int tensor = m_preview[k].tensor;
        if (tensor < 0 || static_cast<std::size_t>(tensor) >= m_previewOf.size()) {
            continue;
        }
        m_previewOf[static_cast<std::size_t>(tensor)] = static_cast<int>(k);
        const auto [column, row] = cellOf(tensor);
        auto* mark = new QCPItemRect(m_plot);
        mark->setPen(m_preview[k].merged ? QPen(model::mergeColor(), 2.5, Qt::SolidLine)
                     : m_preview[k].purified
                         ? QPen(model::purifyColor(), 2.5, Qt::DotLine)
                         : QPen(model::donorColor(m_preview[k].donor), 2.5, Qt::DashLine));
        mark->setBrush(Qt::NoBrush);
        mark->topLeft->setCoords(column - 0.42, row - 0.42);
        mark->bottomRight->setCoords(column + 0.42, row + 0.42);
        m_previewMarks.push_back(mark);
    }
    for (std::size_t t = 0; t < m_previewOf.size(); ++t) {
        refreshCell(static_cast<int>(t));
    }
    if (m_preview.empty()) {
        m_previewOf.clear();
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

std::optional<double> ThetaHeatmap::shownThetaAt(int column, int row) const {
    const int tensor = tensorAt(column, row);
    if (tensor >= 0 && !m_previewOf.empty() && m_previewOf[static_cast<std::size_t>(tensor)] >= 0) {
        return m_preview[static_cast<std::size_t>(m_previewOf[static_cast<std::size_t>(tensor)])].theta;
    }
    return thetaAt(column, row);
}

} // namespace organ::widgets
