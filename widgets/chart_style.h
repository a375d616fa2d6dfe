#pragma once

#include <QSharedPointer>

#include <functional>

class QCPAxisTicker;
class QCPAbstractItem;
class QCPTextElement;
class QCustomPlot;
class QObject;
class QString;

namespace organ::widgets {

// Paints a chart in the colours of its widget palette (background, axes, labels, grids,
// titles, legends, colour scales) at every replot, and replots when the palette changes:
// charts stay readable in a dark palette.
void followPalette(QCustomPlot* plot);

// Keeps a chart readable at whatever width its pane gives it, at every replot: texts set with
// setWrappedText() break into lines that fit, each legend shows as many columns as its widest
// entry allows (one at the least), and names on a horizontal axis turn when they would run into
// each other.
void fitToWidth(QCustomPlot* plot);
// The same, once, for a drawing `width` pixels wide (an export at another size than the screen's).
void fitChartTo(QCustomPlot* plot, int width);
// A title or caption that fitToWidth() wraps at spaces ("\n" still starts a line), and the
// text it wraps (empty when it is not wrapped).
void setWrappedText(QCPTextElement* element, const QString& text);
QString wrappedSource(const QCPTextElement* element);
// Back to a text that is not wrapped.
void setUnwrappedText(QCPTextElement* element, const QString& text);

// A bold title above the chart, in a row of its own (the layout's first).
QCPTextElement* addChartTitle(QCustomPlot* plot, const QString& text);
// The legend under the chart (the layout's third row, after the title's and the axes'): it never
// hides a point.
void legendBelow(QCustomPlot* plot);

// Marks an item (a selection outline, a hover mark) as the screen's only: exports leave it out.
void setScreenOnly(QCPAbstractItem* item);
bool isScreenOnly(const QCPAbstractItem* item);

// Ticks for whole-number axes (layers, Haar levels): multiples of 1, or of 2, 5, 10… when
// there are many, never 2.5.
QSharedPointer<QCPAxisTicker> integerTicker();

// For results that arrive one tensor at a time: calls `redraw` `delayMs` after the first of any
// number of calls made while it waits (`pending` is true meanwhile), unless `context` is gone.
void redrawSoon(QObject* context, bool& pending, int delayMs, std::function<void()> redraw);

} // namespace organ::widgets
