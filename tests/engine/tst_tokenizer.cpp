// The tokenizers against llama.cpp's token ids (tests/data/tokenizer/llama-cpp-token-ids.json:
// our own texts — spaces, newlines, contractions, digits, Unicode, invalid UTF-8 — tokenized by
// llama.cpp with the vocabularies of ../shared/models), the pre-tokenizers piece by piece, and
// the refusals.
#include "gguf/gguf_writer.h"
#include "shared_models.h"
#include "support/errors.h"
#include "token_ids.h"
#include "vitals/pre_tokenizer.h"
#include "vitals/tokenizer.h"
#include "vitals/unicode_classes.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <nlohmann/json.hpp>

using namespace organ;
using namespace organ::testing;

namespace {

std::string fromHex(const std::string& hex) {
    return QByteArray::fromHex(QByteArray::fromStdString(hex)).toStdString();
}

// The shared vocabulary, or a copy of it with another tokenizer.ggml.pre.
std::string vocabulary(const QString& file, const std::string& pre, const QTemporaryDir& dir) {
    const std::string path = sharedModel(file).toStdString();
    if (pre.empty()) {
        return path;
    }
    GgufWriteSpec spec = specFromFile(*GgufFile::open(path));
    spec.set("tokenizer.ggml.pre", MetaValue::fromString(pre));
    const std::string copy =
        dir.filePath(QString::fromStdString(pre) + QStringLiteral(".gguf")).toStdString();
    const JobResult written = writeGguf(copy, spec);
    if (!written.isOk()) {
        throw std::runtime_error(written.message);
    }
    return copy;
}

Tokenizer tokenizerOf(const std::string& path) {
    return Tokenizer::fromModel(*GgufModel::open(path));
}

std::vector<std::string> split(PreTokenizer kind, std::string_view text) {
    return preTokenize(kind, text);
}

using Words = std::vector<std::string>;

} // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

private slots:
    void matchesLlamaCpp_data() {
        QTest::addColumn<int>("index");
        const nlohmann::json expected = llamaCppTokenIds();
        QVERIFY(!expected.empty());
        for (std::size_t i = 0; i < expected["vocabularies"].size(); ++i) {
            const auto& v = expected["vocabularies"][i];
            const std::string name = v["file"].get<std::string>() +
                                     (v["pre"].is_null() ? "" : " as " + v["pre"].get<std::string>());
            QTest::newRow(name.c_str()) << int(i);
        }
    }

    void matchesLlamaCpp() {
        QFETCH(int, index);
        const nlohmann::json expected = llamaCppTokenIds();
        const auto& v = expected["vocabularies"][std::size_t(index)];
        const QString file = QString::fromStdString(v["file"].get<std::string>());
        ORGAN_REQUIRE_SHARED(sharedModel(file));
        QTemporaryDir dir;
        const Tokenizer tokenizer = tokenizerOf(
            vocabulary(file, v["pre"].is_null() ? std::string() : v["pre"].get<std::string>(), dir));
        const auto& texts = expected["texts_hex"];
        QCOMPARE(v["tokens"].size(), texts.size());
        for (std::size_t t = 0; t < texts.size(); ++t) {
            const std::string text = fromHex(texts[t].get<std::string>());
            const auto want = v["tokens"][t].get<std::vector<std::int32_t>>();
            const auto got = tokenizer.encode(text);
            if (got != want) {
                QString detail =
                    QStringLiteral("text %1 (%2): llama.cpp").arg(t).arg(QString::fromStdString(texts[t]));
                for (const auto id : want) {
                    detail += QStringLiteral(" %1").arg(id);
                }
                detail += QStringLiteral(", ours");
                for (const auto id : got) {
                    detail += QStringLiteral(" %1").arg(id);
                }
                QFAIL(qPrintable(detail));
            }
        }
    }

    // What goes in comes back out: byte-level BPE loses nothing of valid UTF-8.
    void bytePairsRoundTrip() {
        const QString file = QStringLiteral("ggml-vocab-gpt-2.gguf");
        ORGAN_REQUIRE_SHARED(sharedModel(file));
        QTemporaryDir dir;
        for (const std::string pre : {"", "llama-bpe", "qwen2"}) {
            const Tokenizer tokenizer = tokenizerOf(vocabulary(file, pre, dir));
            for (const std::string& text :
                 {std::string("  Hello,\tworld!\r\n\n 12345 naïve Привет 日本語 🦙 'S"),
                  std::string(4000, 'x'), std::string("\xC2\xA0\xE3\x80\x80")}) {
                std::vector<std::int32_t> tokens = tokenizer.encode(text);
                if (!tokens.empty() && tokens.front() == tokenizer.bos()) {
                    tokens.erase(tokens.begin());
                }
                QCOMPARE(tokenizer.decode(tokens), text);
            }
        }
        // A long run of one letter is still a handful of tokens, not one per letter.
        const Tokenizer gpt2 = tokenizerOf(sharedModel(file).toStdString());
        QVERIFY(gpt2.encode(std::string(4000, 'x')).size() < 1000);
        QCOMPARE(gpt2.kind(), std::string("gpt2 (gpt-2)"));
        QVERIFY(gpt2.encode("").empty());
    }

    void sentencePieceEdges() {
        const QString file = QStringLiteral("stories260K-f32.gguf");
        ORGAN_REQUIRE_SHARED(sharedModel(file));
        const Tokenizer spm = tokenizerOf(sharedModel(file).toStdString());
        QCOMPARE(spm.kind(), std::string("llama"));
        QCOMPARE(spm.encode(""), std::vector<std::int32_t>{spm.bos()});
        // Bytes no token spells fall back to byte tokens and come back.
        const std::string unknown = "\xE2\x9C\x93 \xF0\x9F\xA6\x99";
        QCOMPARE(spm.decode(spm.encode(unknown)), " " + unknown);
    }

    void preTokenizersCutWords() {
        QCOMPARE(split(PreTokenizer::Gpt2, "Hello  world's 123"),
                 (Words{"Hello", " ", " world", "'s", " 123"}));
        QCOMPARE(split(PreTokenizer::Gpt2, "I'M"), (Words{"I", "'", "M"}));
        QCOMPARE(split(PreTokenizer::Llama3, "I'M 12345\n\n  x"),
                 (Words{"I", "'M", " ", "123", "45", "\n\n", " ", " x"}));
        QCOMPARE(split(PreTokenizer::Qwen2, "a123"), (Words{"a", "1", "2", "3"}));
        QCOMPARE(split(PreTokenizer::StarCoder, "x=12"), (Words{"x", "=", "1", "2"}));
        QCOMPARE(split(PreTokenizer::Falcon, "1234567!!"), (Words{"123", "456", "7", "!!"}));
        QCOMPARE(split(PreTokenizer::Default, "a 12345,"), (Words{"a", " ", "123", "45", ","}));
        QCOMPARE(split(PreTokenizer::Llama3, "(Привет)"), (Words{"(Привет", ")"}));
        // Invalid UTF-8 reads as U+FFFD, one per stray byte.
        QCOMPARE(split(PreTokenizer::Gpt2, "a\xFF\xFE"), (Words{"a", "\xEF\xBF\xBD\xEF\xBF\xBD"}));
        QVERIFY(split(PreTokenizer::Gpt2, "").empty());
        QCOMPARE(preTokenizerNamed("qwen2"), std::optional(PreTokenizer::Qwen2));
        QCOMPARE(preTokenizerNamed("llama-bpe"), std::optional(PreTokenizer::Llama3));
        QVERIFY(!preTokenizerNamed("deepseek-llm"));
    }

    void unicodeClasses() {
        QCOMPARE(charClass(U'a'), CharClass::Letter);
        QCOMPARE(charClass(U'Ж'), CharClass::Letter);
        QCOMPARE(charClass(U'語'), CharClass::Letter);
        QCOMPARE(charClass(U'7'), CharClass::Number);
        QCOMPARE(charClass(U'٣'), CharClass::Number);
        QCOMPARE(charClass(U'Ⅳ'), CharClass::Number);
        QCOMPARE(charClass(U'!'), CharClass::Punctuation);
        QCOMPARE(charClass(U'「'), CharClass::Punctuation);
        QCOMPARE(charClass(U'$'), CharClass::Other);
        QCOMPARE(charClass(U'🦙'), CharClass::Other);
        QCOMPARE(charClass(char32_t(0x10FFFF)), CharClass::Other);
        QCOMPARE(charClass(char32_t(0x1FFFFF)), CharClass::Other);
        QVERIFY(isWhitespace(U'\u3000') && isWhitespace(U'\u0085') && !isWhitespace(U'\u200B'));
        QCOMPARE(codePointsOf("\xC3"), std::u32string(1, 0xFFFD));
        QCOMPARE(utf8Of(codePointsOf("naïve 🦙")), std::string("naïve 🦙"));
    }

    void refusesWhatItCannotRead() {
        const QString bert = sharedModel(QStringLiteral("ggml-vocab-bert-bge.gguf"));
        const QString gpt2 = QStringLiteral("ggml-vocab-gpt-2.gguf");
        ORGAN_REQUIRE_SHARED(bert);
        ORGAN_REQUIRE_SHARED(sharedModel(gpt2));
        try {
            tokenizerOf(bert.toStdString());
            QFAIL("a WordPiece vocabulary was accepted");
        } catch (const VitalsUnavailable& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("ggml-vocab-bert-bge.gguf")),
                     e.what());
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("'bert' tokenizer")), e.what());
        }
        QTemporaryDir dir;
        try {
            tokenizerOf(vocabulary(gpt2, "deepseek-llm", dir));
            QFAIL("an unknown pre-tokenizer was accepted");
        } catch (const VitalsUnavailable& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("'deepseek-llm' pre-tokenizer")),
                     e.what());
        }
        // BPE without its merges is a broken vocabulary, said so.
        GgufWriteSpec spec = specFromFile(*GgufFile::open(sharedModel(gpt2).toStdString()));
        std::erase_if(spec.metadata, [](const auto& kv) { return kv.first == "tokenizer.ggml.merges"; });
        const std::string noMerges = dir.filePath(QStringLiteral("no-merges.gguf")).toStdString();
        QVERIFY(writeGguf(noMerges, spec).isOk());
        QVERIFY_THROWS_EXCEPTION(FormatError, tokenizerOf(noMerges));
    }
};

QTEST_APPLESS_MAIN(TestTokenizer)
#include "tst_tokenizer.moc"
