#pragma once

#include <QMetaObject>
#include <QString>
#include <QVariant>

#include <cstddef>

namespace organ::model {

// A table model's header: `titles` are its column titles in the order of its Column enum, one for each
// of its `Count` columns, marked with QT_TR_NOOP inside the model's headerData() so that they are
// translated in the model's class (`model`, its staticMetaObject), as tr() there would. The title of
// `section` for the horizontal header's display role; null for any other section, orientation or role.
template <int Count, std::size_t N>
QVariant columnTitle(const QMetaObject& model, const char* const (&titles)[N], int section,
                     Qt::Orientation orientation, int role) {
    static_assert(N == std::size_t(Count), "one title for each column");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= Count) {
        return {};
    }
    return model.tr(titles[section], nullptr);
}

} // namespace organ::model
