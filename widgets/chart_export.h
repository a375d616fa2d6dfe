#pragma once

#include <QSize>
#include <QString>
#include <functional>

class QCustomPlot;
class QMenu;
class QPoint;
class QWidget;

namespace organ::widgets {

// What a chart is called when it is saved: the file name suggested (without extension) and
// the title drawn above it in the file, naming the model, tensor or comparison.
//
// Why a struct: under QT_USE_QSTRINGBUILDER, `a + b` of QStrings is a lazy builder that
// refers to its operands. A callback returning `a + b` as a QString-converting type hands
// back a builder whose temporaries are gone (this crashed every chart export once). A
// ChartLabel cannot be made from a builder without converting it inside the callback.
struct ChartLabel {
    QString fileName;
    QString title;
};
using ChartLabelFn = std::function<ChartLabel()>;

// Saves a chart as PNG, SVG or PDF (by the file's extension) at `size` pixels (points for
// PDF), with `title` above it (none when empty). The file is written beside the target and
// renamed into place. Returns false and sets `error` (naming the file) on failure.
bool exportChart(QCustomPlot* plot, const QString& path, QSize size, const QString& title, QString* error);

// The context-menu flow: asks for a file (dialog "chartFileDialog") and a size (dialog
// "chartSizeDialog"), then exports; errors in a dialog.
void exportChartInteractively(QCustomPlot* plot, QWidget* parent, const ChartLabel& label);

// Gives a chart the context menu "Save as PNG, SVG or PDF…"; `label` is asked for when the
// menu is used (the names may change, e.g. with the selected tensor). `extras`, when given, adds
// the chart's own actions above it (the point is in the plot's coordinates).
using MenuExtrasFn = std::function<void(QMenu& menu, const QPoint& at)>;
void installExportMenu(QCustomPlot* plot, QWidget* owner, ChartLabelFn label, MenuExtrasFn extras = {});

// A chart's last steps of set-up, as most charts take them: the export menu above (the chart its
// own owner), then followPalette() and fitToWidth().
void finishChart(QCustomPlot* plot, ChartLabelFn label);

} // namespace organ::widgets
