#pragma once

#include "vitals/tokenizer.h"

#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

class QCheckBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QTableView;

namespace organ::model {
class TokenTableModel;
}

namespace organ::widgets {

// A model's tokenizer at work (the engine's, as `organ tokenize` runs it): a text and its tokens —
// ids, types (BOS and EOS marked), the vocabulary's strings and the text each stands for, a
// byte-fallback token as <0xNN> — with BOS put first or not; and the vocabulary searched by id, by
// a token's string or by part of one. The tokenizer is read from the model when the page is first
// shown; a model whose tokenizer the engine does not read says why.
class TokenizerPage : public QWidget {
    Q_OBJECT
public:
    TokenizerPage(std::shared_ptr<const GgufModel> model, QWidget* parent = nullptr);
    ~TokenizerPage() override;

    QPlainTextEdit* textEdit() const { return m_text; }
    QCheckBox* addBosBox() const { return m_addBos; }
    QLineEdit* findEdit() const { return m_find; }
    QLabel* summary() const { return m_summary; }
    QLabel* found() const { return m_found; }
    model::TokenTableModel* tokensModel() const { return m_tokensModel; }
    model::TokenTableModel* vocabularyModel() const { return m_vocabularyModel; }
    // Reads the tokenizer when it has not been read yet; false (the reason shown) when it cannot be.
    bool load();

protected:
    void showEvent(QShowEvent* event) override;

private:
    void tokenize();
    void find();

    std::shared_ptr<const GgufModel> m_model;
    std::optional<Tokenizer> m_tokenizer;
    std::vector<float> m_scores;
    bool m_loaded = false;
    QLabel* m_about = nullptr;
    QPlainTextEdit* m_text = nullptr;
    QCheckBox* m_addBos = nullptr;
    QLabel* m_summary = nullptr;
    QTableView* m_tokens = nullptr;
    QLineEdit* m_find = nullptr;
    QLabel* m_found = nullptr;
    QTableView* m_vocabulary = nullptr;
    model::TokenTableModel* m_tokensModel = nullptr;
    model::TokenTableModel* m_vocabularyModel = nullptr;
};

} // namespace organ::widgets
