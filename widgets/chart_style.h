#pragma once

#include <QSharedPointer>

class QCPAxisTicker;
class QCustomPlot;

namespace organ::widgets {

// Paints a chart in the colours of its widget palette (background, axes, labels, grids,
// titles, legends, colour scales) at every replot, and replots when the palette changes:
// charts stay readable in a dark palette.
void followPalette(QCustomPlot* plot);

// Ticks for whole-number axes (layers, Haar levels): multiples of 1, or of 2, 5, 10… when
// there are many, never 2.5.
QSharedPointer<QCPAxisTicker> integerTicker();

} // namespace organ::widgets
