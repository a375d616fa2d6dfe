#pragma once

#include "measure/spectral.h"

#include <vector>

class QCustomPlot;

namespace organ::widgets {

// A matrix's eigenvalue spectrum on log-log axes, as a rank plot: each positive eigenvalue λ
// (x, exactly as measure/spectral gives it) against the share of eigenvalues ≥ λ (y). A power-law
// tail is a straight line there: the fit's line, (n/m)·(λ/xmin)^(1−α) from xmin to λmax, with
// xmin marked; α, D and the tail in the legend. Graph 0 is the points, graph 1 the fitted line.
// `lambda` empty: the axes alone.
// Once, on a plot whose layout is a title (row 0) over the axes (row 1): the legend goes under the
// axes, one entry a line, so that it never hides a point.
void setUpEigenvaluePlot(QCustomPlot* plot);
void drawEigenvalueSpectrum(QCustomPlot* plot, const std::vector<double>& lambda, const SpectralFit& fit);

} // namespace organ::widgets
