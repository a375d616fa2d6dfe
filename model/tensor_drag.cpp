#include "tensor_drag.h"

#include <QCoreApplication>
#include <QDataStream>
#include <QIODevice>
#include <QMimeData>
#include <algorithm>

namespace organ::model {
namespace {

constexpr quint32 kMaxTensors = 1u << 24;

} // namespace

QMimeData* encodeTensorDrag(const TensorDrag& drag) {
    QByteArray bytes;
    QDataStream out(&bytes, QIODevice::WriteOnly);
    out.setVersion(QDataStream::Qt_6_0);
    out << kTensorMimeVersion << static_cast<quint8>(drag.pick) << drag.model
        << static_cast<quint32>(drag.tensors.size());
    for (int t : drag.tensors) {
        out << static_cast<qint32>(t);
    }
    auto* data = new QMimeData;
    data->setData(QString::fromLatin1(kTensorMimeType), bytes);
    return data;
}

std::optional<TensorDrag> decodeTensorDrag(const QMimeData* data) {
    if (data == nullptr || !data->hasFormat(QString::fromLatin1(kTensorMimeType))) {
        return std::nullopt;
    }
    const QByteArray bytes = data->data(QString::fromLatin1(kTensorMimeType));
    QDataStream in(bytes);
    in.setVersion(QDataStream::Qt_6_0);
    quint8 version = 0;
    quint8 pick = 0;
    quint32 count = 0;
    TensorDrag drag;
    in >> version >> pick >> drag.model >> count;
    if (in.status() != QDataStream::Ok || version != kTensorMimeVersion ||
        pick > static_cast<quint8>(TensorDrag::Pick::Column) || count == 0 || count > kMaxTensors ||
        count > static_cast<quint32>(bytes.size() / 4)) {
        return std::nullopt;
    }
    drag.pick = static_cast<TensorDrag::Pick>(pick);
    drag.tensors.reserve(count);
    for (quint32 i = 0; i < count; ++i) {
        qint32 t = -1;
        in >> t;
        if (t < 0 || (!drag.tensors.empty() && t <= drag.tensors.back())) {
            return std::nullopt;
        }
        drag.tensors.push_back(t);
    }
    if (in.status() != QDataStream::Ok || !in.atEnd()) {
        return std::nullopt;
    }
    return drag;
}

bool mergesOnDrop(Qt::KeyboardModifiers modifiers) {
    return modifiers.testFlag(Qt::ShiftModifier);
}

QString dragTooltip(const QString& message, bool fits, bool merge, bool mergeFits) {
    if (!fits || merge || !mergeFits || message.isEmpty()) {
        return message;
    }
    return message + QLatin1Char('\n') +
           QCoreApplication::translate("organ::model", "Hold Shift to merge them instead of replacing");
}

} // namespace organ::model
