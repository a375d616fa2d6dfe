#include "token_table_model.h"

#include "column_titles.h"
#include "display_names.h"
#include "model_roles.h"

namespace organ::model {

TokenTableModel::TokenTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void TokenTableModel::setTokens(const Tokenizer* tokenizer, const std::vector<std::int32_t>& ids,
                                const std::vector<float>& scores) {
    beginResetModel();
    m_rows.clear();
    m_scores.clear();
    m_bos = tokenizer != nullptr ? tokenizer->bos() : -1;
    m_eos = tokenizer != nullptr ? tokenizer->eos() : -1;
    for (const std::int32_t id : ids) {
        if (tokenizer != nullptr && id >= 0 && static_cast<std::size_t>(id) < tokenizer->size()) {
            m_rows.push_back(tokenRow(*tokenizer, id));
            m_scores.push_back(std::size_t(id) < scores.size() ? std::optional(scores[std::size_t(id)])
                                                               : std::nullopt);
        }
    }
    endResetModel();
}

int TokenTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int TokenTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QString TokenTableModel::tokenText(const TokenRow& row) {
    if (row.type == 6 && row.piece.size() == 1) {
        const auto byte = static_cast<unsigned char>(row.piece[0]);
        return QStringLiteral("<0x%1>").arg(QString::number(byte, 16).toUpper().rightJustified(2, u'0'));
    }
    return displayText(row.piece);
}

QString TokenTableModel::typeText(const TokenRow& row) const {
    const std::string name = tokenTypeName(row.type);
    QString text = QString::fromStdString(name);
    if (row.id == m_bos) {
        text += tr(" · BOS");
    }
    if (row.id == m_eos) {
        text += tr(" · EOS");
    }
    return text;
}

QVariant TokenTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(m_rows.size())) {
        return {};
    }
    const TokenRow& row = m_rows[static_cast<std::size_t>(index.row())];
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case Place:
            return index.row();
        case Id:
            return row.id;
        case Type:
            return typeText(row);
        case Vocabulary:
            return displayText(row.vocabulary);
        case Text: {
            // Quoted, so that a leading space shows (as organ tokenize prints it); a byte as <0xNN>.
            const QString text = tokenText(row);
            return row.type == 6 || text.isEmpty() ? text : QString(u'"' + text + u'"');
        }
        case Score: {
            const auto score = m_scores[static_cast<std::size_t>(index.row())];
            return score ? QVariant(double(*score)) : QVariant();
        }
        default:
            return {};
        }
    }
    if (role == SortRole) {
        return index.column() == Id ? QVariant(row.id) : data(index, Qt::DisplayRole);
    }
    if (role == Qt::TextAlignmentRole &&
        (index.column() == Place || index.column() == Id || index.column() == Score)) {
        return int(Qt::AlignRight | Qt::AlignVCenter);
    }
    return {};
}

QVariant TokenTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    static constexpr const char* titles[] = {QT_TR_NOOP("#"),    QT_TR_NOOP("Id"),
                                             QT_TR_NOOP("Type"), QT_TR_NOOP("Vocabulary"),
                                             QT_TR_NOOP("Text"), QT_TR_NOOP("Score")};
    return columnTitle<ColumnCount>(staticMetaObject, titles, section, orientation, role);
}

} // namespace organ::model
