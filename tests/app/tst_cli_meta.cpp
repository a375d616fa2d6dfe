// organ meta as a user runs it: typed scalars, arrays, a chat template from a file and a deleted
// key read back by our reader with their types; every tensor's bytes as they were; edits that
// would stop llama.cpp loading the model refused before anything is written; the input untouched.
#include "cli_run.h"
#include "fixtures.h"
#include "gguf/gguf_model.h"
#include "shared_models.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace organ;
using namespace organ::testing;

class TestCliMeta : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_model;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        m_model = sharedModel(QStringLiteral("stories260K-f32.gguf"));
    }

    void edits() {
        ORGAN_REQUIRE_SHARED(m_model);
        const QByteArray before = readAll(m_model);
        const QString templateFile = path(QStringLiteral("chat.jinja"));
        const QByteArray chat = "{% for m in messages %}<|{{ m.role }}|>: {{ m.content }}\n{% endfor %}";
        QVERIFY(writeAll(templateFile, chat));
        const QString out = path(QStringLiteral("edited.gguf"));
        const CliRun run = runOrganCli(
            {QStringLiteral("meta"),       m_model,
             QStringLiteral("--set"),      QStringLiteral("general.name=a:b c"),
             QStringLiteral("--set"),      QStringLiteral("llama.context_length=4096"),
             QStringLiteral("--set"),      QStringLiteral("my.ratio=0.25:f64"),
             QStringLiteral("--set"),      QStringLiteral("my.flag=true:bool"),
             QStringLiteral("--set"),      QStringLiteral("my.ids=[3,-1,7]:i32[]"),
             QStringLiteral("--set"),      QStringLiteral("my.words=[\"x\",\"y:z\"]:string[]"),
             QStringLiteral("--set-file"), QStringLiteral("tokenizer.chat_template=") + templateFile,
             QStringLiteral("--delete"),   QStringLiteral("llama.rope.dimension_count"),
             QStringLiteral("-o"),         out});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err + run.out));
        QCOMPARE(readAll(m_model), before);
        const auto source = GgufModel::open(RootedPath(m_model.toStdString()));
        const auto edited = GgufModel::open(RootedPath(out.toStdString()));
        // "a:b c" has no type after its last ':' — a string as it is.
        QCOMPARE(std::string(*edited->find("general.name")->asString()), std::string("a:b c"));
        // Without a type the key keeps the model's (u32).
        QCOMPARE(edited->find("llama.context_length")->type(), ValueType::U32);
        QCOMPARE(*edited->find("llama.context_length")->asUInt(), std::uint64_t(4096));
        QCOMPARE(edited->find("my.ratio")->type(), ValueType::F64);
        QCOMPARE(*edited->find("my.ratio")->asFloat(), 0.25);
        QCOMPARE(*edited->find("my.flag")->asBool(), true);
        const MetaValue* ids = edited->find("my.ids");
        QVERIFY(ids->isArray() && ids->elementType() == ValueType::I32 && ids->arraySize() == 3);
        QCOMPARE(*ids->elements(3)[1].asInt(), std::int64_t(-1));
        const MetaValue* words = edited->find("my.words");
        QCOMPARE(words->elementType(), ValueType::String);
        QCOMPARE(std::string(*words->elements(2)[1].asString()), std::string("y:z"));
        QCOMPARE(QByteArray::fromStdString(std::string(*edited->find("tokenizer.chat_template")->asString())),
                 chat);
        QVERIFY(source->find("llama.rope.dimension_count") != nullptr &&
                edited->find("llama.rope.dimension_count") == nullptr);
        // The tensors as they were, byte for byte.
        QCOMPARE(edited->tensors().size(), source->tensors().size());
        for (const TensorInfo& t : source->tensors()) {
            const TensorInfo* e = edited->findTensor(t.name);
            QVERIFY(e != nullptr && e->type == t.type && e->ne == t.ne);
            const auto a = source->tensorData(t);
            const auto b = edited->tensorData(*e);
            QVERIFY2(a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin()), t.name.c_str());
        }
    }

    void refusals_data() {
        QTest::addColumn<QStringList>("edit");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("said");
        QTest::newRow("architecture removed")
            << QStringList{QStringLiteral("--delete"), QStringLiteral("general.architecture")} << 1
            << QStringLiteral("general.architecture is missing");
        QTest::newRow("block count") << QStringList{QStringLiteral("--set"),
                                                    QStringLiteral("llama.block_count=9")}
                                     << 1 << QStringLiteral("llama.block_count is 9");
        QTest::newRow("tokenizer array")
            << QStringList{QStringLiteral("--set"), QStringLiteral("tokenizer.ggml.scores=[0.5]")} << 1
            << QStringLiteral("tokenizer.ggml.scores has 1 entries for 512 tokens");
        QTest::newRow("not a number")
            << QStringList{QStringLiteral("--set"), QStringLiteral("llama.context_length=many")} << 2
            << QStringLiteral("'many' is not a u32");
        QTest::newRow("out of range")
            << QStringList{QStringLiteral("--set"), QStringLiteral("my.small=300:u8")} << 2
            << QStringLiteral("does not fit a u8");
        QTest::newRow("absent key") << QStringList{QStringLiteral("--delete"), QStringLiteral("no.such.key")}
                                    << 1 << QStringLiteral("has no key 'no.such.key'");
        QTest::newRow("no edit") << QStringList{} << 2 << QStringLiteral("at least one --set");
    }
    void refusals() {
        QFETCH(QStringList, edit);
        QFETCH(int, status);
        QFETCH(QString, said);
        ORGAN_REQUIRE_SHARED(m_model);
        const QString out = path(QStringLiteral("refused.gguf"));
        const CliRun run = runOrganCli(QStringList{QStringLiteral("meta"), m_model} + edit +
                                       QStringList{QStringLiteral("-o"), out});
        QCOMPARE(run.exitCode, status);
        const QString printed = run.err + run.out;
        QVERIFY2(printed.contains(said), qPrintable(printed));
        QVERIFY(!QFile::exists(out));
    }
};

QTEST_GUILESS_MAIN(TestCliMeta)
#include "tst_cli_meta.moc"
