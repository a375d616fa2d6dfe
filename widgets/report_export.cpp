#include "report_export.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QSaveFile>

namespace organ::widgets {

bool writeMeasurementReport(const MeasuredModel& model, const QString& path, QString* error) {
    const std::vector<MeasuredModel> models{model};
    const QString suffix = QFileInfo(path).suffix().toLower();
    std::string text;
    if (suffix == QStringLiteral("json")) {
        text = measurementsDocument(models).dump(2) + "\n";
    } else if (suffix == QStringLiteral("csv")) {
        text = measurementsCsv(models);
    } else if (suffix == QStringLiteral("md")) {
        text = measurementsMarkdown(models);
    } else {
        *error = QFileInfo(path).fileName() +
                 QCoreApplication::translate("organ", ": choose a .json, .csv or .md file");
        return false;
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(text.data(), qint64(text.size())) != qint64(text.size()) || !file.commit()) {
        *error = QFileInfo(path).fileName() + QCoreApplication::translate("organ", ": cannot write: ") +
                 file.errorString();
        return false;
    }
    return true;
}

QString measurementReportFilters() {
    return QCoreApplication::translate("organ", "JSON (*.json);;CSV (*.csv);;Markdown report (*.md)");
}

} // namespace organ::widgets
