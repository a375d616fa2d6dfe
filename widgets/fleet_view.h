#pragma once

#include "fleet/fleet.h"

#include <QString>
#include <QWidget>
#include <memory>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QCPTextElement;
class QLineEdit;
class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace organ::model {
class FleetTableModel;
}

namespace organ::widgets {

// A fleet of models measured and ranked (organ fleet in the window): a sortable, filterable
// table; θ mean against parameters on a log axis with the least-squares scale law of the models
// shown, each point named on hover; θ per anatomical system of the selected models as bars.
// A row opens as recipient (double click) or donor (context menu) through openRequested.
class FleetView : public QWidget {
    Q_OBJECT
public:
    FleetView(std::shared_ptr<const FleetReport> report, QString title, QWidget* parent = nullptr);

    QTableView* table() const { return m_table; }
    QLineEdit* filter() const { return m_filter; }
    QCustomPlot* scatterPlot() const { return m_scatter; }
    QCustomPlot* systemPlot() const { return m_systems; }
    // The model a point of the scatter chart at `pixel` (plot coordinates) stands for, as its
    // hover tip says; empty away from every point.
    QString pointLabelAt(const QPoint& pixel) const;
    // The scale law of the models the filter shows, as the chart draws it.
    const ScaleLaw& shownLaw() const { return m_law; }
    // Rows of the report drawn in the scatter chart and in the bars.
    const std::vector<std::size_t>& shownRows() const { return m_shown; }
    const std::vector<std::size_t>& barRows() const { return m_barRows; }

signals:
    void openRequested(const QString& path, bool asDonor);

private:
    void refreshScatter();
    void refreshBars();
    // " (filter “q4”)" while the table is filtered, for titles of exported charts.
    QString filterText() const;
    void showTableMenu(const QPoint& at);
    int nearestPoint(const QPoint& pixel) const;

    std::shared_ptr<const FleetReport> m_report;
    QString m_title;
    model::FleetTableModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QTableView* m_table = nullptr;
    QLineEdit* m_filter = nullptr;
    QLabel* m_summary = nullptr;
    QCustomPlot* m_scatter = nullptr;
    QCustomPlot* m_systems = nullptr;
    QCPGraph* m_points = nullptr;
    QCPGraph* m_selectedPoints = nullptr;
    QCPGraph* m_fit = nullptr;
    QCPTextElement* m_scatterTitle = nullptr;
    QCPTextElement* m_systemsTitle = nullptr;
    std::vector<std::size_t> m_shown;   // report rows with a point, by parameters: the graph's order
    std::vector<std::size_t> m_barRows; // report rows in the bars
    ScaleLaw m_law;
    QString m_lawText; // the law as the scatter's title states it
};

} // namespace organ::widgets
