#include "metadata_table_model.h"
#include "column_titles.h"
#include "display_names.h"

#include "graft_document.h"
#include "model_roles.h"

#include "graft/graft_plan.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <nlohmann/json.hpp>

namespace organ::model {
namespace {

// Values are shown on one line; a whole chat template or vocabulary would not fit.
QString shortened(const std::string& text, qsizetype limit) {
    QString value = QString::fromUtf8(text.data(), qsizetype(text.size()));
    value.replace(u'\n', QStringLiteral("⏎"));
    return value.size() > limit ? value.left(limit) + QStringLiteral(" …") : value;
}

} // namespace

MetadataTableModel::MetadataTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void MetadataTableModel::setModel(std::shared_ptr<const GgufModel> model) {
    beginResetModel();
    m_model = std::move(model);
    rebuild();
    endResetModel();
}

void MetadataTableModel::setDocument(GraftDocument* document, const QString& path) {
    if (m_document == document && m_path == path) {
        return;
    }
    if (m_document) {
        disconnect(m_document, nullptr, this, nullptr);
    }
    beginResetModel();
    m_document = document;
    m_path = path;
    rebuild();
    endResetModel();
    if (document != nullptr) {
        connect(document, &GraftDocument::changed, this, [this] {
            const auto before = m_rows.size();
            std::vector<Row> old = m_rows;
            rebuild();
            if (m_rows.size() != before) {
                std::swap(old, m_rows);
                beginResetModel();
                std::swap(old, m_rows);
                endResetModel();
            } else if (!m_rows.empty()) {
                emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
            }
        });
    }
}

// The model's keys in file order with the plan's edits of them, then the keys the plan adds.
void MetadataTableModel::rebuild() {
    m_rows.clear();
    if (!m_model) {
        return;
    }
    for (const MetaEntry& entry : m_model->metadata()) {
        m_rows.push_back({entry.key, &entry.value, std::nullopt});
    }
    if (!m_document) {
        return;
    }
    for (auto& [key, value] : m_document->metadataEdits(m_path)) {
        const auto row =
            std::find_if(m_rows.begin(), m_rows.end(), [&](const Row& r) { return r.key == key; });
        if (row != m_rows.end()) {
            row->pending = std::move(value);
        } else if (value) { // removing a key the model does not have changes nothing
            m_rows.push_back({key, nullptr, std::move(value)});
        }
    }
}

int MetadataTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int MetadataTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

const MetaValue* MetadataTableModel::value(int row) const {
    const Row& r = m_rows[static_cast<std::size_t>(row)];
    if (r.pending) {
        return r.pending->has_value() ? &**r.pending : nullptr;
    }
    return r.original;
}

MetadataTableModel::EditState MetadataTableModel::editState(int row) const {
    const Row& r = m_rows[static_cast<std::size_t>(row)];
    if (!r.pending) {
        return EditState::Unchanged;
    }
    if (!r.pending->has_value()) {
        return EditState::Removed;
    }
    return r.original != nullptr ? EditState::Edited : EditState::Added;
}

QVariant MetadataTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) {
        return {};
    }
    const Row& row = m_rows[static_cast<std::size_t>(index.row())];
    const EditState state = editState(index.row());
    // A removed key shows the value it had.
    const MetaValue* shown = state == EditState::Removed ? row.original : value(index.row());
    if (role == EditStateRole) {
        return int(state);
    }
    if (role == Qt::CheckStateRole && index.column() == Value && shown->type() == ValueType::Bool) {
        return shown->asBool().value_or(false) ? Qt::Checked : Qt::Unchecked;
    }
    if (role == Qt::EditRole && index.column() == Value) {
        return editText(*shown);
    }
    if (role == Qt::DisplayRole || role == SortRole || role == FilterRole) {
        switch (index.column()) {
        case Key:
            return displayText(row.key);
        case Type: {
            const auto name = valueTypeName(shown->type());
            QString type = QString::fromUtf8(name.data(), qsizetype(name.size()));
            if (shown->isArray()) {
                const auto element = valueTypeName(shown->elementType());
                type += u'[' + QString::fromUtf8(element.data(), qsizetype(element.size())) + u']';
            }
            return type;
        }
        case Value:
            return shortened(shown->toDisplay(8), 300);
        default:
            return {};
        }
    }
    if (role == Qt::ToolTipRole && index.column() == Value) {
        const QString text = shortened(shown->toDisplay(64), 4000);
        switch (state) {
        case EditState::Edited:
            return QString(tr("Edited in the plan (was %1)").arg(shortened(row.original->toDisplay(8), 300)) +
                           u'\n' + text);
        case EditState::Added:
            return QString(tr("Added by the plan") + u'\n' + text);
        case EditState::Removed:
            return tr("Removed by the plan");
        case EditState::Unchanged:
            return text;
        }
    }
    return {};
}

Qt::ItemFlags MetadataTableModel::flags(const QModelIndex& index) const {
    Qt::ItemFlags flags = QAbstractTableModel::flags(index);
    if (!index.isValid() || !m_document || index.column() != Value ||
        editState(index.row()) == EditState::Removed) {
        return flags;
    }
    if (value(index.row())->type() == ValueType::Bool) {
        return flags | Qt::ItemIsUserCheckable;
    }
    return flags | Qt::ItemIsEditable;
}

bool MetadataTableModel::setData(const QModelIndex& index, const QVariant& data, int role) {
    if (!index.isValid() || index.column() != Value ||
        !(flags(index) & (Qt::ItemIsEditable | Qt::ItemIsUserCheckable))) {
        return false;
    }
    const MetaValue& like = *value(index.row());
    if (role == Qt::CheckStateRole && like.type() == ValueType::Bool) {
        return edit(index.row(), MetaValue::fromBool(data.toInt() == Qt::Checked)).isEmpty();
    }
    if (role != Qt::EditRole) {
        return false;
    }
    QString problem;
    const auto parsed = parseText(like, data.toString(), &problem);
    if (!parsed) {
        refused(problem);
        return false;
    }
    return edit(index.row(), *parsed).isEmpty();
}

QString MetadataTableModel::refused(const QString& reason) {
    if (!reason.isEmpty()) {
        emit editRefused(reason);
    }
    return reason;
}

QString MetadataTableModel::edit(int row, const MetaValue& value) {
    if (!m_document) {
        return refused(tr("The metadata of a donor is read only: edit the recipient's"));
    }
    return refused(m_document->setMetadata(m_path, key(row), value));
}

QString MetadataTableModel::remove(int row) {
    if (!m_document) {
        return refused(tr("The metadata of a donor is read only: edit the recipient's"));
    }
    return refused(m_document->removeMetadata(m_path, key(row)));
}

QString MetadataTableModel::revert(int row) {
    const Row& r = m_rows[static_cast<std::size_t>(row)];
    if (!m_document || !r.pending) {
        return {};
    }
    return r.original != nullptr ? edit(row, *r.original) : remove(row);
}

QString MetadataTableModel::editText(const MetaValue& value) {
    if (const auto text = value.asString(); text && !value.isArray()) {
        return QString::fromUtf8(text->data(), qsizetype(text->size()));
    }
    if (value.isArray()) {
        // Every element as its JSON value: the array metadataValueFromJson reads back.
        return QString::fromStdString(value.toJson(value.arraySize())["items"].dump(1));
    }
    if (value.type() == ValueType::F32 || value.type() == ValueType::F64) {
        // The shortest text that reads back as the same number (1e-05, not 9.99999974737875e-06).
        std::array<char, 64> digits{};
        const auto end =
            value.type() == ValueType::F32
                ? std::to_chars(digits.data(), digits.data() + digits.size(), float(*value.asFloat())).ptr
                : std::to_chars(digits.data(), digits.data() + digits.size(), *value.asFloat()).ptr;
        return QString::fromLatin1(digits.data(), end - digits.data());
    }
    return QString::fromStdString(value.toJson(0).dump());
}

std::optional<MetaValue> MetadataTableModel::parseText(const MetaValue& like, const QString& text,
                                                       QString* problem) {
    const std::string type = metadataTypeName(like);
    if (type == "string") {
        return MetaValue::fromString(text.toStdString());
    }
    try {
        return metadataValueFromJson(type, nlohmann::json::parse(text.trimmed().toStdString()));
    } catch (const std::exception& error) {
        *problem = tr("'%1' is not a %2: %3")
                       .arg(shortened(text.toStdString(), 80), QString::fromStdString(type),
                            displayText(error.what()));
        return std::nullopt;
    }
}

QVariant MetadataTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    static constexpr const char* titles[] = {QT_TR_NOOP("Key"), QT_TR_NOOP("Type"), QT_TR_NOOP("Value")};
    return columnTitle<ColumnCount>(staticMetaObject, titles, section, orientation, role);
}

} // namespace organ::model
