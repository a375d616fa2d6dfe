#include "graft_plan_model.h"

#include "column_titles.h"
#include "graft_document.h"
#include "support/text_format.h"

#include <QBrush>
#include <QColor>

namespace organ::model {

GraftPlanModel::GraftPlanModel(GraftDocument* document, QObject* parent)
    : QAbstractTableModel(parent), m_document(document) {
    // Every edit replaces the plan: the rows are rebuilt (plans are short).
    connect(document, &GraftDocument::changed, this, [this] {
        beginResetModel();
        endResetModel();
    });
}

int GraftPlanModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_document->plan().operations.size());
}

int GraftPlanModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant GraftPlanModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) {
        return {};
    }
    const int op = index.row();
    const auto& operation = m_document->plan().operations[std::size_t(op)];
    const bool checked = m_document->unavailable().isEmpty();
    const GraftDocument::OperationSummary s = m_document->summary(op);
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case Number:
            return op + 1;
        case Operation:
            return m_document->describe(op);
        case Donor:
            if (operation.kind == GraftOperation::Kind::Merge) {
                return GraftDocument::modelNames(operation.merge).join(QStringLiteral(", "));
            }
            return GraftDocument::modelName(operation.donor.empty() ? std::string("base") : operation.donor);
        case Tensors:
            return checked ? QVariant(s.tensors) : QVariant();
        case Bytes:
            return checked && s.bytes != 0 ? QVariant(QString::fromStdString(humanBytes(s.bytes)))
                                           : QVariant();
        case Status:
            if (!checked) {
                return tr("not checked");
            }
            if (s.errors != 0) {
                return countOf(s.errors, tr("error"), tr("errors"));
            }
            if (s.warnings != 0) {
                return countOf(s.warnings, tr("warning"), tr("warnings"));
            }
            // A later operation (a stack, a map onto the same layer) took its tensors over.
            return s.tensors == 0 && (operation.kind == GraftOperation::Kind::Replace ||
                                      operation.kind == GraftOperation::Kind::MapLayer)
                       ? tr("no effect")
                       : tr("ok");
        }
    }
    // The view elides long operations and model lists: the whole text on hover; the status's
    // findings in full beside it.
    if (role == Qt::ToolTipRole) {
        if (index.column() == Operation || index.column() == Donor) {
            const QString text = data(index, Qt::DisplayRole).toString();
            return operation.kind == GraftOperation::Kind::Merge
                       ? text + tr("\nDouble-click to change the merge's method or parameters")
                       : text;
        }
        if (index.column() == Status && checked) {
            QStringList lines;
            for (const Finding& f : m_document->report().findings) {
                if (f.operation == op && f.severity != Finding::Severity::Info) {
                    lines << QString::fromStdString(findingLine(f));
                }
            }
            return lines.isEmpty() ? QVariant() : QVariant(lines.join(u'\n'));
        }
    }
    if (role == Qt::ForegroundRole && index.column() == Status && checked) {
        if (s.errors != 0) {
            return QBrush(QColor(0xc6, 0x28, 0x28));
        }
        if (s.warnings != 0) {
            return QBrush(QColor(0xb2, 0x6b, 0x00));
        }
    }
    if (role == Qt::TextAlignmentRole && (index.column() == Tensors || index.column() == Bytes)) {
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    }
    return {};
}

QVariant GraftPlanModel::headerData(int section, Qt::Orientation orientation, int role) const {
    static constexpr const char* titles[] = {QT_TR_NOOP("#"),     QT_TR_NOOP("operation"),
                                             QT_TR_NOOP("from"),  QT_TR_NOOP("tensors"),
                                             QT_TR_NOOP("bytes"), QT_TR_NOOP("status")};
    return columnTitle<ColumnCount>(staticMetaObject, titles, section, orientation, role);
}

} // namespace organ::model
