#pragma once

#include "gguf/gguf_model.h"

#include <QAbstractTableModel>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace organ::model {

class GraftDocument;

// Every metadata key of a model: key, value type, value (arrays by length and first items). With a
// graft document, the values the plan sets or removes are shown in their place (EditStateRole
// says which), keys it adds follow the model's, and edits become the plan's operations: a value's
// text (setData, Qt::EditRole) is read as its type, a bool is a check box.
class MetadataTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Key, Type, Value, ColumnCount };
    enum class EditState { Unchanged, Edited, Added, Removed };

    explicit MetadataTableModel(QObject* parent = nullptr);
    void setModel(std::shared_ptr<const GgufModel> model);
    // Edits go through `document` as the plan of the model at `path`; null: read only. Follows
    // the document's changes.
    void setDocument(GraftDocument* document, const QString& path);
    bool isEditable() const { return m_document != nullptr; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

    const std::string& key(int row) const { return m_rows[static_cast<std::size_t>(row)].key; }
    // The value shown: the plan's pending one, else the model's; null when the plan removes it.
    const MetaValue* value(int row) const;
    EditState editState(int row) const;
    // The plan's operations, through the document: the refusal (also emitted), or empty.
    QString edit(int row, const MetaValue& value);
    QString remove(int row);
    // Drops the row's pending edit (the model's value again).
    QString revert(int row);
    // The text an editor starts from and setData reads: a string as it is, other types as JSON.
    static QString editText(const MetaValue& value);
    // `text` read as a value of `value`'s type; nullopt with `problem` set when it is not one.
    static std::optional<MetaValue> parseText(const MetaValue& like, const QString& text, QString* problem);

signals:
    void editRefused(const QString& reason);

private:
    struct Row {
        std::string key;
        const MetaValue* original = nullptr;             // the model's, null for a key the plan adds
        std::optional<std::optional<MetaValue>> pending; // set: an edit (nullopt inside: removed)
    };
    void rebuild();
    QString refused(const QString& reason);

    std::shared_ptr<const GgufModel> m_model;
    GraftDocument* m_document = nullptr; // outlives the table (the window owns it)
    QString m_path;
    std::vector<Row> m_rows;
};

} // namespace organ::model
