// organ merge as a user runs it: mergekit's YAML (paths relative to the configuration) and quick
// merges from options, the merge's vital signs before anything is written, passthrough slices,
// out_type, the JSON outcome; every key it does not support refused by name, and hostile
// configurations (syntax, nesting, sizes, special files, control characters) refused cleanly with
// the file named, nothing written and the inputs untouched.
#include "cli_run.h"
#include "fixtures.h"
#include "gguf/gguf_model.h"
#include "gguf/specimen.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace organ;
using namespace organ::testing;

namespace {

// The argument vector of the organ command line (ORGAN_CLI) with `args`, for posix_spawn.
class OrganArgv {
public:
    explicit OrganArgv(const QStringList& args) : m_words{qgetenv("ORGAN_CLI").toStdString()} {
        for (const QString& arg : args) {
            m_words.push_back(arg.toStdString());
        }
        for (std::string& word : m_words) {
            m_argv.push_back(word.data());
        }
        m_argv.push_back(nullptr);
    }
    OrganArgv(const OrganArgv&) = delete; // m_argv points into m_words
    OrganArgv& operator=(const OrganArgv&) = delete;
    const char* program() const { return m_argv.front(); }
    char* const* data() const { return m_argv.data(); }

private:
    std::vector<std::string> m_words;
    std::vector<char*> m_argv;
};

// Runs the organ command line with `args`, stdout and stderr pipes, stderr kept full until the
// first line has come on stdout, so that the program waits at its first progress line: after its
// first line on stdout, before its last. Then calls `paused` and, when `leave`, closes stdout (its
// reader leaves), and reads stderr to its end into `err` (when given). The program's exit status;
// -2 when a signal killed it, -3 when the first line did not come within a minute (it is then
// killed). SIGPIPE is at its default in the program.
int runPausedAtFirstLine(const QStringList& args, const std::function<void()>& paused, bool leave,
                         QString* err = nullptr) {
    int out[2];
    int errPipe[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) {
        return -1;
    }
    fcntl(errPipe[1], F_SETFL, O_NONBLOCK);
    const char filler[4096] = {};
    while (write(errPipe[1], filler, sizeof filler) > 0) {
    }
    // A write of less than a page may still fit: the pipe is full only once a byte does not.
    while (write(errPipe[1], filler, 1) > 0) {
    }
    fcntl(errPipe[1], F_SETFL, 0);
    OrganArgv argv(args);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, errPipe[1], STDERR_FILENO);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t pipeSignal;
    sigemptyset(&pipeSignal);
    sigaddset(&pipeSignal, SIGPIPE);
    posix_spawnattr_setsigdefault(&attributes, &pipeSignal);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
    pid_t child = -1;
    const int spawned = posix_spawn(&child, argv.program(), &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    close(out[1]);
    close(errPipe[1]);
    bool lineCame = false;
    char buffer[4096];
    pollfd reader{out[0], POLLIN, 0};
    while (spawned == 0 && !lineCame && poll(&reader, 1, 60000) > 0) {
        const ssize_t n = read(out[0], buffer, sizeof buffer);
        if (n <= 0) {
            break;
        }
        lineCame = std::memchr(buffer, '\n', static_cast<std::size_t>(n)) != nullptr;
    }
    if (spawned != 0) {
        close(out[0]);
        close(errPipe[0]);
        return -1;
    }
    if (!lineCame) {
        kill(child, SIGKILL);
    } else if (paused) {
        paused();
    }
    if (leave) {
        close(out[0]);
    }
    QByteArray said;
    for (ssize_t n = 0; (n = read(errPipe[0], buffer, sizeof buffer)) > 0;) {
        said.append(buffer, n);
    }
    close(errPipe[0]);
    if (!leave) {
        while (read(out[0], buffer, sizeof buffer) > 0) {
        }
        close(out[0]);
    }
    if (err != nullptr) {
        *err = QString::fromUtf8(said.replace('\0', QByteArray()));
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!lineCame) {
        return -3;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

// Runs the organ command line with `args`, its output thrown away, and gives its peak resident
// memory in KiB (VmHWM, read every 10 ms while it runs: wait4's figure counts the memory of the
// process that spawned it), or -1 when it did not run or exit 0.
long peakKiBOfOrgan(const QStringList& args) {
    OrganArgv argv(args);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t child = -1;
    const int spawned = posix_spawn(&child, argv.program(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
        return -1;
    }
    long peak = 0;
    int status = 0;
    while (waitpid(child, &status, WNOHANG) == 0) {
        QFile file(QStringLiteral("/proc/%1/status").arg(child));
        if (file.open(QIODevice::ReadOnly)) {
            for (const QByteArray& line : file.readAll().split('\n')) {
                if (line.startsWith("VmHWM:")) {
                    peak = std::max(peak, line.mid(6).trimmed().split(' ').front().toLong());
                }
            }
        }
        usleep(10000);
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? peak : -1;
}

std::string metaString(const GgufModel& model, const char* key) {
    const MetaValue* v = model.find(key);
    return v != nullptr ? std::string(v->asString().value_or("")) : std::string();
}

const char* kTies = R"(models:
  - model: models/a.gguf
    parameters:
      density: [0.3, 0.7]
      weight:
        - filter: self_attn
          value: 0.6
        - value: 0.4
  - model: models/b.gguf
    parameters:
      density: 0.5
      weight: 0.5
merge_method: ties
base_model: models/base.gguf
parameters:
  normalize: true
  int8_mask: true
dtype: bfloat16
tokenizer_source: base
)";

} // namespace

class TestCliMerge : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }
    QString config(const QString& name, const QByteArray& text) const {
        const QString file = path(name);
        return writeAll(file, text) ? file : QString();
    }
    QByteArray inputs() const { return folderDigest(path(QStringLiteral("models"))); }

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("models")));
        SpecimenShape shape;
        shape.feedForward = 128;
        shape.blocks = 3;
        for (const auto& [name, seed] : {std::pair{"base", 1}, {"a", 2}, {"b", 3}}) {
            const QString file = path(QStringLiteral("models/%1.gguf").arg(QLatin1String(name)));
            QVERIFY(writeSpecimen(file.toStdString(), seed, shape).isOk());
        }
        QVERIFY(
            writeAll(path(QStringLiteral("story.txt")),
                     "Once upon a time there was a little girl. She liked to play in the sun with her dog."));
    }

    // mergekit's configuration as written for mergekit, with GGUF paths: merged, recorded (its
    // gradients and filtered values as given), the inputs untouched; what has no effect here is said.
    void mergesFromYaml() {
        const QByteArray before = inputs();
        const QString yaml = config(QStringLiteral("ties.yaml"), kTies);
        const QString out = path(QStringLiteral("ties.gguf"));
        const QString json = path(QStringLiteral("ties.json"));
        const CliRun run = runOrganCli(
            {QStringLiteral("merge"), yaml, QStringLiteral("-o"), out, QStringLiteral("--json"), json});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err + run.out));
        QVERIFY2(
            run.out.contains(QStringLiteral("merge (ties): 30 tensors from base.gguf, a.gguf and b.gguf")),
            qPrintable(run.out));
        QVERIFY(run.out.contains(QStringLiteral("wrote ")));
        QVERIFY(run.err.contains(QStringLiteral("note: dtype bfloat16 ignored")));
        QVERIFY2(
            run.err.contains(QStringLiteral(
                "note: tokenizer_source base: the output keeps the base's tokenizer, as it always does")),
            qPrintable(run.err));
        QVERIFY(run.err.contains(QStringLiteral("note: int8_mask")));
        QCOMPARE(inputs(), before);
        const auto merged = GgufModel::open(out.toStdString());
        QCOMPARE(metaString(*merged, "organ.merge.method"), std::string("ties"));
        QCOMPARE(metaString(*merged, "organ.merge.base"), std::string("base: organ-specimen"));
        // The YAML's gradient and filtered values, as read (each rule, each point).
        const QJsonDocument recorded =
            QJsonDocument::fromJson(QByteArray::fromStdString(metaString(*merged, "organ.merge.parameters")));
        const QJsonDocument expected = QJsonDocument::fromJson(R"({"base": "base", "method": "ties",
            "models": [{"model": "a", "parameters": {"density": [0.3, 0.7],
                        "weight": [{"filter": "self_attn", "value": 0.6}, {"value": 0.4}]}},
                       {"model": "b", "parameters": {"density": 0.5, "weight": 0.5}}],
            "parameters": {"normalize": true}})");
        QVERIFY(!expected.isNull());
        QCOMPARE(recorded, expected);
        const QJsonObject outcome = QJsonDocument::fromJson(readAll(json)).object();
        QCOMPARE(outcome.value(QStringLiteral("written")).toBool(), true);
        QVERIFY(outcome.contains(QStringLiteral("error")) && outcome.value(QStringLiteral("error")).isNull());
        QCOMPARE(outcome.value(QStringLiteral("merge")).toObject().value(QStringLiteral("method")).toString(),
                 QStringLiteral("ties"));
        QCOMPARE(outcome.value(QStringLiteral("notes")).toArray().size(), 3);
        QVERIFY(outcome.value(QStringLiteral("vitals")).isNull());
    }

    // --method … --model PATH:WEIGHT: a linear merge of two models, value for value.
    void quickMerge() {
        const QString a = path(QStringLiteral("models/a.gguf"));
        const QString b = path(QStringLiteral("models/b.gguf"));
        const QString out = path(QStringLiteral("linear.gguf"));
        const CliRun run =
            runOrganCli({QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("linear"),
                         QStringLiteral("--model"), a + QStringLiteral(":0.25"), QStringLiteral("--model"),
                         b + QStringLiteral(":0.75"), QStringLiteral("-o"), out});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err + run.out));
        const auto merged = GgufModel::open(out.toStdString());
        const auto x = tensorValues(*GgufModel::open(a.toStdString()), "blk.1.ffn_up.weight");
        const auto y = tensorValues(*GgufModel::open(b.toStdString()), "blk.1.ffn_up.weight");
        const auto got = tensorValues(*merged, "blk.1.ffn_up.weight");
        for (std::size_t i = 0; i < got.size(); i += 97) {
            QVERIFY(std::abs(got[i] - (0.25f * x[i] + 0.75f * y[i])) <= 1e-6f * (1 + std::abs(got[i])));
        }
        // Usage errors: exit status 2.
        QCOMPARE(runOrganCli({QStringLiteral("merge")}).exitCode, 2);
        QCOMPARE(runOrganCli({QStringLiteral("merge"), path(QStringLiteral("ties.yaml")),
                              QStringLiteral("--model"), a, QStringLiteral("-o"), out})
                     .exitCode,
                 2);
        const CliRun slerp = runOrganCli({QStringLiteral("merge"), QStringLiteral("--method"),
                                          QStringLiteral("slerp"), QStringLiteral("--base"), a,
                                          QStringLiteral("--model"), b, QStringLiteral("-o"), out});
        QCOMPARE(slerp.exitCode, 2);
        QVERIFY(slerp.err.contains(QStringLiteral("slerp needs the parameter 't'")));
        // --json F says why nothing was written when a model cannot be opened, or the
        // configuration is refused.
        const QString refusedJson = path(QStringLiteral("refused.json"));
        for (const QStringList& args :
             {QStringList{QStringLiteral("--method"), QStringLiteral("ties"), QStringLiteral("--base"), a,
                          QStringLiteral("--model"), path(QStringLiteral("models/gone.gguf"))},
              QStringList{config(QStringLiteral("nan.yaml"),
                                 "merge_method: ties\nbase_model: models/base.gguf\nmodels:\n  - model: "
                                 "models/a.gguf\n    parameters: {weight: .nan}\n")}}) {
            QFile::remove(refusedJson);
            const CliRun refused =
                runOrganCli(QStringList{QStringLiteral("merge")} + args +
                            QStringList{QStringLiteral("-o"), out, QStringLiteral("--json"), refusedJson});
            QCOMPARE(refused.exitCode, 1);
            const QJsonObject document = QJsonDocument::fromJson(readAll(refusedJson)).object();
            QVERIFY2(document.value(QStringLiteral("written")) == QJsonValue(false) &&
                         (document.value(QStringLiteral("error"))
                              .toString()
                              .contains(QStringLiteral("gone.gguf")) ||
                          document.value(QStringLiteral("error"))
                              .toString()
                              .contains(QStringLiteral("'weight' values must be finite numbers"))),
                     readAll(refusedJson).constData());
        }
        // A model that is not there is refused before anything opens; a Hugging Face id is said to be one.
        const CliRun hub =
            runOrganCli({QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("linear"),
                         QStringLiteral("--model"), a, QStringLiteral("--model"),
                         QStringLiteral("mistralai/Mistral-7B-v0.1"), QStringLiteral("-o"), out});
        QCOMPARE(hub.exitCode, 1);
        QVERIFY2(hub.err.contains(
                     QStringLiteral("organ merge: --model: model 'mistralai/Mistral-7B-v0.1': no such "
                                    "file or folder (models are GGUF files or organ directories, not "
                                    "Hugging Face ids)")),
                 qPrintable(hub.err));
        const CliRun goneBase =
            runOrganCli({QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("ties"),
                         QStringLiteral("--base"), path(QStringLiteral("models/gone.gguf")),
                         QStringLiteral("--model"), a, QStringLiteral("-o"), out});
        QCOMPARE(goneBase.exitCode, 1);
        QVERIFY2(
            goneBase.err.contains(QStringLiteral("organ merge: --base: model '%1': no such file or folder\n")
                                      .arg(path(QStringLiteral("models/gone.gguf")))),
            qPrintable(goneBase.err));
        // The base spelled another way among the models is the base: not merged with itself.
        const QString againBase = path(QStringLiteral("models/./base.gguf"));
        const CliRun self =
            runOrganCli({QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("ties"),
                         QStringLiteral("--base"), path(QStringLiteral("models/base.gguf")),
                         QStringLiteral("--model"), againBase, QStringLiteral("-o"), out});
        QCOMPARE(self.exitCode, 1);
        QVERIFY2(self.out.contains(QStringLiteral("ties needs at least one model beside the base")),
                 qPrintable(self.out + self.err));
        // A method that is not one names those that are (passthrough needs slices).
        for (const auto& [method, said] :
             {std::pair{QStringLiteral("Ties"), QStringLiteral("(names are lowercase: 'ties')")},
              std::pair{QStringLiteral("passthrough"),
                        QStringLiteral("(passthrough takes a configuration with slices)")},
              std::pair{QStringLiteral("della"), QStringLiteral("breadcrumbs_ties, model_stock\n")}}) {
            const CliRun refused = runOrganCli({QStringLiteral("merge"), QStringLiteral("--method"), method,
                                                QStringLiteral("--base"), a, QStringLiteral("--model"), b,
                                                QStringLiteral("-o"), out});
            QCOMPARE(refused.exitCode, 2);
            QVERIFY2(refused.err.contains(QStringLiteral("--method '") + method +
                                          QStringLiteral("' is not one of linear, slerp")) &&
                         refused.err.contains(said),
                     qPrintable(refused.err));
        }
        // A weight that is no number is said to be one, not taken for part of the file's name; a
        // leading + is a sign.
        const std::vector<std::pair<QString, QString>> weights{
            {a + QStringLiteral(":1e999"),
             QStringLiteral(": the weight '1e999' is not a finite number in range")},
            {a + QStringLiteral(":nan"),
             QStringLiteral(": the weight 'nan' is not a finite number in range")},
            {a + QStringLiteral(":0x10"),
             QStringLiteral(": the weight '0x10' is not a finite number in range")},
            {a + QStringLiteral(":1,5"),
             QStringLiteral(": the weight '1,5' is not a finite number in range")},
            {path(QStringLiteral("models/missing.gguf:2,5")),
             QStringLiteral(": the weight '2,5' is not a finite number in range")},
            {QStringLiteral(":1"), QStringLiteral("--model ':1' names no model")},
            {QString(), QStringLiteral("--model '' names no model")},
        };
        for (const auto& [model, message] : weights) {
            const CliRun refused = runOrganCli({QStringLiteral("merge"), QStringLiteral("--method"),
                                                QStringLiteral("linear"), QStringLiteral("--model"), model,
                                                QStringLiteral("--model"), b, QStringLiteral("-o"), out});
            QCOMPARE(refused.exitCode, 2);
            QVERIFY2(refused.err.contains(message), qPrintable(refused.err));
        }
        QVERIFY(QFile::remove(out));
        QCOMPARE(runOrganCli({QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("linear"),
                              QStringLiteral("--model"), a + QStringLiteral(":+0.5"),
                              QStringLiteral("--model"), b, QStringLiteral("-o"), out})
                     .exitCode,
                 0);
    }

    // --vitals: the merge's vital signs and its models' on the text, before anything is written.
    void vitalsBeforeWriting() {
        const QString yaml = config(QStringLiteral("ties-vitals.yaml"), kTies);
        const QString out = path(QStringLiteral("ties-vitals.gguf"));
        const QString json = path(QStringLiteral("ties-vitals.json"));
        const CliRun run =
            runOrganCli({QStringLiteral("merge"), yaml, QStringLiteral("-o"), out, QStringLiteral("--vitals"),
                         path(QStringLiteral("story.txt")), QStringLiteral("--json"), json});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err + run.out));
        QVERIFY(run.out.contains(QStringLiteral("ties-vitals.gguf (planned)")));
        for (const char* parent : {"base.gguf", "a.gguf", "b.gguf"}) {
            QVERIFY2(run.out.contains(QLatin1String(parent)), qPrintable(run.out));
        }
        QVERIFY(run.out.indexOf(QStringLiteral("perplexity")) < run.out.indexOf(QStringLiteral("wrote ")));
        const QJsonObject vitals =
            QJsonDocument::fromJson(readAll(json)).object().value(QStringLiteral("vitals")).toObject();
        QCOMPARE(vitals.value(QStringLiteral("parents")).toArray().size(), 3);
        QVERIFY(vitals.value(QStringLiteral("perplexity")).toDouble() > 1);

        // A merge whose values are not numbers is not alive: said, and not written.
        GgufWriteSpec spec =
            specFromFile(*GgufFile::open(path(QStringLiteral("models/b.gguf")).toStdString()));
        for (TensorToWrite& t : spec.tensors) {
            if (t.name == "output_norm.weight") {
                auto nan =
                    std::make_shared<std::vector<float>>(t.ne[0], std::numeric_limits<float>::quiet_NaN());
                t.source = {};
                t.source.bytes = std::as_bytes(std::span(*nan));
                t.source.owner = nan;
            }
        }
        QVERIFY(writeFixture(path(QStringLiteral("models/nan.gguf")), spec));
        const QString dead = path(QStringLiteral("dead.gguf"));
        const CliRun refused = runOrganCli(
            {QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("slerp"),
             QStringLiteral("--t"), QStringLiteral("0.5"), QStringLiteral("--base"),
             path(QStringLiteral("models/base.gguf")), QStringLiteral("--model"),
             path(QStringLiteral("models/nan.gguf")), QStringLiteral("-o"), dead, QStringLiteral("--vitals"),
             path(QStringLiteral("story.txt")), QStringLiteral("--json"), path(QStringLiteral("dead.json"))});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains(QStringLiteral(
                     "the merge's vital signs: output_norm.weight: the merge gives values that "
                     "are not finite numbers")),
                 qPrintable(refused.err));
        QVERIFY(refused.err.contains(QStringLiteral("dead.gguf not written")));
        QVERIFY(!QFileInfo::exists(dead));
        // The JSON outcome says why, as the terminal does.
        const QJsonObject deadOutcome =
            QJsonDocument::fromJson(readAll(path(QStringLiteral("dead.json")))).object();
        QCOMPARE(deadOutcome.value(QStringLiteral("written")).toBool(true), false);
        QVERIFY2(
            deadOutcome.value(QStringLiteral("error"))
                .toString()
                .startsWith(QStringLiteral("the merge's vital signs: output_norm.weight: the merge gives")),
            qPrintable(deadOutcome.value(QStringLiteral("error")).toString()));
    }

    // mergekit's passthrough slices become the plan's stack; out_type quantizes as organ quantize.
    void passthroughAndOutType() {
        const QString yaml = config(QStringLiteral("stack.yaml"), R"(slices:
  - sources:
      - model: models/a.gguf
        layer_range: [0, 2]
  - sources:
      - model: models/b.gguf
        layer_range: [1, 3]
merge_method: passthrough
dtype: float16
)");
        const QString out = path(QStringLiteral("stack.gguf"));
        const CliRun run = runOrganCli({QStringLiteral("merge"), yaml, QStringLiteral("-o"), out});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err + run.out));
        const auto stacked = GgufModel::open(out.toStdString());
        QCOMPARE(stacked->archValue("block_count").value_or(0), std::uint64_t(4));
        const auto b = GgufModel::open(path(QStringLiteral("models/b.gguf")).toStdString());
        QVERIFY(std::ranges::equal(stacked->tensorData(*stacked->findTensor("blk.3.ffn_up.weight")),
                                   b->tensorData(*b->findTensor("blk.2.ffn_up.weight"))));

        const QString quantized = config(QStringLiteral("q8.yaml"), QByteArray(kTies) + "out_type: Q8_0\n");
        const QString q8 = path(QStringLiteral("ties-q8_0.gguf"));
        const CliRun q = runOrganCli({QStringLiteral("merge"), quantized, QStringLiteral("-o"), q8});
        QVERIFY2(q.exitCode == 0, qPrintable(q.err + q.out));
        const auto merged = GgufModel::open(q8.toStdString());
        QCOMPARE(merged->findTensor("blk.0.attn_q.weight")->type, TensorType::Q8_0);
        QCOMPARE(merged->findTensor("blk.0.attn_norm.weight")->type, TensorType::F32);
        QCOMPARE(merged->find("general.file_type")->asUInt().value_or(0), std::uint64_t(7));
    }

    // The slerp configuration of mergekit's README: one slice, two sources over every layer, t
    // filtered and graded. A slice that cuts layers is passthrough's, not slerp's.
    void slerpSlices() {
        const QByteArray slerp = R"(slices:
  - sources:
      - model: models/base.gguf
        layer_range: [0, 3]
      - model: models/a.gguf
        layer_range: [0, 3]
merge_method: slerp
base_model: models/base.gguf
parameters:
  t:
    - filter: self_attn
      value: [0, 0.5, 0.3, 0.7, 1]
    - filter: mlp
      value: [1, 0.5, 0.7, 0.3, 0]
    - value: 0.5
dtype: bfloat16
)";
        const QString out = path(QStringLiteral("slerp.gguf"));
        const CliRun run = runOrganCli({QStringLiteral("merge"), config(QStringLiteral("slerp.yaml"), slerp),
                                        QStringLiteral("-o"), out});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err + run.out));
        QVERIFY2(run.out.contains(QStringLiteral("merge (slerp): 30 tensors from base.gguf and a.gguf")),
                 qPrintable(run.out));
        QByteArray cut = slerp;
        cut.replace("[0, 3]", "[0, 2]");
        const CliRun refused =
            runOrganCli({QStringLiteral("merge"), config(QStringLiteral("slerp-cut.yaml"), cut),
                         QStringLiteral("-o"), path(QStringLiteral("slerp-cut.gguf"))});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("layer_range [0, 2) is not every block")),
                 qPrintable(refused.err));
        QVERIFY(!QFileInfo::exists(path(QStringLiteral("slerp-cut.gguf"))));
    }

    void refusedConfigurations_data() {
        QTest::addColumn<QByteArray>("yaml");
        QTest::addColumn<QString>("message");
        const QByteArray models = "models:\n  - model: models/a.gguf\n    parameters: {weight: 1}\n";
        QTest::newRow("a key mergekit has and we do not")
            << QByteArray("merge_method: linear\nchat_template: auto\n" + models)
            << QStringLiteral("line 2: the configuration: 'chat_template' is not supported");
        QTest::newRow("another tokenizer")
            << QByteArray("merge_method: linear\ntokenizer_source: union\n" + models)
            << QStringLiteral(
                   "line 2: tokenizer_source 'union' is not supported: the output keeps the base's "
                   "tokenizer (only 'base' is read)");
        QTest::newRow("a tokenizer's key")
            << QByteArray("merge_method: linear\ntokenizer:\n  source: base\n  pad_to_multiple_of: 64\n" +
                          models)
            << QStringLiteral("line 4: 'tokenizer': 'pad_to_multiple_of' is not supported");
        QTest::newRow("both tokenizer keys")
            << QByteArray("merge_method: linear\ntokenizer_source: base\ntokenizer:\n  source: base\n" +
                          models)
            << QStringLiteral("give 'tokenizer_source' or 'tokenizer', not both");
        QTest::newRow("a path with a NUL")
            << QByteArray("merge_method: linear\nmodels:\n  - model: \"models/a.gguf\\0x\"\n    parameters: "
                          "{weight: 1}\n  - model: models/b.gguf\n    parameters: {weight: 1}\n")
            << QStringLiteral("line 3: 'model' holds a NUL character, which no name or path has");
        QTest::newRow("a model not there")
            << QByteArray(
                   "merge_method: linear\nmodels:\n  - model: models/a.gguf\n  - model: models/gone.gguf\n")
            << QStringLiteral("merge.yaml: line 4: model 'models/gone.gguf': no such file or folder\n");
        QTest::newRow("a key of a model")
            << QByteArray("merge_method: linear\nmodels:\n  - model: models/a.gguf\n    "
                          "lora: x.safetensors\n")
            << QStringLiteral("a model: 'lora' is not supported");
        QTest::newRow("lambda")
            << QByteArray("merge_method: task_arithmetic\nbase_model: models/base.gguf\nmodels:\n"
                          "  - model: models/a.gguf\n    parameters: {weight: 1, lambda: 2}\n")
            << QStringLiteral("'lambda' is not supported");
        QTest::newRow("a parameter of another method")
            << QByteArray(
                   "merge_method: linear\nmodels:\n  - model: models/a.gguf\n    parameters: {weight: 1, "
                   "density: 0.5}\n")
            << QStringLiteral("line 4: model 'models/a.gguf': 'density' is not a parameter of linear");
        QTest::newRow("an unknown method") << QByteArray("merge_method: della\n" + models)
                                           << QStringLiteral("merge_method 'della' is not supported");
        QTest::newRow("no method") << models << QStringLiteral("'merge_method' is missing");
        QTest::newRow("no models") << QByteArray("merge_method: linear\n")
                                   << QStringLiteral("'models' (or 'slices') is missing");
        QTest::newRow("syntax") << QByteArray("merge_method: linear\nmodels:\n  - model: [unclosed\n")
                                << QStringLiteral("not valid YAML: line");
        QTest::newRow("two documents")
            << QByteArray("merge_method: linear\n" + models + "---\nmerge_method: ties\n")
            << QStringLiteral("2 YAML documents");
        QTest::newRow("empty") << QByteArray() << QStringLiteral("0 YAML documents");
        QTest::newRow("a list") << QByteArray("- merge_method\n")
                                << QStringLiteral("not a mergekit configuration");
        QTest::newRow("twice") << QByteArray("merge_method: linear\nmerge_method: ties\n" + models)
                               << QStringLiteral("'merge_method' is given twice");
        QTest::newRow("deep nesting")
            << QByteArray("merge_method: linear\nmodels: " + QByteArray(100000, '[') +
                          QByteArray(100000, ']'))
            << QStringLiteral("not valid YAML: line 2, column ");
        QTest::newRow("nesting past the YAML reader's depth")
            << QByteArray("merge_method: linear\nmodels: " + QByteArray(600, '[') + QByteArray(600, ']'))
            << QStringLiteral("nested deeper than the 500 levels the YAML reader goes");
        QTest::newRow("a long gradient")
            << QByteArray(
                   "merge_method: linear\nmodels:\n  - model: models/a.gguf\n    parameters: {weight: [" +
                   QByteArray("1,").repeated(2000) + "1]}\n")
            << QStringLiteral("more than the 1024 allowed");
        QTest::newRow("density 2") << QByteArray(
                                          "merge_method: ties\nbase_model: models/base.gguf\nmodels:\n  - "
                                          "model: models/a.gguf\n    parameters: {weight: 1, density: 2}\n")
                                   << QStringLiteral(
                                          "line 5: model 'models/a.gguf': 'density' is a share from 0 "
                                          "to 1, not 2\n");
        QTest::newRow("NaN weight") << QByteArray(
                                           "merge_method: linear\nmodels:\n  - model: models/a.gguf\n    "
                                           "parameters: {weight: .nan}\n")
                                    << QStringLiteral("values must be finite numbers");
        QTest::newRow("a word for a weight")
            << QByteArray("merge_method: linear\nmodels:\n  - model: models/a.gguf\n "
                          "   parameters: {weight: heavy}\n")
            << QStringLiteral("'weight' must be a number");
        QTest::newRow("a negative seed")
            << QByteArray("merge_method: dare_ties\nbase_model: models/base.gguf\nseed: "
                          "-3\nmodels:\n  - model: models/a.gguf\n    parameters: "
                          "{weight: 1}\n")
            << QStringLiteral("'seed' must be a whole number");
        QTest::newRow("out_type") << QByteArray("merge_method: linear\nout_type: Q9_K\n" + models)
                                  << QStringLiteral("out_type 'Q9_K' is not a file type of organ quantize");
        QTest::newRow("ties over cut slices")
            << QByteArray(
                   "merge_method: ties\nbase_model: models/base.gguf\nslices:\n  - sources:\n      - model: "
                   "models/a.gguf\n        layer_range: [0, 1]\n  - sources:\n      - model: models/b.gguf\n "
                   "  "
                   "     layer_range: [1, 3]\n")
            << QStringLiteral("slices that cut or stack layers are for passthrough");
        QTest::newRow("a model from the Hugging Face hub")
            << QByteArray(
                   "merge_method: linear\nmodels:\n  - model: mistralai/Mistral-7B-v0.1\n    parameters: "
                   "{weight: 1}\n")
            << QStringLiteral(
                   "line 3: model 'mistralai/Mistral-7B-v0.1': no such file or folder (models are GGUF "
                   "files or organ directories, not Hugging Face ids)");
        QTest::newRow("control characters in a key")
            << QByteArray("merge_method: linear\n\"\\e[31mred\": 1\n" + models)
            << QStringLiteral("is not supported");
        QTest::newRow("invalid UTF-8 in a key") << QByteArray("merge_method: linear\nb\xff\xfe: 1\n" + models)
                                                << QStringLiteral("is not supported");
        // Each level four aliases of the last: 4^11 numbers if expanded, refused at its first item.
        QByteArray bomb = "merge_method: linear\nmodels:\n  - model: models/a.gguf\n    parameters:\n"
                          "      weight: [&a0 [1, 1, 1, 1]";
        for (int level = 1; level < 12; ++level) {
            const QByteArray last = "*a" + QByteArray::number(level - 1);
            bomb += ", &a" + QByteArray::number(level) + " [" + last + ", " + last + ", " + last + ", " +
                    last + "]";
        }
        bomb += "]\n";
        QTest::newRow("an alias bomb in a gradient") << bomb << QStringLiteral("'weight' must be a number");
        // 64 models, each naming one list of 256 filtered values of a 1024-point gradient: every
        // limit held alone, 16 Mi numbers together.
        QByteArray amplified = "merge_method: linear\nmodels:\n  - model: models/a.gguf\n    parameters:\n"
                               "      weight: &w [";
        for (int rule = 0; rule < 256; ++rule) {
            amplified +=
                rule == 0 ? QByteArray("{filter: f0, value: &g [" + QByteArray("1,").repeated(1023) + "1]}")
                          : QByteArray(", {filter: f" + QByteArray::number(rule) + ", value: *g}");
        }
        amplified += "]\n";
        for (int m = 1; m < 64; ++m) {
            amplified += "  - model: models/b.gguf\n    parameters: {weight: *w}\n";
        }
        QTest::newRow("aliases multiplying the limits")
            << amplified << QStringLiteral("the parameters come to more than 65536 numbers");
        QTest::newRow("a layer past 2^32")
            << QByteArray("merge_method: ties\nbase_model: models/base.gguf\nslices:\n  - sources:\n"
                          "      - model: models/a.gguf\n        layer_range: [4294967296, 4294967298]\n")
            << QStringLiteral("'layer_range' [4294967296, 4294967298) goes past the largest layer number");
        QTest::newRow("passthrough of two models")
            << QByteArray(
                   "merge_method: passthrough\nmodels:\n  - model: models/a.gguf\n  - model: models/b.gguf\n")
            << QStringLiteral("passthrough takes 'slices' (or one model, copied)");
        QTest::newRow("passthrough, a model's parameters")
            << QByteArray("merge_method: passthrough\nmodels:\n  - model: models/a.gguf\n    parameters: "
                          "{weight: 1}\n")
            << QStringLiteral("line 4: model 'models/a.gguf': passthrough takes no parameters");
        QTest::newRow("passthrough, parameters")
            << QByteArray(
                   "merge_method: passthrough\nparameters: {weight: 1}\nmodels:\n  - model: models/a.gguf\n")
            << QStringLiteral("line 2: passthrough takes no parameters");
        QTest::newRow("passthrough, a base other than its model")
            << QByteArray("merge_method: passthrough\nbase_model: models/base.gguf\nmodels:\n  - model: "
                          "models/a.gguf\n")
            << QStringLiteral(
                   "passthrough copies its one model: base_model 'models/base.gguf' is not 'models/a.gguf'");
        QTest::newRow("passthrough, a slice's parameters")
            << QByteArray("merge_method: passthrough\nslices:\n  - sources:\n      - model: models/a.gguf\n"
                          "        layer_range: [0, 1]\n        parameters: {weight: 1}\n")
            << QStringLiteral("passthrough takes no parameters");
        QTest::newRow("passthrough, a slice of two sources")
            << QByteArray(
                   "merge_method: passthrough\nslices:\n  - sources:\n      - model: models/a.gguf\n"
                   "        layer_range: [0, 1]\n      - model: models/b.gguf\n        layer_range: [0, 1]\n")
            << QStringLiteral("a passthrough slice has one source");
    }
    void refusedConfigurations() {
        QFETCH(QByteArray, yaml);
        QFETCH(QString, message);
        const QByteArray before = inputs();
        const QString file = config(QStringLiteral("merge.yaml"), yaml);
        const QString out = path(QStringLiteral("refused.gguf"));
        const CliRun run = runOrganCli({QStringLiteral("merge"), file, QStringLiteral("-o"), out});
        QCOMPARE(run.exitCode, 1);
        QVERIFY2(run.err.startsWith(QStringLiteral("organ merge: ")), qPrintable(run.err));
        QVERIFY2(run.err.contains(message), qPrintable(run.err));
        // Bytes from the file are escaped: no control character and no invalid UTF-8 reach the terminal.
        QVERIFY2(!run.err.contains(QChar(0x1b)) && !run.err.contains(QChar::ReplacementCharacter),
                 qPrintable(run.err));
        QVERIFY2(run.err.contains(QStringLiteral("merge.yaml: ")), qPrintable(run.err));
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(inputs(), before);
    }

    // The report and the merge given one name: refused before anything is written. And a merge
    // whose stdout is a pipe nobody reads any more (`organ merge … | head -1`) still writes its output.
    void reportAndOutputApart() {
        const QString out = path(QStringLiteral("one-name.gguf"));
        const QStringList quick{QStringLiteral("merge"),
                                QStringLiteral("--method"),
                                QStringLiteral("linear"),
                                QStringLiteral("--model"),
                                path(QStringLiteral("models/a.gguf")),
                                QStringLiteral("--model"),
                                path(QStringLiteral("models/b.gguf"))};
        const CliRun clash =
            runOrganCli(quick + QStringList{QStringLiteral("--json"), out, QStringLiteral("-o"), out});
        QCOMPARE(clash.exitCode, 1);
        QVERIFY2(clash.err.contains(QStringLiteral("one-name.gguf: named for two files")),
                 qPrintable(clash.err));
        QVERIFY(!QFileInfo::exists(out));
        const QString viaDot = m_dir.path() + QStringLiteral("/./one-name.gguf");
        QCOMPARE(runOrganCli(quick + QStringList{QStringLiteral("--json"), viaDot, QStringLiteral("-o"), out})
                     .exitCode,
                 1);
        QVERIFY(!QFileInfo::exists(out));

        // The reader of the pipe leaves after the report, before "wrote …" is flushed at exit.
        QCOMPARE(runPausedAtFirstLine(quick + QStringList{QStringLiteral("-o"), out}, {}, true), 0);
        QVERIFY(GgufModel::open(out.toStdString()) != nullptr);

        // The report's folder gone while the merge is written: the merge is kept, and said to be.
        const QString folder = path(QStringLiteral("reports"));
        QVERIFY(QDir().mkpath(folder));
        const QString kept = path(QStringLiteral("kept.gguf"));
        QString err;
        QCOMPARE(runPausedAtFirstLine(
                     quick + QStringList{QStringLiteral("--json"), folder + QStringLiteral("/merge.json"),
                                         QStringLiteral("-o"), kept},
                     [&] { QVERIFY(QDir().rmdir(folder)); }, false, &err),
                 1);
        QVERIFY2(err.contains(QStringLiteral("merge.json")) &&
                     err.contains(QStringLiteral("organ merge: kept.gguf was written; its report was not\n")),
                 qPrintable(err));
        QVERIFY(GgufModel::open(kept.toStdString()) != nullptr);
    }

    // A model cut short by another program while it is merged: no SIGBUS, nothing written, the
    // file named (the pages past its new end read as zeros, and what was made of them is dropped).
    void inputCutShortWhileMerged() {
        const QString victim = path(QStringLiteral("victim.gguf"));
        QFile::remove(victim);
        QVERIFY(QFile::copy(path(QStringLiteral("models/a.gguf")), victim));
        const QString out = path(QStringLiteral("cut.gguf"));
        QString err;
        const int status = runPausedAtFirstLine(
            {QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("ties"),
             QStringLiteral("--base"), path(QStringLiteral("models/base.gguf")), QStringLiteral("--model"),
             victim, QStringLiteral("--density"), QStringLiteral("0.5"), QStringLiteral("-o"), out},
            [&] { QCOMPARE(::truncate(victim.toLocal8Bit().constData(), 4096), 0); }, false, &err);
        QVERIFY2(status == 1, qPrintable(QString::number(status) + QStringLiteral(": ") + err));
        QVERIFY2(
            err.contains(QStringLiteral("victim.gguf was cut short while it was read (4 096 bytes now, ")) &&
                err.contains(QStringLiteral("cut.gguf was not written")),
            qPrintable(err));
        QVERIFY(!QFileInfo::exists(out));
        QVERIFY(QDir(m_dir.path()).entryList({QStringLiteral("cut.gguf*")}, QDir::Files).isEmpty());
    }

    // Memory stays flat in the model's size: a merge of many tensors (here 194, 143 MB of output)
    // kept each tensor's last batch of merged bytes until the end, the whole output in memory.
    void memoryStaysFlat() {
        SpecimenShape shape;
        shape.embedding = 256;
        shape.feedForward = 704;
        shape.blocks = 48;
        // One model three times: what the merge gives does not matter here, its memory does.
        const QStringList models{path(QStringLiteral("deep-1.gguf")), path(QStringLiteral("deep-2.gguf")),
                                 path(QStringLiteral("deep-3.gguf"))};
        QVERIFY(writeSpecimen(models[0].toStdString(), 1, shape).isOk());
        QVERIFY(QFile::copy(models[0], models[1]) && QFile::copy(models[0], models[2]));
        const QString out = path(QStringLiteral("deep-merge.gguf"));
        const long peak =
            peakKiBOfOrgan({QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("ties"),
                            QStringLiteral("--density"), QStringLiteral("0.5"), QStringLiteral("--base"),
                            models[0], QStringLiteral("--model"), models[1], QStringLiteral("--model"),
                            models[2], QStringLiteral("-o"), out});
        const qint64 written = QFileInfo(out).size();
        for (const QString& file : models + QStringList{out}) {
            QFile::remove(file);
        }
        QVERIFY(peak > 0);
        QVERIFY2(written > 128'000'000, qPrintable(QString::number(written)));
        QVERIFY2(peak < 96 * 1024,
                 qPrintable(QStringLiteral("peak %1 KiB for %2 bytes written").arg(peak).arg(written)));
    }

    // Weights so large that the merged values overflow: refused with the tensor named, nothing
    // written (the check without --vitals as with it).
    void notFiniteMergesAreNotWritten() {
        const QString out = path(QStringLiteral("overflow.gguf"));
        const CliRun run = runOrganCli(
            {QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("task_arithmetic"),
             QStringLiteral("--base"), path(QStringLiteral("models/base.gguf")), QStringLiteral("--model"),
             path(QStringLiteral("models/a.gguf")) + QStringLiteral(":3e38"), QStringLiteral("--model"),
             path(QStringLiteral("models/b.gguf")) + QStringLiteral(":3e38"), QStringLiteral("-o"), out,
             QStringLiteral("--json"), path(QStringLiteral("overflow.json"))});
        QCOMPARE(run.exitCode, 1);
        QVERIFY2(run.err.contains(QStringLiteral("the merge gives values that are not finite numbers")),
                 qPrintable(run.err));
        QVERIFY(QJsonDocument::fromJson(readAll(path(QStringLiteral("overflow.json"))))
                    .object()
                    .value(QStringLiteral("error"))
                    .toString()
                    .contains(QStringLiteral(": the merge gives values that are not finite numbers")));
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("overflow.gguf.partial*")}).size(), 0);

        // Finite merged values that the output's type cannot hold: F16 overflows above 65 504, Q8_0's
        // F16 scale above about 8.3 million. They were written as infinities.
        for (const QString& type : {QStringLiteral("F16"), QStringLiteral("Q8_0")}) {
            for (const QString& weight : {QStringLiteral("1e10"), QStringLiteral("1e3")}) {
                const CliRun large = runOrganCli(
                    {QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("task_arithmetic"),
                     QStringLiteral("--base"), path(QStringLiteral("models/base.gguf")),
                     QStringLiteral("--model"), path(QStringLiteral("models/a.gguf")) + u':' + weight,
                     QStringLiteral("--out-type"), type, QStringLiteral("-o"), out});
                if (weight == QStringLiteral("1e3")) {
                    QVERIFY2(large.exitCode == 0, qPrintable(large.err));
                    QVERIFY(QFile::remove(out));
                    continue;
                }
                QCOMPARE(large.exitCode, 1);
                QVERIFY2(
                    large.err.contains(QRegularExpression(
                        QStringLiteral("organ merge: [a-z_.0-9]+weight: the merged values reach [0-9.e+]+, "
                                       "more than %1 holds \\(written, they would be infinities\\): "
                                       "the weights are too large\n")
                            .arg(type))),
                    qPrintable(large.err));
                QVERIFY(!QFileInfo::exists(out));
            }
        }
    }

    // A configuration that is no small regular file is refused before it is read, never waited on.
    void hostileFiles() {
        const QString big =
            config(QStringLiteral("big.yaml"), "merge_method: linear\n# " + QByteArray(2 << 20, 'x'));
        const QString fifo = path(QStringLiteral("fifo.yaml"));
        QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
        const std::vector<std::pair<QString, QString>> cases{
            {big, QStringLiteral("more than the 1 048 576 such a file may have")},
            {fifo, QStringLiteral("fifo.yaml: is a FIFO (named pipe), not a regular file")},
            {path(QStringLiteral("models")), QStringLiteral("models: is a folder")},
            {path(QStringLiteral("missing.yaml")), QStringLiteral("missing.yaml: ")},
        };
        for (const auto& [file, message] : cases) {
            const CliRun run = runOrganCli(
                {QStringLiteral("merge"), file, QStringLiteral("-o"), path(QStringLiteral("h.gguf"))});
            QCOMPARE(run.exitCode, 1);
            QVERIFY2(run.err.contains(message), qPrintable(run.err));
        }
        // The output is never an input.
        const QByteArray before = inputs();
        const CliRun onInput = runOrganCli({QStringLiteral("merge"), path(QStringLiteral("ties.yaml")),
                                            QStringLiteral("-o"), path(QStringLiteral("models/a.gguf"))});
        QCOMPARE(onInput.exitCode, 1);
        QCOMPARE(inputs(), before);
    }
};

QTEST_GUILESS_MAIN(TestCliMerge)
#include "tst_cli_merge.moc"
