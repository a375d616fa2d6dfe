#include "report_export.h"

#include "display_names.h"
#include "support/safe_files.h"
#include "support/text_safety.h"

#include <QCoreApplication>
#include <QFileInfo>

namespace organ::widgets {

bool writeMeasurementReport(const MeasuredModel& model, const QString& path, QString* error) {
    const std::vector<MeasuredModel> models{model};
    const QString suffix = QFileInfo(path).suffix().toLower();
    std::string text;
    if (suffix == QStringLiteral("json")) {
        text = dumpJson(measurementsDocument(models), 2) + "\n";
    } else if (suffix == QStringLiteral("csv")) {
        text = measurementsCsv(models);
    } else if (suffix == QStringLiteral("md")) {
        text = measurementsMarkdown(models);
    } else {
        *error = QFileInfo(path).fileName() +
                 QCoreApplication::translate("organ", ": choose a .json, .csv or .md file");
        return false;
    }
    try {
        writeFileSafely(path.toStdString(), text, {model.model->path()});
        return true;
    } catch (const std::exception& e) {
        *error = model::displayText(e.what());
        return false;
    }
}

QString measurementReportFilters() {
    return QCoreApplication::translate("organ", "JSON (*.json);;CSV (*.csv);;Markdown report (*.md)");
}

} // namespace organ::widgets
