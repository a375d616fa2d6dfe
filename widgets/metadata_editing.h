#pragma once

#include <QDialog>
#include <QStyledItemDelegate>

#include <memory>

class QLabel;
class QPlainTextEdit;
class QTableView;

namespace organ {
class GgufModel;
}

namespace organ::model {
class GraftDocument;
class MetadataTableModel;
} // namespace organ::model

namespace organ::widgets {

// The metadata table's cells: the plan's edits in bold, removed keys struck out; a value edited in
// place by an editor of its type (integers within the range of their GGUF type, floats, strings on
// one line; bools are check boxes). Long strings — a chat template — and arrays have no editor in
// the cell: isMultiLine() says so, and MetadataTextDialog edits them.
class MetadataDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    // A value edited in the multi-line editor rather than in its cell.
    static bool isMultiLine(const model::MetadataTableModel& model, int row);

    QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option,
                          const QModelIndex& index) const override;

protected:
    void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override;
};

// A metadata value in a multi-line editor: a string as it is (a chat template), any other value
// as JSON (an array as a JSON array). OK sets it through the table's model — the plan's operation —
// and stays open with the reason when the text is not a value of the key's type or the plan
// refuses it.
class MetadataTextDialog : public QDialog {
    Q_OBJECT
public:
    MetadataTextDialog(model::MetadataTableModel* model, int row, QWidget* parent);
    QPlainTextEdit* editor() const { return m_text; }
    QLabel* problem() const { return m_problem; }

    void accept() override;

private:
    model::MetadataTableModel* m_model;
    int m_row;
    QPlainTextEdit* m_text = nullptr;
    QLabel* m_problem = nullptr;
};

// A model's Metadata tab: its keys in a sortable table and a note above it. On the recipient of a
// graft plan the values are edited (MetadataDelegate in the cell, MetadataTextDialog for long
// ones; the context menu removes a key or goes back to the model's value) and the note counts the
// plan's edits or says why the last was refused.
class MetadataPage : public QWidget {
    Q_OBJECT
public:
    MetadataPage(std::shared_ptr<const GgufModel> model, QWidget* parent = nullptr);

    QTableView* table() const { return m_table; }
    model::MetadataTableModel* tableModel() const { return m_model; }
    QLabel* note() const { return m_note; }
    // Edits go to `document` when the model is its recipient; read only otherwise.
    void setDocument(model::GraftDocument* document, bool recipient);
    // Opens the value of the table model's `row` in the multi-line editor.
    void editText(int row);

private:
    void showMenu(const QPoint& at);
    void showEdits();

    std::shared_ptr<const GgufModel> m_gguf;
    model::GraftDocument* m_document = nullptr;
    bool m_recipient = false;
    model::MetadataTableModel* m_model = nullptr;
    QTableView* m_table = nullptr;
    QLabel* m_note = nullptr;
};

} // namespace organ::widgets
