// The Metadata and Tokenizer tabs as a user works them: values edited in place by editors of their
// type (a u32, a float, a bool's check box, the chat template in the multi-line editor) become the
// plan's set_metadata operations with the right types, Ctrl+Z takes them back, edits that would
// stop llama.cpp loading the model are refused with the reason, and assembly writes them. The
// Tokenizer tab gives llama.cpp's token ids on every shared vocabulary (the kept tests/data/tokenizer
// ids), byte-fallback tokens as <0xNN>, BOS marked, and finds tokens by id, string and part of one.
#include "assembly_controller.h"
#include "exact_text.h"
#include "fixtures.h"
#include "graft_document.h"
#include "job_ends.h"
#include "main_window.h"
#include "metadata_editing.h"
#include "metadata_table_model.h"
#include "model_pane.h"
#include "model_roles.h"
#include "model_view.h"
#include "shared_models.h"
#include "surgery_controller.h"
#include "token_ids.h"
#include "token_table_model.h"
#include "tokenizer_page.h"
#include "window_test_support.h"

#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

using namespace organ;
using namespace organ::testing;

namespace {

constexpr std::string_view kTemplate = "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}{% endfor %}";

// The table's Value cell of `key` (through its sort proxy).
QModelIndex valueCell(widgets::ModelView* view, std::string_view key) {
    const model::MetadataTableModel* model = view->metadataModel();
    auto* proxy = static_cast<QAbstractProxyModel*>(view->metadataView()->model());
    for (int row = 0; row < model->rowCount(); ++row) {
        if (model->key(row) == key) {
            return proxy->mapFromSource(model->index(row, model::MetadataTableModel::Value));
        }
    }
    return {};
}

int sourceRow(widgets::ModelView* view, const QModelIndex& cell) {
    return static_cast<QAbstractProxyModel*>(view->metadataView()->model())->mapToSource(cell).row();
}

// Opens the cell's editor as the keyboard does (F2; a double click is driven under X by hand),
// types `text` into it and presses Enter.
void typeInCell(widgets::ModelView* view, const QModelIndex& cell, const QString& text) {
    QTableView* table = view->metadataView();
    table->setFocus();
    table->scrollTo(cell);
    table->setCurrentIndex(cell);
    QTest::keyClick(table, Qt::Key_F2);
    auto* editor = qobject_cast<QLineEdit*>(table->indexWidget(cell));
    QVERIFY2(editor != nullptr && editor->isVisible(), "no editor in the cell");
    QCOMPARE(editor->objectName(), QStringLiteral("metadataValueEditor"));
    editor->selectAll();
    QTest::keyClicks(editor, text);
    QTest::keyClick(editor, Qt::Key_Return);
    // The delegate commits on Enter by a queued call.
    QTRY_VERIFY(table->indexWidget(cell) == nullptr);
}

} // namespace

class TestWindowMetadata : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_model; // stories260K with a chat template and a bool
    std::unique_ptr<app::MainWindow> m_window;
    widgets::ModelView* m_view = nullptr;
    model::GraftDocument* m_plan = nullptr;

private slots:
    void initTestCase() {
        initWindowTests(m_dir);
        const QString stories = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(stories);
        const auto file = GgufFile::open(stories.toStdString());
        GgufWriteSpec spec = specFromFile(*file);
        spec.set("tokenizer.chat_template", MetaValue::fromString(kTemplate));
        spec.set("tokenizer.ggml.add_eos_token", MetaValue::fromBool(false));
        spec.set("my.note", MetaValue::fromString("a key to remove"));
        m_model = m_dir.filePath(QStringLiteral("stories-chat.gguf"));
        QVERIFY(writeFixture(m_model, spec));
    }

    void init() {
        m_window = std::make_unique<app::MainWindow>();
        m_window->resize(1400, 900);
        m_window->show();
        QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
        JobEnds measured(m_window->jobs(), "measure");
        QCOMPARE(m_window->openFiles({m_model}), 1);
        QVERIFY(waitForJobs(measured, 1, 20000));
        m_view = m_window->currentView();
        m_plan = m_window->surgery()->document();
        m_view->showPage(widgets::ModelView::Page::Metadata);
        settle(m_window.get());
    }

    void cleanup() {
        m_window.reset();
        m_view = nullptr;
        m_plan = nullptr;
    }

    void editsBecomeOperations() {
        QVERIFY(m_view->metadataModel()->isEditable());
        // A u32 within its range: the editor takes no sign and nothing past 2³²−1.
        const QModelIndex context = valueCell(m_view, "llama.context_length");
        QVERIFY(context.isValid());
        {
            QTableView* table = m_view->metadataView();
            table->setCurrentIndex(context);
            table->edit(context);
            auto* editor = qobject_cast<QLineEdit*>(table->indexWidget(context));
            QVERIFY(editor != nullptr && editor->validator() != nullptr);
            int pos = 0;
            QString tooBig = QStringLiteral("4294967296");
            QString negative = QStringLiteral("-1");
            QString fits = QStringLiteral("4294967295");
            QCOMPARE(editor->validator()->validate(tooBig, pos), QValidator::Invalid);
            QCOMPARE(editor->validator()->validate(negative, pos), QValidator::Invalid);
            QCOMPARE(editor->validator()->validate(fits, pos), QValidator::Acceptable);
            QTest::keyClick(editor, Qt::Key_Escape);
        }
        typeInCell(m_view, context, QStringLiteral("4096"));
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(1));
        const GraftOperation& u32 = m_plan->plan().operations[0];
        QCOMPARE(u32.kind, GraftOperation::Kind::SetMetadata);
        QCOMPARE(u32.key, std::string("llama.context_length"));
        QCOMPARE(u32.value.type(), ValueType::U32);
        QCOMPARE(*u32.value.asUInt(), std::uint64_t(4096));
        QCOMPARE(valueCell(m_view, "llama.context_length").data().toString(), QStringLiteral("4096"));
        QCOMPARE(valueCell(m_view, "llama.context_length").data(model::EditStateRole).toInt(),
                 int(model::MetadataTableModel::EditState::Edited));

        typeInCell(m_view, valueCell(m_view, "llama.attention.layer_norm_rms_epsilon"),
                   QStringLiteral("2e-06"));
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(2));
        QCOMPARE(m_plan->plan().operations[1].value.type(), ValueType::F32);
        QCOMPARE(*m_plan->plan().operations[1].value.asFloat(), double(2e-06f));

        // A bool is a check box: Space on the current cell flips it.
        const QModelIndex flag = valueCell(m_view, "tokenizer.ggml.add_eos_token");
        QCOMPARE(flag.data(Qt::CheckStateRole).value<Qt::CheckState>(), Qt::Unchecked);
        m_view->metadataView()->setFocus();
        m_view->metadataView()->setCurrentIndex(flag);
        QTest::keyClick(m_view->metadataView(), Qt::Key_Space);
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(3));
        QCOMPARE(m_plan->plan().operations[2].value.type(), ValueType::Bool);
        QCOMPARE(*m_plan->plan().operations[2].value.asBool(), true);
        QCOMPARE(valueCell(m_view, "tokenizer.ggml.add_eos_token")
                     .data(Qt::CheckStateRole)
                     .value<Qt::CheckState>(),
                 Qt::Checked);

        // The chat template opens in the multi-line editor.
        const QModelIndex chat = valueCell(m_view, "tokenizer.chat_template");
        m_view->metadataView()->scrollTo(chat);
        // A press first: the view edits only the cell the double click's press was on.
        QTest::mouseClick(m_view->metadataView()->viewport(), Qt::LeftButton, {},
                          m_view->metadataView()->visualRect(chat).center());
        QTest::mouseDClick(m_view->metadataView()->viewport(), Qt::LeftButton, {},
                           m_view->metadataView()->visualRect(chat).center());
        auto* dialog = m_view->findChild<widgets::MetadataTextDialog*>();
        QVERIFY(dialog != nullptr && dialog->isVisible());
        QCOMPARE(dialog->editor()->toPlainText(),
                 QString::fromUtf8(kTemplate.data(), qsizetype(kTemplate.size())));
        const QString edited =
            QStringLiteral("{% for m in messages %}\n[{{ m.role }}] {{ m.content }}\n{% endfor %}");
        dialog->editor()->setPlainText(edited);
        settle(dialog);
        saveScreenshot(dialog, QStringLiteral("metadata-chat-template.png"));
        dialog->accept();
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(4));
        QCOMPARE(m_plan->plan().operations[3].value.type(), ValueType::String);
        QCOMPARE(QString::fromStdString(std::string(*m_plan->plan().operations[3].value.asString())), edited);
        QVERIFY2(m_view->metadataNote()->text().contains(QStringLiteral("4 metadata edits")),
                 qPrintable(m_view->metadataNote()->text()));
        settle(m_window.get());
        saveScreenshot(m_window.get(), QStringLiteral("metadata-edited.png"));

        // Ctrl+Z, four times: back to the model's values.
        for (int i = 0; i < 4; ++i) {
            QTest::keyClick(m_view->metadataView(), Qt::Key_Z, Qt::ControlModifier);
        }
        QVERIFY(m_plan->plan().operations.empty());
        QCOMPARE(valueCell(m_view, "llama.context_length").data(model::EditStateRole).toInt(),
                 int(model::MetadataTableModel::EditState::Unchanged));
        QCOMPARE(valueCell(m_view, "tokenizer.ggml.add_eos_token")
                     .data(Qt::CheckStateRole)
                     .value<Qt::CheckState>(),
                 Qt::Unchecked);
    }

    // What organ meta refuses the window refuses, saying why; nothing is added.
    void breakingEditsRefused() {
        typeInCell(m_view, valueCell(m_view, "llama.block_count"), QStringLiteral("9"));
        QVERIFY(m_plan->plan().operations.empty());
        QVERIFY2(m_view->metadataNote()->text().startsWith(QStringLiteral("Not changed: ")) &&
                     m_view->metadataNote()->text().size() > 20,
                 qPrintable(m_view->metadataNote()->text()));
        QCOMPARE(valueCell(m_view, "llama.block_count").data(model::EditStateRole).toInt(),
                 int(model::MetadataTableModel::EditState::Unchanged));
        const QString removal =
            m_view->metadataModel()->remove(sourceRow(m_view, valueCell(m_view, "general.architecture")));
        QVERIFY2(!removal.isEmpty(), "removing the architecture was not refused");
        QVERIFY(m_plan->plan().operations.empty());
        settle(m_window.get());
        saveScreenshot(m_window.get(), QStringLiteral("metadata-refused.png"));
        // An array as JSON: text that is not an array of its type stays in the dialog, with why.
        m_view->editMetadataText(sourceRow(m_view, valueCell(m_view, "tokenizer.ggml.scores")));
        auto* dialog = m_view->findChild<widgets::MetadataTextDialog*>();
        QVERIFY(dialog != nullptr);
        QVERIFY(dialog->editor()->toPlainText().startsWith(u'['));
        dialog->editor()->setPlainText(QStringLiteral("[1, \"two\"]"));
        dialog->accept();
        QVERIFY(dialog->isVisible());
        QVERIFY(dialog->problem()->isVisible() && !dialog->problem()->text().isEmpty());
        QVERIFY(m_plan->plan().operations.empty());
        dialog->reject();
    }

    // Assembly writes the edits: the values with their types, every tensor's bytes as they were.
    void assemblyWritesEdits() {
        typeInCell(m_view, valueCell(m_view, "llama.context_length"), QStringLiteral("512"));
        const int row = sourceRow(m_view, valueCell(m_view, "my.note"));
        QVERIFY(m_view->metadataModel()->remove(row).isEmpty());
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(2));
        QCOMPARE(valueCell(m_view, "my.note").data(model::EditStateRole).toInt(),
                 int(model::MetadataTableModel::EditState::Removed));
        const QString output = m_dir.filePath(QStringLiteral("edited.gguf"));
        QSignalSpy ended(m_window->surgery()->assembly(), &app::AssemblyController::ended);
        ModalSteps steps;
        steps.then([&](QWidget* active) {
            if (active->objectName() != QStringLiteral("assembleDialog")) {
                return false;
            }
            active->findChild<QLineEdit*>(QStringLiteral("chimeraPath"))->setText(output);
            qobject_cast<QDialog*>(active)->accept();
            return true;
        });
        m_window->surgery()->assembly()->assembleDialog();
        QVERIFY(steps.done());
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 60000);
        QVERIFY(ended.at(0).at(0).toBool());
        const auto written = GgufModel::open(output.toStdString());
        const auto source = GgufModel::open(m_model.toStdString());
        QCOMPARE(written->find("llama.context_length")->type(), ValueType::U32);
        QCOMPARE(*written->find("llama.context_length")->asUInt(), std::uint64_t(512));
        QCOMPARE(std::string(*written->find("tokenizer.chat_template")->asString()), std::string(kTemplate));
        QVERIFY(written->find("my.note") == nullptr);
        QCOMPARE(written->tensors().size(), source->tensors().size());
        for (const TensorInfo& t : written->tensors()) {
            const auto a = written->tensorData(t);
            const auto b = source->tensorData(*source->findTensor(t.name));
            QVERIFY(std::equal(a.begin(), a.end(), b.begin(), b.end()));
        }
    }

    // The Tokenizer tab: llama.cpp's ids for every kept text that is text (one holds invalid UTF-8,
    // which a text field cannot hold), the first typed as a user types it.
    void tokenizerMatchesLlamaCpp_data() {
        QTest::addColumn<int>("index");
        const nlohmann::json expected = llamaCppTokenIds();
        QVERIFY(!expected.empty());
        for (std::size_t i = 0; i < expected["vocabularies"].size(); ++i) {
            const auto& v = expected["vocabularies"][i];
            if (v["pre"].is_null()) { // the files as they are
                QTest::newRow(v["file"].get<std::string>().c_str()) << int(i);
            }
        }
    }

    void tokenizerMatchesLlamaCpp() {
        QFETCH(int, index);
        const nlohmann::json expected = llamaCppTokenIds();
        const nlohmann::json* vocabulary = &expected["vocabularies"][std::size_t(index)];
        const QString file = sharedModel(QString::fromStdString((*vocabulary)["file"].get<std::string>()));
        ORGAN_REQUIRE_SHARED(file);
        // A vocabulary (without tensors) opens as a donor beside the recipient.
        widgets::ModelView* view = m_view;
        if (QFileInfo(file).fileName() != QStringLiteral("stories260K-f32.gguf")) {
            QCOMPARE(m_window->openFiles({file}, app::MainWindow::Side::Donor), 1);
            view = m_window->pane(app::MainWindow::Side::Donor)->currentView();
        }
        view->showPage(widgets::ModelView::Page::Tokenizer);
        widgets::TokenizerPage* page = view->tokenizerPage();
        QVERIFY(page->isVisible() && page->textEdit()->isEnabled());
        const Tokenizer tokenizer = Tokenizer::fromModel(*view->snapshot().model);
        QCOMPARE(page->addBosBox()->isChecked(), tokenizer.addsBos());
        int compared = 0;
        bool typed = false;
        for (std::size_t t = 0; t < expected["texts_hex"].size(); ++t) {
            const QByteArray bytes = QByteArray::fromHex(QByteArray::fromStdString(expected["texts_hex"][t]));
            const QString text = QString::fromUtf8(bytes);
            if (text.toUtf8() != bytes || bytes.contains('\r')) {
                continue; // a text field holds neither invalid UTF-8 nor a carriage return
            }
            bool ascii = true;
            for (const char c : bytes) {
                ascii = ascii && c >= 0x20 && c < 0x7f;
            }
            if (!typed && ascii) {
                typed = true;
                page->textEdit()->clear();
                page->textEdit()->setFocus();
                QTest::keyClicks(page->textEdit(), text);
            } else {
                page->textEdit()->setPlainText(text);
            }
            QCOMPARE(widgets::exactText(*page->textEdit()).toUtf8(), bytes);
            std::vector<std::int32_t> ids;
            for (const TokenRow& row : page->tokensModel()->rows()) {
                ids.push_back(row.id);
            }
            QVERIFY2(ids == (*vocabulary)["tokens"][t].get<std::vector<std::int32_t>>(),
                     qPrintable(QStringLiteral("text %1").arg(t)));
            ++compared;
        }
        QVERIFY(compared >= 3 && typed);
    }

    void tokenizerShowsBytesAndFinds() {
        m_view->showPage(widgets::ModelView::Page::Tokenizer);
        widgets::TokenizerPage* page = m_view->tokenizerPage();
        page->textEdit()->setFocus();
        QTest::keyClicks(page->textEdit(), QStringLiteral("Once "));
        QTest::sendKeyEvent(QTest::Click, page->textEdit(), Qt::Key_Udiaeresis, QStringLiteral("ü"),
                            Qt::NoModifier);
        QCOMPARE(page->textEdit()->toPlainText(), QStringLiteral("Once ü"));
        const model::TokenTableModel* tokens = page->tokensModel();
        QCOMPARE(tokens->rowCount(), 5);
        QVERIFY2(
            tokens->index(0, model::TokenTableModel::Type).data().toString().contains(QStringLiteral("BOS")),
            qPrintable(tokens->index(0, model::TokenTableModel::Type).data().toString()));
        QCOMPARE(tokens->index(3, model::TokenTableModel::Text).data().toString(), QStringLiteral("<0xC3>"));
        QCOMPARE(tokens->index(4, model::TokenTableModel::Text).data().toString(), QStringLiteral("<0xBC>"));
        QCOMPARE(page->summary()->text(), QStringLiteral("5 tokens · 7 bytes"));
        // Without BOS.
        page->addBosBox()->click();
        QCOMPARE(tokens->rowCount(), 4);
        QVERIFY(!tokens->index(0, model::TokenTableModel::Type)
                     .data()
                     .toString()
                     .contains(QStringLiteral("BOS")));
        // Found by id, by the vocabulary's string, by part of one.
        page->findEdit()->setFocus();
        QTest::keyClicks(page->findEdit(), QStringLiteral("265"));
        QVERIFY(page->vocabularyModel()->rowCount() >= 1);
        QCOMPARE(page->vocabularyModel()->rows().front().id, 265);
        page->findEdit()->clear();
        // Three tokens of stories260K's 512 hold "an" (organ tokenize --search an).
        QTest::keyClicks(page->findEdit(), QStringLiteral("an"));
        QCOMPARE(page->vocabularyModel()->rowCount(), 3);
        for (const TokenRow& row : page->vocabularyModel()->rows()) {
            QVERIFY(row.vocabulary.find("an") != std::string::npos ||
                    row.piece.find("an") != std::string::npos);
        }
        QVERIFY(page->vocabularyModel()->index(0, model::TokenTableModel::Score).data().isValid());
        QCOMPARE(page->found()->text(), QStringLiteral("3 tokens found"));
        settle(m_window.get());
        saveScreenshot(m_window.get(), QStringLiteral("tokenizer-tab.png"));
    }
};

QTEST_MAIN(TestWindowMetadata)
#include "tst_window_metadata.moc"
