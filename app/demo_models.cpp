#include "demo_models.h"

#include "gguf/specimen.h"

#include <QDir>

namespace organ::app {

QStringList writeDemoModels(const QString& folder, QString* error) {
    QStringList paths;
    const struct {
        const char* name;
        std::uint64_t seed;
    } demos[] = {{"specimen-recipient.gguf", 1}, {"specimen-donor.gguf", 2}};
    for (const auto& demo : demos) {
        const QString path = QDir(folder).filePath(QString::fromLatin1(demo.name));
        const JobResult result = writeSpecimen(path.toStdString(), demo.seed);
        if (!result.isOk()) {
            *error = QString::fromStdString(result.message);
            return {};
        }
        paths << path;
    }
    return paths;
}

} // namespace organ::app
