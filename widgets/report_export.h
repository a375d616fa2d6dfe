#pragma once

#include "measure/measure_report.h"

#include <QString>

namespace organ::widgets {

// Writes a measurement report chosen by the file's extension: .json (the `organ measure
// --json` document), .csv or .md, through the engine's SafeOutput (never over an open model
// or a special file; replaced atomically); on failure it is left untouched, `error` names the
// file and the problem and the result is false.
bool writeMeasurementReport(const MeasuredModel& model, const QString& path, QString* error);

// The file dialog's filters for writeMeasurementReport, JSON first.
QString measurementReportFilters();

} // namespace organ::widgets
