#pragma once

#include <QSize>
#include <QString>
#include <functional>

class QCustomPlot;
class QWidget;

namespace organ::widgets {

// Saves a chart as PNG, SVG or PDF (by the file's extension) at `size` pixels (points for
// PDF). The file is written beside the target and renamed into place. Returns false and
// sets `error` (naming the file) on failure.
bool exportChart(QCustomPlot* plot, const QString& path, QSize size, QString* error);

// The context-menu flow: asks for a file and a size, then exports; errors in a dialog.
void exportChartInteractively(QCustomPlot* plot, QWidget* parent, const QString& suggestedName);

// Gives a chart the context menu "Save as PNG, SVG or PDF…"; `name` is the suggested file
// name, asked for when the menu opens (it may change, e.g. with the model's name).
void installExportMenu(QCustomPlot* plot, QWidget* owner, std::function<QString()> name);

} // namespace organ::widgets
