#include "tokenizer_page.h"

#include "display_names.h"
#include "exact_text.h"
#include "row_table.h"
#include "token_table_model.h"
#include "wrapped_label.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

namespace organ::widgets {
namespace {

// Vocabulary matches listed at most: a search for "e" in 150 000 tokens is a list to narrow.
constexpr std::size_t kFoundLimit = 1000;

// A column of the splitter: a widget whose layout (returned) has no margins.
QVBoxLayout* splitterColumn(QSplitter* splitter) {
    auto* column = new QWidget(splitter);
    auto* layout = new QVBoxLayout(column);
    layout->setContentsMargins(0, 0, 0, 0);
    return layout;
}

QTableView* tokenTable(model::TokenTableModel* model, const QString& name, QWidget* parent) {
    QTableView* view = rowTable(model, name, parent);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    view->horizontalHeader()->setStretchLastSection(true);
    return view;
}

} // namespace

TokenizerPage::TokenizerPage(std::shared_ptr<const GgufModel> model, QWidget* parent)
    : QWidget(parent), m_model(std::move(model)) {
    setObjectName(QStringLiteral("tokenizerPage"));
    m_tokensModel = new model::TokenTableModel(this);
    m_vocabularyModel = new model::TokenTableModel(this);
    auto* layout = new QVBoxLayout(this);
    m_about = wrappedLabel(this, QStringLiteral("tokenizerAbout"), Qt::PlainText, false);
    layout->addWidget(m_about);
    auto* splitter = new QSplitter(Qt::Horizontal, this);

    QVBoxLayout* textLayout = splitterColumn(splitter);
    QWidget* textSide = textLayout->parentWidget();
    m_text = new QPlainTextEdit(textSide);
    m_text->setObjectName(QStringLiteral("tokenizerText"));
    m_text->setPlaceholderText(tr("Type a text to see its tokens"));
    m_text->setMaximumHeight(6 * m_text->fontMetrics().height());
    textLayout->addWidget(m_text);
    auto* options = new QHBoxLayout;
    m_addBos = new QCheckBox(tr("Put &BOS first"), textSide);
    m_addBos->setObjectName(QStringLiteral("tokenizerAddBos"));
    options->addWidget(m_addBos);
    m_summary = new QLabel(textSide);
    m_summary->setObjectName(QStringLiteral("tokenizerSummary"));
    options->addWidget(m_summary, 1);
    textLayout->addLayout(options);
    m_tokens = tokenTable(m_tokensModel, QStringLiteral("tokenizerTokens"), textSide);
    m_tokens->hideColumn(model::TokenTableModel::Score);
    textLayout->addWidget(m_tokens, 1);

    QVBoxLayout* findLayout = splitterColumn(splitter);
    QWidget* findSide = findLayout->parentWidget();
    m_find = new QLineEdit(findSide);
    m_find->setObjectName(QStringLiteral("tokenizerFind"));
    m_find->setPlaceholderText(tr("Find in the vocabulary: an id, a token or part of one"));
    m_find->setClearButtonEnabled(true);
    findLayout->addWidget(m_find);
    m_found = new QLabel(findSide);
    m_found->setObjectName(QStringLiteral("tokenizerFound"));
    findLayout->addWidget(m_found);
    m_vocabulary = tokenTable(m_vocabularyModel, QStringLiteral("tokenizerVocabulary"), findSide);
    m_vocabulary->hideColumn(model::TokenTableModel::Place);
    findLayout->addWidget(m_vocabulary, 1);
    splitter->addWidget(textSide);
    splitter->addWidget(findSide);
    layout->addWidget(splitter, 1);

    connect(m_text, &QPlainTextEdit::textChanged, this, &TokenizerPage::tokenize);
    connect(m_addBos, &QCheckBox::toggled, this, &TokenizerPage::tokenize);
    connect(m_find, &QLineEdit::textChanged, this, &TokenizerPage::find);
}

TokenizerPage::~TokenizerPage() = default;

void TokenizerPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    load();
}

bool TokenizerPage::load() {
    if (m_loaded) {
        return m_tokenizer.has_value();
    }
    m_loaded = true;
    try {
        m_tokenizer = Tokenizer::fromModel(*m_model);
        m_scores = vocabularyScores(*m_model);
    } catch (const std::exception& error) {
        m_about->setText(tr("No tokenizer: %1").arg(model::displayText(error.what())));
        for (QWidget* w : {static_cast<QWidget*>(m_text), static_cast<QWidget*>(m_addBos),
                           static_cast<QWidget*>(m_find)}) {
            w->setEnabled(false);
        }
        return false;
    }
    const Tokenizer& t = *m_tokenizer;
    const auto special = [&](std::int32_t id) -> QString {
        return id >= 0 && std::size_t(id) < t.size()
                   ? QStringLiteral("%1 %2").arg(id).arg(model::displayText(t.vocabularyText(id)))
                   : tr("none");
    };
    m_about->setText(tr("%1 tokenizer, %2 tokens · BOS %3%4 · EOS %5 · special tokens in the text are "
                        "read as text")
                         .arg(QString::fromStdString(t.kind()), QLocale().toString(qulonglong(t.size())),
                              special(t.bos()), t.addsBos() ? tr(" (put first)") : QString(),
                              special(t.eos())));
    {
        const QSignalBlocker block(m_addBos);
        m_addBos->setChecked(t.addsBos());
        m_addBos->setEnabled(t.bos() >= 0);
    }
    tokenize();
    find();
    return true;
}

void TokenizerPage::tokenize() {
    if (!load()) {
        return;
    }
    const std::string text = exactText(*m_text).toStdString();
    const std::vector<std::int32_t> ids = tokenizeText(*m_tokenizer, text, m_addBos->isChecked());
    m_tokensModel->setTokens(&*m_tokenizer, ids);
    m_summary->setText(model::countOf(qint64(ids.size()), tr("token"), tr("tokens")) + QStringLiteral(" · ") +
                       model::countOf(qint64(text.size()), tr("byte"), tr("bytes")));
}

void TokenizerPage::find() {
    if (!load()) {
        return;
    }
    const QString query = m_find->text();
    if (query.isEmpty()) {
        m_vocabularyModel->setTokens(&*m_tokenizer, {});
        m_found->clear();
        return;
    }
    std::vector<std::int32_t> ids;
    bool isNumber = false;
    const int id = query.trimmed().toInt(&isNumber);
    if (isNumber && id >= 0 && std::size_t(id) < m_tokenizer->size()) {
        ids.push_back(id);
    }
    const std::string needle = query.toStdString();
    if (const std::int32_t exact = m_tokenizer->lookup(needle); exact >= 0 && exact != id) {
        ids.push_back(exact);
    }
    // The id and the token asked for first, then every token holding the text.
    for (const std::int32_t match : searchVocabulary(*m_tokenizer, needle, kFoundLimit + 1)) {
        if (std::find(ids.begin(), ids.end(), match) == ids.end()) {
            ids.push_back(match);
        }
    }
    const bool more = ids.size() > kFoundLimit;
    if (more) {
        ids.resize(kFoundLimit);
    }
    m_vocabularyModel->setTokens(&*m_tokenizer, ids, m_scores);
    m_found->setText(more
                         ? tr("The first %1 tokens found").arg(kFoundLimit)
                         : tr("%1 found").arg(model::countOf(qint64(ids.size()), tr("token"), tr("tokens"))));
}

} // namespace organ::widgets
