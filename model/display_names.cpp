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

QColor donorColor(int donor) {
    static const QColor colors[] = {QColor(0xff, 0x8c, 0x00), QColor(0xe0, 0x40, 0xe0),
                                    QColor(0x00, 0xd0, 0xff), QColor(0xff, 0x69, 0xb4),
                                    QColor(0x8b, 0x45, 0x13)};
    return colors[static_cast<std::size_t>(donor) % std::size(colors)];
}

QString countOf(qint64 n, const QString& one, const QString& many) {
    return QString::number(n) + u' ' + (n == 1 ? one : many);
}

} // namespace organ::model
