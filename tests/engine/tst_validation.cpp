// organ validate: every real model passes; each kind of breakage is reported.
#include "anatomy/model_validation.h"
#include "fixtures.h"
#include "gguf/gguf_writer.h"
#include "shared_models.h"

#include <QTemporaryDir>
#include <QTest>

using namespace organ;
using namespace organ::testing;

namespace {

QString messages(const std::vector<Finding>& findings) {
    QString text;
    for (const auto& f : findings) {
        text += QString::fromUtf8(severityName(f.severity).data()) + QStringLiteral(": ") +
                QString::fromStdString(f.message) + u'\n';
    }
    return text;
}

} // namespace

class TestValidation : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    // stories260K-f32 rewritten with `edit` applied to its spec.
    QString broken(const QString& name, const std::function<void(GgufWriteSpec&)>& edit) {
        const auto source = GgufFile::open(sharedModel(QStringLiteral("stories260K-f32.gguf")).toStdString());
        GgufWriteSpec spec = specFromFile(*source);
        edit(spec);
        const QString path = m_dir.filePath(name);
        writeFixture(path, spec);
        return path;
    }

private slots:
    // The one format of findings (organ validate, the graft report, the window's lists).
    void findingsFormat() {
        const std::vector<Finding> findings{
            {Finding::Severity::Error, "bad \x1b[31mkey", {}, -1, false},
            {Finding::Severity::Warning, "gap", {}, -1, false},
            {Finding::Severity::Info, "note", {}, -1, false},
        };
        QCOMPARE(findingLine(findings[1]), std::string("warning: gap"));
        QCOMPARE(findingLine(findings[2], "[operation 1 replace] "),
                 std::string("info: [operation 1 replace] note"));
        QCOMPARE(
            findingsText(findings, "m.gguf"),
            std::string(
                "error: bad \\x1B[31mkey\nwarning: gap\ninfo: note\nm.gguf: 1 error(s), 1 warning(s)\n"));
        const FindingCounts counts = countFindings(findings);
        QCOMPARE(counts.errors, std::size_t(1));
        QCOMPARE(counts.warnings, std::size_t(1));
        QCOMPARE(counts.infos, std::size_t(1));
        QVERIFY(!counts.ok());
        QVERIFY(countFindings({findings[1]}).ok());
        QCOMPARE(findingsText({}), std::string());
    }

    // Every model llama.cpp loads validates; the one it refuses (GGUF v1) is named so.
    void everySharedModelIsValid() {
        ORGAN_REQUIRE_SHARED(sharedModel(QString()));
        int checked = 0;
        for (const QString& path : sharedGgufFiles()) {
            const auto model = GgufModel::open(path.toStdString());
            const auto findings = validateModel(*model);
            if (path.endsWith(QStringLiteral("-ggufv1.gguf"))) {
                QVERIFY(messages(findings).contains(
                    QStringLiteral("error: GGUF version 1: llama.cpp no longer reads it")));
                continue;
            }
            for (const auto& f : findings) {
                QVERIFY2(f.severity != Finding::Severity::Error,
                         qPrintable(path + QStringLiteral(": ") + messages(findings)));
            }
            ++checked;
        }
        QVERIFY(checked >= 40);
    }

    void breakages_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("expected");
        QTest::newRow("missing tensor")
            << QStringLiteral("missing") << QStringLiteral("error: block 2 lacks ffn_up.weight");
        QTest::newRow("missing global")
            << QStringLiteral("no-norm") << QStringLiteral("error: the model lacks output_norm.weight");
        QTest::newRow("block count high")
            << QStringLiteral("count-high")
            << QStringLiteral("error: block 5 has no tensors (llama.block_count is 6)");
        QTest::newRow("block count low")
            << QStringLiteral("count-low")
            << QStringLiteral("error: orphan tensors: block 4 is beyond llama.block_count (4)");
        QTest::newRow("wrong shape")
            << QStringLiteral("shape")
            << QStringLiteral("error: blk.1.attn_k.weight: shape 64 × 64, expected 64 × 32 from "
                              "embedding_length 64, head_count 8, head_count_kv 4, head size 8");
        QTest::newRow("no architecture")
            << QStringLiteral("no-arch") << QStringLiteral("error: the key general.architecture is missing");
        QTest::newRow("unknown tensor")
            << QStringLiteral("unknown")
            << QStringLiteral(
                   "error: llama.cpp does not load blk.0.mystery.weight for llama and refuses a file with "
                   "tensors it does not load (wrong number of tensors)");
        QTest::newRow("gap") << QStringLiteral("gap") << QStringLiteral("error: block 3 has no tensors");
        // llama.cpp asserts on scores or token types of strings, and reads a short array past its end.
        QTest::newRow("scores of strings")
            << QStringLiteral("scores-strings")
            << QStringLiteral(
                   "error: the key tokenizer.ggml.scores is an array of string; llama.cpp reads an "
                   "array of f32, one per token");
        QTest::newRow("scores too few")
            << QStringLiteral("scores-short")
            << QStringLiteral("error: the key tokenizer.ggml.scores has 3 entries for 512 tokens");
        QTest::newRow("token types of strings")
            << QStringLiteral("types-strings")
            << QStringLiteral(
                   "error: the key tokenizer.ggml.token_type is an array of string; llama.cpp reads an "
                   "array of i32, one per token");
        QTest::newRow("token types too few")
            << QStringLiteral("types-short")
            << QStringLiteral("error: the key tokenizer.ggml.token_type has 2 entries for 512 tokens");
        QTest::newRow("token types a number")
            << QStringLiteral("types-scalar")
            << QStringLiteral("error: the key tokenizer.ggml.token_type is i32; llama.cpp reads an array");
    }

    void breakages() {
        QFETCH(QString, name);
        QFETCH(QString, expected);
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        auto drop = [](GgufWriteSpec& spec, auto predicate) {
            spec.tensors.erase(std::remove_if(spec.tensors.begin(), spec.tensors.end(), predicate),
                               spec.tensors.end());
        };
        const QString path = broken(name + QStringLiteral(".gguf"), [&](GgufWriteSpec& spec) {
            if (name == QStringLiteral("missing")) {
                drop(spec, [](const TensorToWrite& t) { return t.name == "blk.2.ffn_up.weight"; });
            } else if (name == QStringLiteral("no-norm")) {
                drop(spec, [](const TensorToWrite& t) { return t.name == "output_norm.weight"; });
            } else if (name == QStringLiteral("count-high")) {
                spec.set("llama.block_count", MetaValue::fromU32(6));
            } else if (name == QStringLiteral("count-low")) {
                spec.set("llama.block_count", MetaValue::fromU32(4));
            } else if (name == QStringLiteral("shape")) {
                for (auto& t : spec.tensors) {
                    if (t.name == "blk.1.attn_k.weight") {
                        t = patternTensor(t.name, TensorType::F32, {64, 64}, 1);
                    }
                }
            } else if (name == QStringLiteral("no-arch")) {
                spec.metadata.erase(
                    std::remove_if(spec.metadata.begin(), spec.metadata.end(),
                                   [](const auto& kv) { return kv.first == "general.architecture"; }),
                    spec.metadata.end());
            } else if (name == QStringLiteral("unknown")) {
                spec.tensors.push_back(patternTensor("blk.0.mystery.weight", TensorType::F32, {8}, 2));
            } else if (name == QStringLiteral("gap")) {
                drop(spec, [](const TensorToWrite& t) { return t.name.starts_with("blk.3."); });
            } else if (name == QStringLiteral("scores-strings")) {
                spec.set("tokenizer.ggml.scores", MetaValue::fromStrings({"a", "b"}));
            } else if (name == QStringLiteral("scores-short")) {
                const float three[] = {0, 1, 2};
                spec.set("tokenizer.ggml.scores", MetaValue::fromF32s(three));
            } else if (name == QStringLiteral("types-strings")) {
                spec.set("tokenizer.ggml.token_type", MetaValue::fromStrings({"1"}));
            } else if (name == QStringLiteral("types-short")) {
                const std::int32_t two[] = {1, 1};
                spec.set("tokenizer.ggml.token_type", MetaValue::fromI32s(two));
            } else if (name == QStringLiteral("types-scalar")) {
                spec.set("tokenizer.ggml.token_type", MetaValue::fromI32(1));
            }
        });
        const auto findings = validateModel(*GgufModel::open(path.toStdString()));
        QVERIFY2(messages(findings).contains(expected), qPrintable(messages(findings)));
    }
};

QTEST_APPLESS_MAIN(TestValidation)
#include "tst_validation.moc"
