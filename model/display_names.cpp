#include "display_names.h"

#include "gguf_model.h"

#include <QFileInfo>
#include <QRegularExpression>

namespace organ::model {

QString modelDisplayName(const GgufModel& model) {
    QString name = QFileInfo(QString::fromStdString(model.path())).completeBaseName();
    static const QRegularExpression shard(QStringLiteral("-\\d{5}-of-\\d{5}$"));
    name.remove(shard);
    return name;
}

QString countOf(qint64 n, const QString& one, const QString& many) {
    return QString::number(n) + u' ' + (n == 1 ? one : many);
}

} // namespace organ::model
