#pragma once

class QCustomPlot;

namespace organ::widgets {

// Paints a chart in the colours of its widget palette (background, axes, labels, grids,
// titles, legends, colour scales) at every replot, and replots when the palette changes:
// charts stay readable in a dark palette.
void followPalette(QCustomPlot* plot);

} // namespace organ::widgets
