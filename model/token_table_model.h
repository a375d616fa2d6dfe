#pragma once

#include "vitals/token_lookup.h"

#include <QAbstractTableModel>
#include <optional>
#include <vector>

namespace organ::model {

// Tokens of a vocabulary in a table: place, id, type, the vocabulary's string, the text it stands
// for (a byte-fallback token as <0xNN>, a control token's empty text as its vocabulary string) and
// the score. The rows are the tokens of a text, a lookup or a search, in the order given. BOS and
// EOS are marked in the type column.
class TokenTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Place, Id, Type, Vocabulary, Text, Score, ColumnCount };

    explicit TokenTableModel(QObject* parent = nullptr);
    // The rows of `ids` in `tokenizer`, with their `scores` (vocabularyScores; none: no score
    // shown); ids outside the vocabulary are left out.
    void setTokens(const Tokenizer* tokenizer, const std::vector<std::int32_t>& ids,
                   const std::vector<float>& scores = {});
    const std::vector<TokenRow>& rows() const { return m_rows; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // What a person reads for a token's text: <0xNN> for a byte-fallback token, the text with
    // control characters and invalid UTF-8 escaped otherwise.
    static QString tokenText(const TokenRow& row);

private:
    QString typeText(const TokenRow& row) const;

    std::vector<TokenRow> m_rows;
    std::vector<std::optional<float>> m_scores;
    std::int32_t m_bos = -1;
    std::int32_t m_eos = -1;
};

} // namespace organ::model
