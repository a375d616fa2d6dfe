#include "fleet_view.h"

#include "chart_export.h"
#include "chart_style.h"
#include "display_names.h"
#include "fleet_table_model.h"
#include "support/text_format.h"
#include "system_theta_charts.h"

#include <QApplication>
#include <QClipboard>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <qcustomplot.h>

namespace organ::widgets {
namespace {

// Models in the bars at most: more would be unreadable.
constexpr std::size_t kMaxBarModels = 8;

// A colour per model in the bars, distinct from one another.
QColor modelColor(std::size_t i) {
    static const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                    QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                    QColor(0xe3, 0x77, 0xc2), QColor(0x17, 0xbe, 0xcf)};
    return colors[i % std::size(colors)];
}

QString rowLabel(const FleetRow& row) {
    return model::displayText(row.name) + QStringLiteral(" (") +
           QFileInfo(QString::fromStdString(row.path)).fileName() + QStringLiteral(")");
}

} // namespace

FleetView::FleetView(std::shared_ptr<const FleetReport> report, QString title, QWidget* parent)
    : QWidget(parent), m_report(std::move(report)), m_title(std::move(title)) {
    setObjectName(QStringLiteral("fleetView"));
    m_model = new model::FleetTableModel(this);
    m_model->setReport(m_report);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(model::FleetTableModel::kSortRole);
    m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_proxy->setFilterKeyColumn(-1);

    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("fleetFilter"));
    m_filter->setPlaceholderText(tr("Filter by name, file, architecture or dtype…"));
    m_filter->setClearButtonEnabled(true);
    m_summary = new QLabel(this);
    m_table = new QTableView(this);
    m_table->setObjectName(QStringLiteral("fleetTable"));
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(model::FleetTableModel::Rank, Qt::AscendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setContextMenuPolicy(Qt::CustomContextMenu);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setWordWrap(false);
    m_table->resizeColumnsToContents();

    m_scatter = new QCustomPlot(this);
    m_scatter->setObjectName(QStringLiteral("fleetScatter"));
    m_systems = new QCustomPlot(this);
    m_systems->setObjectName(QStringLiteral("fleetSystems"));
    for (QCustomPlot* plot : {m_scatter, m_systems}) {
        plot->setMinimumSize(280, 200);
        plot->plotLayout()->insertRow(0);
        followPalette(plot);
        fitToWidth(plot);
    }
    m_scatterTitle = new QCPTextElement(m_scatter, QString(), QFont(font().family(), 10, QFont::Bold));
    m_scatter->plotLayout()->addElement(0, 0, m_scatterTitle);
    m_systemsTitle = new QCPTextElement(m_systems, QString(), QFont(font().family(), 10, QFont::Bold));
    m_systems->plotLayout()->addElement(0, 0, m_systemsTitle);

    m_scatter->xAxis->setScaleType(QCPAxis::stLogarithmic);
    m_scatter->xAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    m_scatter->xAxis->setNumberFormat(QStringLiteral("eb"));
    m_scatter->xAxis->setNumberPrecision(0);
    m_scatter->xAxis->setLabel(tr("parameters"));
    m_scatter->yAxis->setLabel(tr("θ mean (°)"));
    m_fit = m_scatter->addGraph();
    m_fit->setPen(QPen(QColor(0x7f, 0x7f, 0x7f), 1.5, Qt::DashLine));
    m_points = m_scatter->addGraph();
    m_points->setLineStyle(QCPGraph::lsNone);
    m_points->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(0x1f, 0x77, 0xb4), 7));
    m_selectedPoints = m_scatter->addGraph();
    m_selectedPoints->setLineStyle(QCPGraph::lsNone);
    m_selectedPoints->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(0xd6, 0x27, 0x28), 2), Qt::NoBrush, 13));
    m_scatter->setMouseTracking(true);
    connect(m_scatter, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        const QString label = pointLabelAt(event->pos());
        if (label.isEmpty()) {
            QToolTip::hideText();
        } else {
            QToolTip::showText(event->globalPosition().toPoint(), label, m_scatter);
        }
    });
    connect(m_scatter, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* event) {
        if (const int point = nearestPoint(event->pos()); point >= 0) {
            emit openRequested(QString::fromStdString(m_report->rows[m_shown[std::size_t(point)]].path),
                               false);
        }
    });
    m_systems->yAxis->setRange(0, 90);
    m_systems->yAxis->setLabel(tr("θ mean (°)"));
    // The legend below the bars, a row of its own: it never hides a bar.
    m_systems->legend->setVisible(true);
    m_systems->legend->setFont(QFont(font().family(), 8));
    m_systems->legend->setFillOrder(QCPLegend::foColumnsFirst);
    m_systems->legend->setWrap(2);
    m_systems->axisRect()->insetLayout()->take(m_systems->legend);
    m_systems->plotLayout()->addElement(2, 0, m_systems->legend);
    m_systems->plotLayout()->setRowStretchFactor(2, 0.001);
    m_systems->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());

    // The file says what the window shows: the scale law, the models and the filter that chose them.
    installExportMenu(m_scatter, this, [this] {
        return ChartLabel{QStringLiteral("fleet-scale-law"),
                          tr("%1 — θ mean against parameters, %2%3\n%4")
                              .arg(m_title, model::countOf(qint64(m_shown.size()), tr("model"), tr("models")),
                                   filterText(), m_lawText)};
    });
    installExportMenu(m_systems, this, [this] {
        return ChartLabel{QStringLiteral("fleet-theta-per-system"),
                          tr("%1 — θ mean per system of %2%3")
                              .arg(m_title,
                                   model::countOf(qint64(m_barRows.size()), tr("model"), tr("models")),
                                   filterText())};
    });

    auto* top = new QWidget(this);
    auto* topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->addWidget(m_filter);
    topLayout->addWidget(m_table, 1);
    topLayout->addWidget(m_summary);
    auto* charts = new QSplitter(Qt::Horizontal, this);
    charts->addWidget(m_scatter);
    charts->addWidget(m_systems);
    charts->setStretchFactor(0, 3);
    charts->setStretchFactor(1, 2);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(top);
    split->addWidget(charts);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(split);

    connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
        m_proxy->setFilterFixedString(text);
        refreshScatter();
    });
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        refreshScatter();
        refreshBars();
    });
    connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const FleetRow& row = m_model->fleetRow(m_proxy->mapToSource(index).row());
        if (row.ok()) {
            emit openRequested(QString::fromStdString(row.path), false);
        }
    });
    connect(m_table, &QTableView::customContextMenuRequested, this, &FleetView::showTableMenu);
    refreshScatter();
    refreshBars();
}

void FleetView::refreshScatter() {
    m_shown.clear();
    std::vector<FleetRow> visible;
    QVector<double> x;
    QVector<double> y;
    QVector<double> sx;
    QVector<double> sy;
    std::vector<bool> selected(m_report->rows.size(), false);
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows()) {
        selected[std::size_t(m_proxy->mapToSource(index).row())] = true;
    }
    for (int r = 0; r < m_proxy->rowCount(); ++r) {
        const std::size_t row = std::size_t(m_proxy->mapToSource(m_proxy->index(r, 0)).row());
        const FleetRow& f = m_report->rows[row];
        if (f.ok() && f.thetaMean && f.parameters != 0) {
            m_shown.push_back(row);
        }
    }
    // In the graph's own order (by parameters), so that a point's index is its row's in m_shown.
    std::stable_sort(m_shown.begin(), m_shown.end(), [this](std::size_t a, std::size_t b) {
        return m_report->rows[a].parameters < m_report->rows[b].parameters;
    });
    for (std::size_t row : m_shown) {
        const FleetRow& f = m_report->rows[row];
        visible.push_back(f);
        x << double(f.parameters);
        y << *f.thetaMean;
        if (selected[row]) {
            sx << double(f.parameters);
            sy << *f.thetaMean;
        }
    }
    m_points->setData(x, y, true);
    m_selectedPoints->setData(sx, sy, true);
    m_law = fitScaleLaw(visible);
    QString& lawText = m_lawText;
    if (m_law.fitted) {
        const double lo = *std::min_element(x.begin(), x.end());
        const double hi = *std::max_element(x.begin(), x.end());
        m_fit->setData({lo, hi}, {m_law.intercept + m_law.slope * std::log10(lo),
                                  m_law.intercept + m_law.slope * std::log10(hi)});
        lawText = tr("θ = %1 %2 %3·log₁₀ p   r² %4")
                      .arg(m_law.intercept, 0, 'f', 2)
                      .arg(m_law.slope < 0 ? QStringLiteral("−") : QStringLiteral("+"))
                      .arg(std::fabs(m_law.slope), 0, 'f', 2)
                      .arg(m_law.r2, 0, 'f', 3);
    } else {
        m_fit->data()->clear();
        lawText = tr("no scale law: %1").arg(QString::fromStdString(m_law.reason));
    }
    setWrappedText(m_scatterTitle,
                   tr("θ mean against parameters — %1 models\n%2").arg(m_shown.size()).arg(lawText));
    if (!x.isEmpty()) {
        const double lo = *std::min_element(x.begin(), x.end());
        const double hi = *std::max_element(x.begin(), x.end());
        // Whole decades: the log axis then labels powers of ten only, never crowded sub-decades.
        const double firstDecade = std::floor(std::log10(lo));
        const double lastDecade = std::max(std::ceil(std::log10(hi)), firstDecade + 1);
        m_scatter->xAxis->setRange(std::pow(10.0, firstDecade), std::pow(10.0, lastDecade));
        const double ylo = *std::min_element(y.begin(), y.end());
        const double yhi = *std::max_element(y.begin(), y.end());
        m_scatter->yAxis->setRange(std::max(0.0, ylo - 5), std::min(90.0, yhi + 5));
    }
    std::size_t failed = 0;
    for (const FleetRow& row : m_report->rows) {
        failed += row.ok() ? 0 : 1;
    }
    m_summary->setText(tr("%1 models, %2 ranked, %3 unreadable · %4 shown")
                           .arg(m_report->rows.size())
                           .arg(m_report->ranking().size())
                           .arg(failed)
                           .arg(m_proxy->rowCount()));
    m_scatter->replot();
}

QString FleetView::filterText() const {
    return m_filter->text().isEmpty() ? QString() : tr(" (filter “%1”)").arg(m_filter->text());
}

void FleetView::refreshBars() {
    m_systems->clearPlottables();
    m_barRows.clear();
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows()) {
        const std::size_t row = std::size_t(m_proxy->mapToSource(index).row());
        if (m_report->rows[row].ok() && m_barRows.size() < kMaxBarModels) {
            m_barRows.push_back(row);
        }
    }
    m_systems->legend->setVisible(!m_barRows.empty());
    if (m_barRows.empty()) {
        setWrappedText(m_systemsTitle, tr("θ mean per system — select models in the table"));
        m_systems->replot();
        return;
    }
    // Only the systems the selected models have, in anatomical order.
    std::map<std::size_t, double> position;
    for (std::size_t row : m_barRows) {
        for (const FleetSystem& s : m_report->rows[row].systems) {
            for (std::size_t k = 0; k < kSystemCount; ++k) {
                if (s.thetaMean && s.system == systemName(static_cast<System>(k))) {
                    position[k] = 0;
                }
            }
        }
    }
    auto ticks = QSharedPointer<QCPAxisTickerText>::create();
    for (auto& [system, at] : position) {
        at = double(ticks->ticks().size() + 1);
        const auto name = systemName(static_cast<System>(system));
        ticks->addTick(at, QString::fromUtf8(name.data(), qsizetype(name.size())));
    }
    m_systems->xAxis->setTicker(ticks);
    m_systems->xAxis->setRange(0.4, double(position.size()) + 0.6);
    auto* group = new QCPBarsGroup(m_systems);
    const double width = 0.8 / double(m_barRows.size());
    for (std::size_t i = 0; i < m_barRows.size(); ++i) {
        const FleetRow& row = m_report->rows[m_barRows[i]];
        auto* bars = new QCPBars(m_systems->xAxis, m_systems->yAxis);
        // The file's name, as the window names models: general.name often repeats within a fleet.
        bars->setName(QFileInfo(QString::fromStdString(row.path)).completeBaseName());
        bars->setWidth(width);
        bars->setPen(Qt::NoPen);
        bars->setBrush(modelColor(i));
        bars->setBarsGroup(group);
        for (const FleetSystem& s : row.systems) {
            for (const auto& [system, at] : position) {
                if (s.thetaMean && s.system == systemName(static_cast<System>(system))) {
                    bars->addData(at, *s.thetaMean);
                }
            }
        }
    }
    setWrappedText(m_systemsTitle,
                   tr("θ mean per system — %1")
                       .arg(model::countOf(qint64(m_barRows.size()), tr("model"), tr("models"))));
    m_systems->replot();
}

int FleetView::nearestPoint(const QPoint& pixel) const {
    int best = -1;
    double bestDistance = 10.0 * 10.0;
    for (std::size_t i = 0; i < m_shown.size(); ++i) {
        const FleetRow& f = m_report->rows[m_shown[i]];
        const double dx = m_scatter->xAxis->coordToPixel(double(f.parameters)) - pixel.x();
        const double dy = m_scatter->yAxis->coordToPixel(*f.thetaMean) - pixel.y();
        if (dx * dx + dy * dy <= bestDistance) {
            bestDistance = dx * dx + dy * dy;
            best = int(i);
        }
    }
    return best;
}

QString FleetView::pointLabelAt(const QPoint& pixel) const {
    const int point = nearestPoint(pixel);
    if (point < 0) {
        return {};
    }
    const FleetRow& f = m_report->rows[m_shown[std::size_t(point)]];
    return tr("%1\n%2 parameters · θ mean %3°")
        .arg(rowLabel(f), QString::fromStdString(humanCount(f.parameters)))
        .arg(*f.thetaMean, 0, 'f', 2);
}

void FleetView::showTableMenu(const QPoint& at) {
    const QModelIndex index = m_table->indexAt(at);
    if (!index.isValid()) {
        return;
    }
    const FleetRow& row = m_model->fleetRow(m_proxy->mapToSource(index).row());
    const QString path = QString::fromStdString(row.path);
    QMenu menu(this);
    menu.setObjectName(QStringLiteral("fleetRowMenu"));
    QAction* recipient =
        menu.addAction(tr("Open as recipient"), this, [this, path] { emit openRequested(path, false); });
    QAction* donor =
        menu.addAction(tr("Open as donor"), this, [this, path] { emit openRequested(path, true); });
    recipient->setEnabled(row.ok());
    donor->setEnabled(row.ok());
    menu.addAction(tr("Copy path"), this, [path] { QApplication::clipboard()->setText(path); });
    menu.exec(m_table->viewport()->mapToGlobal(at));
}

} // namespace organ::widgets
