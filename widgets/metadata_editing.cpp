#include "metadata_editing.h"

#include "display_names.h"
#include "exact_text.h"
#include "graft/graft_plan.h"
#include "graft_document.h"
#include "metadata_table_model.h"
#include "model_roles.h"
#include "row_table.h"
#include "wrapped_label.h"

#include <QDialogButtonBox>
#include <QDoubleValidator>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>
#include <limits>
#include <optional>

namespace organ::widgets {
namespace {

using EditState = model::MetadataTableModel::EditState;

// Strings longer than this, or of more than one line, are edited in the dialog.
constexpr qsizetype kLongString = 120;

// An integer of a GGUF type: digits with an optional sign, within [min, max]. Held as text, so
// that u64 and i64 keep every digit.
class IntegerValidator : public QValidator {
public:
    IntegerValidator(long double min, long double max, QObject* parent)
        : QValidator(parent), m_min(min), m_max(max) {}

    State validate(QString& input, int&) const override {
        const QString text = input.trimmed();
        if (text.isEmpty() || text == QStringLiteral("-")) {
            return m_min < 0 || text.isEmpty() ? Intermediate : Invalid;
        }
        bool ok = false;
        const long double value =
            text.startsWith(u'-') ? static_cast<long double>(text.toLongLong(&ok)) : text.toULongLong(&ok);
        if (!ok) {
            return Invalid;
        }
        return value >= m_min && value <= m_max ? Acceptable : Invalid;
    }

private:
    long double m_min;
    long double m_max;
};

const model::MetadataTableModel* sourceOf(const QModelIndex& index, int* row) {
    const QAbstractItemModel* model = index.model();
    QModelIndex source = index;
    while (const auto* proxy = qobject_cast<const QAbstractProxyModel*>(model)) {
        source = proxy->mapToSource(source);
        model = proxy->sourceModel();
    }
    *row = source.row();
    return qobject_cast<const model::MetadataTableModel*>(model);
}

// The range of an integer type, or nullopt for another type.
std::optional<std::pair<long double, long double>> integerRange(ValueType type) {
    switch (type) {
    case ValueType::U8:
        return std::pair{0.0L, 255.0L};
    case ValueType::I8:
        return std::pair{-128.0L, 127.0L};
    case ValueType::U16:
        return std::pair{0.0L, 65535.0L};
    case ValueType::I16:
        return std::pair{-32768.0L, 32767.0L};
    case ValueType::U32:
        return std::pair{0.0L, 4294967295.0L};
    case ValueType::I32:
        return std::pair{-2147483648.0L, 2147483647.0L};
    case ValueType::U64:
        return std::pair{0.0L, static_cast<long double>(std::numeric_limits<std::uint64_t>::max())};
    case ValueType::I64:
        return std::pair{static_cast<long double>(std::numeric_limits<std::int64_t>::min()),
                         static_cast<long double>(std::numeric_limits<std::int64_t>::max())};
    default:
        return std::nullopt;
    }
}

} // namespace

bool MetadataDelegate::isMultiLine(const model::MetadataTableModel& model, int row) {
    const MetaValue* value = model.value(row);
    if (value == nullptr) {
        return false;
    }
    if (value->isArray() || model.key(row) == "tokenizer.chat_template") {
        return true;
    }
    const auto text = value->asString();
    return text && (text->size() > std::size_t(kLongString) || text->find('\n') != std::string_view::npos);
}

QWidget* MetadataDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem& option,
                                        const QModelIndex& index) const {
    int row = 0;
    const model::MetadataTableModel* model = sourceOf(index, &row);
    if (model == nullptr || model->value(row) == nullptr || isMultiLine(*model, row)) {
        return nullptr;
    }
    const ValueType type = model->value(row)->type();
    auto* edit = qobject_cast<QLineEdit*>(QStyledItemDelegate::createEditor(parent, option, index));
    if (edit == nullptr) {
        return nullptr;
    }
    edit->setObjectName(QStringLiteral("metadataValueEditor"));
    if (const auto range = integerRange(type)) {
        edit->setValidator(new IntegerValidator(range->first, range->second, edit));
    } else if (type == ValueType::F32 || type == ValueType::F64) {
        auto* validator = new QDoubleValidator(edit);
        validator->setLocale(QLocale::c());
        validator->setNotation(QDoubleValidator::ScientificNotation);
        edit->setValidator(validator);
    }
    return edit;
}

void MetadataDelegate::initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const {
    QStyledItemDelegate::initStyleOption(option, index);
    const auto state = static_cast<EditState>(index.data(model::EditStateRole).toInt());
    if (state == EditState::Edited || state == EditState::Added) {
        option->font.setBold(true);
    } else if (state == EditState::Removed) {
        option->font.setStrikeOut(true);
        option->font.setItalic(true);
    }
}

MetadataTextDialog::MetadataTextDialog(model::MetadataTableModel* model, int row, QWidget* parent)
    : QDialog(parent), m_model(model), m_row(row) {
    setObjectName(QStringLiteral("metadataTextDialog"));
    const MetaValue* value = model->value(row);
    const std::string type = value != nullptr ? metadataTypeName(*value) : std::string();
    setWindowTitle(tr("Edit %1").arg(model::displayText(model->key(row))));
    auto* layout = new QVBoxLayout(this);
    auto* label = new QLabel(
        value != nullptr && value->isArray()
            ? tr("%1 (%2) as a JSON array:")
                  .arg(model::displayText(model->key(row)), QString::fromStdString(type))
            : tr("%1 (%2):").arg(model::displayText(model->key(row)), QString::fromStdString(type)),
        this);
    layout->addWidget(label);
    m_text = new QPlainTextEdit(this);
    m_text->setObjectName(QStringLiteral("metadataText"));
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
    if (value != nullptr) {
        m_text->setPlainText(model::MetadataTableModel::editText(*value));
    }
    layout->addWidget(m_text, 1);
    m_problem = new QLabel(this);
    m_problem->setObjectName(QStringLiteral("metadataTextProblem"));
    m_problem->setWordWrap(true);
    m_problem->setTextFormat(Qt::PlainText);
    m_problem->hide();
    layout->addWidget(m_problem);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &MetadataTextDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &MetadataTextDialog::reject);
    layout->addWidget(buttons);
    const int em = fontMetrics().horizontalAdvance(u'M');
    resize(60 * em, 30 * fontMetrics().height());
}

void MetadataTextDialog::accept() {
    const MetaValue* value = m_model->value(m_row);
    if (value == nullptr) {
        QDialog::reject();
        return;
    }
    QString problem;
    const auto parsed = model::MetadataTableModel::parseText(*value, exactText(*m_text), &problem);
    if (parsed) {
        problem = m_model->edit(m_row, *parsed);
    }
    if (!problem.isEmpty()) {
        m_problem->setText(problem);
        m_problem->show();
        return;
    }
    QDialog::accept();
}

MetadataPage::MetadataPage(std::shared_ptr<const GgufModel> model, QWidget* parent)
    : QWidget(parent), m_gguf(std::move(model)) {
    setObjectName(QStringLiteral("metadataPage"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_note = wrappedLabel(this, QStringLiteral("metadataNote"), Qt::PlainText, false);
    layout->addWidget(m_note);
    m_model = new model::MetadataTableModel(this);
    m_model->setModel(m_gguf);
    m_table = sortableRowTable(m_model, QStringLiteral("metadataTable"), this, this);
    auto* proxy = static_cast<QSortFilterProxyModel*>(m_table->model());
    m_table->setItemDelegate(new MetadataDelegate(m_table));
    m_table->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                             QAbstractItemView::AnyKeyPressed);
    m_table->horizontalHeader()->setSectionResizeMode(model::MetadataTableModel::Key,
                                                      QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(model::MetadataTableModel::Type,
                                                      QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setContextMenuPolicy(Qt::CustomContextMenu);
    layout->addWidget(m_table, 1);
    // Long strings and arrays have no editor in their cell: a double click opens the multi-line one.
    connect(m_table, &QTableView::doubleClicked, this, [this, proxy](const QModelIndex& index) {
        const int row = proxy->mapToSource(index).row();
        if (m_model->isEditable() && MetadataDelegate::isMultiLine(*m_model, row)) {
            editText(row);
        }
    });
    connect(m_table, &QTableView::customContextMenuRequested, this, &MetadataPage::showMenu);
    connect(m_model, &model::MetadataTableModel::editRefused, this,
            [this](const QString& reason) { m_note->setText(tr("Not changed: %1").arg(reason)); });
    connect(m_model, &QAbstractItemModel::dataChanged, this, &MetadataPage::showEdits);
    connect(m_model, &QAbstractItemModel::modelReset, this, &MetadataPage::showEdits);
    showEdits();
}

// After an edit, undo or redo: how many edits the plan holds.
void MetadataPage::showEdits() {
    if (m_document == nullptr) {
        m_note->setText(tr("Read only until this model is the recipient of a graft plan."));
        return;
    }
    if (!m_recipient) {
        m_note->setText(tr("Read only: the metadata of the plan's recipient can be edited."));
        return;
    }
    const auto edits = m_document->metadataEdits(QString::fromStdString(m_gguf->path()));
    m_note->setText(
        edits.empty()
            ? tr("Double-click a value to edit it: each edit is an operation of the graft plan "
                 "(Ctrl+Z undoes it), written when the plan is assembled.")
            : tr("%1 in the graft plan, in bold (Ctrl+Z undoes the last); written when the plan "
                 "is assembled.")
                  .arg(model::countOf(qint64(edits.size()), tr("metadata edit"), tr("metadata edits"))));
}

void MetadataPage::editText(int row) {
    if (row < 0 || row >= m_model->rowCount() || m_model->value(row) == nullptr) {
        return;
    }
    auto* dialog = new MetadataTextDialog(m_model, row, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open();
}

void MetadataPage::showMenu(const QPoint& at) {
    const auto* proxy = static_cast<const QSortFilterProxyModel*>(m_table->model());
    const QModelIndex index = proxy->mapToSource(m_table->indexAt(at));
    if (!index.isValid() || !m_model->isEditable()) {
        return;
    }
    const int row = index.row();
    const auto state = m_model->editState(row);
    using EditState = model::MetadataTableModel::EditState;
    QMenu menu(this);
    QAction* edit = menu.addAction(tr("Edit in a text editor…"), this, [this, row] { editText(row); });
    edit->setEnabled(state != EditState::Removed);
    QAction* remove = menu.addAction(tr("Remove the key"), this, [this, row] { m_model->remove(row); });
    remove->setEnabled(state != EditState::Removed);
    QAction* revert =
        menu.addAction(state == EditState::Added ? tr("Drop the added key") : tr("Back to the model's value"),
                       this, [this, row] { m_model->revert(row); });
    revert->setEnabled(state != EditState::Unchanged);
    menu.exec(m_table->viewport()->mapToGlobal(at));
}

void MetadataPage::setDocument(model::GraftDocument* document, bool recipient) {
    m_document = document;
    m_recipient = recipient;
    m_model->setDocument(recipient ? document : nullptr, QString::fromStdString(m_gguf->path()));
    showEdits();
}

} // namespace organ::widgets
