// organ serve, as a client sees it: a real server process on loopback and a real HTTP client
// (Qt's QNetworkAccessManager, and raw sockets for what a client library would not send).
#include "api_client.h"
#include "fixtures.h"
#include "shared_models.h"

#include "gguf/gguf_model.h"
#include "gguf/specimen.h"
#include "quant/imatrix_file.h"
#include "vitals/budget_mix.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

using namespace organ;
using namespace organ::testing;

// A JSON value against what it should be, showing the value when it is not.
#define JCOMPARE(value, expected) QVERIFY2((value) == (expected), (value).dump().c_str())

namespace {

nlohmann::json cliJson(const QStringList& args) {
    QProcess process;
    process.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")), args);
    process.waitForFinished(60000);
    return parsed(process.readAllStandardOutput());
}

} // namespace

class TestApi : public ServedRootTest {
    Q_OBJECT

    QTemporaryDir m_outside;

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        QVERIFY(makeRoot());
        QVERIFY(QDir().mkpath(m_root + QStringLiteral("/models/fleet")));
        QVERIFY(writeSpecimen(inRoot(QStringLiteral("models/b.gguf")).toStdString(), 2).isOk());
        SpecimenShape shape;
        for (std::uint32_t blocks : {2u, 4u, 6u}) {
            shape.blocks = blocks;
            QVERIFY(writeSpecimen(inRoot(QStringLiteral("models/fleet/s%1.gguf").arg(blocks)).toStdString(),
                                  blocks, shape)
                        .isOk());
        }
        QVERIFY(writeAll(inRoot(QStringLiteral("models/fleet/broken.gguf")), "GGUF?"));
        // A model outside the root, and links inside the root that lead to it.
        QVERIFY(writeSpecimen(m_outside.filePath(QStringLiteral("secret.gguf")).toStdString(), 3).isOk());
        QVERIFY(QFile::link(m_outside.filePath(QStringLiteral("secret.gguf")),
                            inRoot(QStringLiteral("link.gguf"))));
        QVERIFY(QFile::link(m_outside.path(), inRoot(QStringLiteral("outside"))));
    }

    void answersLikeTheCommandLine() {
        Server server(m_root);
        QVERIFY(server.port() != 0);
        const Answer health = get(server.port(), QStringLiteral("/v1/health"));
        QCOMPARE(health.status, 200);
        JCOMPARE(health.body["ok"], true);

        const QString model = inRoot(QStringLiteral("models/a.gguf"));
        const Answer inspect = get(server.port(), QStringLiteral("/v1/inspect?path=models/a.gguf"));
        QCOMPARE(inspect.status, 200);
        QVERIFY(inspect.body == cliJson({QStringLiteral("inspect"), QStringLiteral("--json"), model}));

        const Answer validate = get(server.port(), QStringLiteral("/v1/validate?path=models%2Fa.gguf"));
        QCOMPARE(validate.status, 200);
        JCOMPARE(validate.body["valid"], true);
        QVERIFY(validate.body == cliJson({QStringLiteral("validate"), QStringLiteral("--json"), model}));

        // A job: accepted, polled, its result the CLI's --json document.
        const Answer started =
            post(server.port(), QStringLiteral("/v1/measure"), {{"path", "models/a.gguf"}});
        QCOMPARE(started.status, 202);
        JCOMPARE(started.body["kind"], "measure");
        const nlohmann::json job = waitForJob(server.port(), started.body);
        JCOMPARE(job["state"], "done");
        const QString report = m_dir.filePath(QStringLiteral("cli-measure.json"));
        QProcess cli;
        cli.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                  {QStringLiteral("measure"), model, QStringLiteral("--no-cache"), QStringLiteral("--json"),
                   report});
        QVERIFY(cli.waitForFinished(60000));
        QVERIFY(job["result"] == parsed(readAll(report)));

        // A plan: checked, then assembled into the root, then refused over the file it wrote.
        const nlohmann::json plan = {
            {"format", "organ-graft-plan"},
            {"version", 1},
            {"base", "models/a.gguf"},
            {"donors", {{"other", "models/b.gguf"}}},
            {"operations", {{{"op", "replace"}, {"donor", "other"}, {"layers", "1-2"}}}}};
        const Answer check = post(server.port(), QStringLiteral("/v1/plan/check"), {{"plan", plan}});
        QCOMPARE(check.status, 200);
        JCOMPARE(check.body["ok"], true);
        const Answer assemble = post(server.port(), QStringLiteral("/v1/assemble"),
                                     {{"plan", plan}, {"output", "out/chimera.gguf"}});
        QCOMPARE(assemble.status, 202);
        const nlohmann::json assembled = waitForJob(server.port(), assemble.body);
        JCOMPARE(assembled["state"], "done");
        JCOMPARE(assembled["result"]["written"], true);
        JCOMPARE(assembled["result"]["validation"]["ok"], true);
        QVERIFY(QFile::exists(inRoot(QStringLiteral("out/chimera.gguf"))));
        const Answer again = post(server.port(), QStringLiteral("/v1/assemble"),
                                  {{"plan", plan}, {"output", "out/chimera.gguf"}});
        QCOMPARE(again.status, 409);

        const Answer extract = post(server.port(), QStringLiteral("/v1/extract"),
                                    {{"path", "out/chimera.gguf"}, {"output", "out/chimera-organs"}});
        QCOMPARE(extract.status, 202);
        const nlohmann::json extracted = waitForJob(server.port(), extract.body);
        JCOMPARE(extracted["state"], "done");
        QVERIFY(QFile::exists(inRoot(QStringLiteral("out/chimera-organs/manifest.json"))));

        const Answer purify = post(server.port(), QStringLiteral("/v1/purify"),
                                   {{"path", "models/a.gguf"},
                                    {"output", "out/purified.gguf"},
                                    {"method", "fft"},
                                    {"keep", 0.9},
                                    {"system", "organ"}});
        QCOMPARE(purify.status, 202);
        const nlohmann::json purified = waitForJob(server.port(), purify.body);
        JCOMPARE(purified["state"], "done");
        QVERIFY(!purified["result"]["purified"].empty());
        QVERIFY(QFile::exists(inRoot(QStringLiteral("out/purified.gguf"))));
        QCOMPARE(post(server.port(), QStringLiteral("/v1/purify"),
                      {{"path", "models/a.gguf"}, {"output", "out/p2.gguf"}, {"method", "fft"}, {"keep", 7}})
                     .status,
                 400);

        // The command line's --json of the same assembly, extraction and purification says the same
        // (but for where it wrote).
        auto sameButOutput = [](nlohmann::json a, nlohmann::json b) {
            a.erase("output");
            b.erase("output");
            return a == b;
        };
        QVERIFY(writeAll(inRoot(QStringLiteral("plan.json")), QByteArray::fromStdString(plan.dump())));
        const QString cliDoc = m_dir.filePath(QStringLiteral("cli-doc.json"));
        auto cliReport = [&](QStringList args) {
            QFile::remove(cliDoc);
            QProcess process;
            process.setWorkingDirectory(m_root);
            process.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                          args << QStringLiteral("--json") << cliDoc);
            process.waitForFinished(120000);
            return parsed(readAll(cliDoc));
        };
        QVERIFY(sameButOutput(
            cliReport({QStringLiteral("assemble"), QStringLiteral("--plan"), QStringLiteral("plan.json"),
                       QStringLiteral("-o"), QStringLiteral("out/cli-chimera.gguf")}),
            assembled["result"]));
        QVERIFY(sameButOutput(cliReport({QStringLiteral("extract"), QStringLiteral("out/chimera.gguf"),
                                         QStringLiteral("-o"), QStringLiteral("out/cli-organs")}),
                              extracted["result"]));
        QVERIFY(sameButOutput(
            cliReport({QStringLiteral("purify"), QStringLiteral("models/a.gguf"), QStringLiteral("--method"),
                       QStringLiteral("fft"), QStringLiteral("--keep"), QStringLiteral("0.9"),
                       QStringLiteral("--system"), QStringLiteral("organ"), QStringLiteral("-o"),
                       QStringLiteral("out/cli-purified.gguf")}),
            purified["result"]));

        // A fleet: ranked, fitted, the broken file listed.
        const Answer fleet = post(server.port(), QStringLiteral("/v1/fleet"), {{"paths", {"models/fleet"}}});
        QCOMPARE(fleet.status, 202);
        const nlohmann::json ranked = waitForJob(server.port(), fleet.body);
        JCOMPARE(ranked["state"], "done");
        QCOMPARE(ranked["result"]["models"].size(), std::size_t(4));
        QCOMPARE(ranked["result"]["ranking"].size(), std::size_t(3));
        JCOMPARE(ranked["result"]["scale_law"]["fitted"], true);

        // The description it serves is docs/openapi.json, and every path in it is routed.
        const Answer description = get(server.port(), QStringLiteral("/v1/openapi.json"));
        QCOMPARE(description.status, 200);
        QVERIFY(description.body == parsed(readAll(QStringLiteral(ORGAN_SOURCE_DIR "/docs/openapi.json"))));
        for (const auto& [route, operations] : description.body["paths"].items()) {
            QString target = QString::fromStdString(route);
            target.replace(QStringLiteral("{id}"), QStringLiteral("1"));
            for (const auto& [method, operation] : operations.items()) {
                if (method == "parameters") {
                    continue;
                }
                const QByteArray verb = QByteArray::fromStdString(method).toUpper();
                const Answer a =
                    request(server.port(), verb, target, verb == "POST" ? QByteArray("{}") : QByteArray());
                const std::string message =
                    a.body.value("error", nlohmann::json::object()).value("message", "");
                QVERIFY2(message.find("no endpoint") == std::string::npos && a.status != 405,
                         qPrintable(target + QLatin1Char(' ') + QString::fromLatin1(verb)));
            }
        }

        const Answer jobs = get(server.port(), QStringLiteral("/v1/jobs"));
        QCOMPARE(jobs.status, 200);
        QCOMPARE(jobs.body["jobs"].size(), std::size_t(5));
    }

    // POST /v1/quantize: organ quantize's options as a plan's quantize operation, run as a job whose
    // result and file are the command line's; its importance matrix stays inside the root too; a
    // plan given to /v1/assemble may quantize.
    void quantizes() {
        // Rows of 256, so that the K-quants fit, and an importance matrix for every matrix.
        SpecimenShape shape;
        shape.embedding = 256;
        shape.feedForward = 512;
        shape.blocks = 2;
        QVERIFY(writeSpecimen(inRoot(QStringLiteral("models/k.gguf")).toStdString(), 7, shape).isOk());
        ImatrixData matrix;
        matrix.datasets = {"api.txt"};
        matrix.chunkCount = 2;
        matrix.chunkSize = 64;
        const auto model = GgufModel::open(inRoot(QStringLiteral("models/k.gguf")).toStdString());
        for (const TensorInfo& t : model->tensors()) {
            if (t.nDims == 2) {
                ImatrixEntry& entry = matrix.entries[t.name];
                for (std::uint64_t j = 0; j < t.ne[0]; ++j) {
                    entry.sums.push_back(float(1 + (j * 37) % 101));
                }
                entry.counts = {128};
            }
        }
        QVERIFY(writeImatrix(inRoot(QStringLiteral("models/k.imatrix.gguf")).toStdString(), matrix).isOk());

        Server server(m_root);
        QVERIFY(server.port() != 0);
        const quint16 port = server.port();
        const Answer started = post(port, QStringLiteral("/v1/quantize"),
                                    {{"path", "models/k.gguf"},
                                     {"output", "out/k-q4_k_m.gguf"},
                                     {"type", "q4_k_m"},
                                     {"imatrix", "models/k.imatrix.gguf"},
                                     {"output_tensor_type", "q8_0"}});
        QCOMPARE(started.status, 202);
        JCOMPARE(started.body["kind"], "quantize");
        const nlohmann::json job = waitForJob(port, started.body);
        JCOMPARE(job["state"], "done");
        JCOMPARE(job["result"]["file_type"], "Q4_K_M");
        const auto weighted = std::count_if(job["result"]["tensors"].begin(), job["result"]["tensors"].end(),
                                            [](const nlohmann::json& t) { return t["importance"] == true; });
        QVERIFY(weighted > 0);
        const auto written = GgufModel::open(inRoot(QStringLiteral("out/k-q4_k_m.gguf")).toStdString());
        QCOMPARE(written->findTensor("output.weight")->type, TensorType::Q8_0);
        QCOMPARE(written->findTensor("blk.0.attn_q.weight")->type, TensorType::Q4_K);

        // The command line, run in the root on the same names, writes the same file and says the same.
        const QString cliDoc = m_dir.filePath(QStringLiteral("cli-quantize.json"));
        QProcess cli;
        cli.setWorkingDirectory(m_root);
        cli.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                  {QStringLiteral("quantize"), QStringLiteral("models/k.gguf"), QStringLiteral("--type"),
                   QStringLiteral("q4_k_m"), QStringLiteral("--imatrix"),
                   QStringLiteral("models/k.imatrix.gguf"), QStringLiteral("--output-tensor-type"),
                   QStringLiteral("q8_0"), QStringLiteral("-o"), QStringLiteral("out/cli-k-q4_k_m.gguf"),
                   QStringLiteral("--json"), cliDoc});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        nlohmann::json ours = job["result"];
        nlohmann::json theirs = parsed(readAll(cliDoc));
        ours.erase("output");
        theirs.erase("output");
        QVERIFY2(ours == theirs, theirs.dump().c_str());
        QCOMPARE(readAll(inRoot(QStringLiteral("out/cli-k-q4_k_m.gguf"))),
                 readAll(inRoot(QStringLiteral("out/k-q4_k_m.gguf"))));

        // Refusals, before any job starts.
        const auto refused = [&](nlohmann::json body, int status, const char* message) {
            body.emplace("path", "models/k.gguf");
            body.emplace("output", "out/never.gguf");
            const Answer a = post(port, QStringLiteral("/v1/quantize"), body);
            const std::string said = a.body["error"].value("message", std::string());
            QVERIFY2(a.status == status && said.find(message) != std::string::npos, a.raw.constData());
        };
        refused({{"type", "Q4_K_X"}}, 400, "not a file type organ quantize writes");
        refused({{"type", "Q4_K_M"}, {"imatrx", "models/k.imatrix.gguf"}}, 400, "imatrx");
        refused({{"type", "Q4_K_M"}, {"output_tensor_type", "iq1_s"}}, 400, "does not write IQ1_S");
        refused({{"type", "Q4_K_M"}, {"imatrix", "models/a.gguf"}}, 422, "a.gguf");
        refused({{"type", "Q4_K_M"}, {"imatrix", "outside/secret.gguf"}}, 403, "");
        refused({{"type", "Q4_K_M"}, {"imatrix", "models/none.imatrix.gguf"}}, 404, "");
        QVERIFY(!QFile::exists(inRoot(QStringLiteral("out/never.gguf"))));

        // A plan that quantizes, its matrix named inside the root.
        const nlohmann::json plan = {
            {"format", "organ-graft-plan"},
            {"version", 1},
            {"base", "models/k.gguf"},
            {"operations",
             {{{"op", "duplicate_layer"}, {"layer", 1}},
              {{"op", "quantize"}, {"type", "Q6_K"}, {"imatrix", "models/k.imatrix.gguf"}}}}};
        const Answer assemble =
            post(port, QStringLiteral("/v1/assemble"), {{"plan", plan}, {"output", "out/k-stack-q6_k.gguf"}});
        QCOMPARE(assemble.status, 202);
        JCOMPARE(waitForJob(port, assemble.body)["state"], "done");
        const auto stacked = GgufModel::open(inRoot(QStringLiteral("out/k-stack-q6_k.gguf")).toStdString());
        QCOMPARE(stacked->findTensor("blk.2.ffn_up.weight")->type, TensorType::Q6_K);
        QCOMPARE(stacked->find("general.file_type")->asUInt().value_or(0), std::uint64_t(18));
        nlohmann::json outside = plan;
        outside["operations"][1]["imatrix"] = "outside/secret.gguf";
        QCOMPARE(post(port, QStringLiteral("/v1/plan/check"), {{"plan", outside}}).status, 403);
    }

    // A plan that merges: its models are the plan's (paths inside the root), checked by
    // /v1/plan/check and run by /v1/assemble, the same file the command line writes from the plan;
    // a merge of a model outside the root is refused.
    void merges() {
        Server server(m_root);
        QVERIFY(server.port() != 0);
        const quint16 port = server.port();
        const nlohmann::json plan = {
            {"format", "organ-graft-plan"},
            {"version", 1},
            {"base", "models/a.gguf"},
            {"donors", {{"b", "models/b.gguf"}, {"c", "models/fleet/s4.gguf"}}},
            {"operations",
             {{{"op", "merge"},
               {"method", "dare_ties"},
               {"base", "base"},
               {"seed", 11},
               {"models",
                {{{"model", "b"}, {"parameters", {{"weight", 0.6}, {"density", 0.5}}}},
                 {{"model", "c"}, {"parameters", {{"weight", {0.2, 0.8}}, {"density", 0.5}}}}}}}}}};
        const Answer check = post(port, QStringLiteral("/v1/plan/check"), {{"plan", plan}});
        QCOMPARE(check.status, 200);
        JCOMPARE(check.body["ok"], true);
        const bool said =
            std::any_of(check.body["findings"].begin(), check.body["findings"].end(), [](const auto& f) {
                return f["message"].template get<std::string>().starts_with(
                    "merge (dare_ties): 39 tensors from a.gguf, b.gguf and s4.gguf");
            });
        QVERIFY2(said, check.body.dump().c_str());
        const Answer assemble =
            post(port, QStringLiteral("/v1/assemble"), {{"plan", plan}, {"output", "out/merged.gguf"}});
        QCOMPARE(assemble.status, 202);
        const nlohmann::json job = waitForJob(port, assemble.body);
        JCOMPARE(job["state"], "done");
        JCOMPARE(job["result"]["written"], true);
        const auto merged = GgufModel::open(inRoot(QStringLiteral("out/merged.gguf")).toStdString());
        QCOMPARE(std::string(merged->find("organ.merge.method")->asString().value_or("")),
                 std::string("dare_ties"));
        QCOMPARE(merged->find("organ.merge.seed")->asUInt().value_or(0), std::uint64_t(11));

        QVERIFY(writeAll(inRoot(QStringLiteral("merge-plan.json")), QByteArray::fromStdString(plan.dump())));
        QProcess cli;
        cli.setWorkingDirectory(m_root);
        cli.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                  {QStringLiteral("assemble"), QStringLiteral("--plan"), QStringLiteral("merge-plan.json"),
                   QStringLiteral("-o"), QStringLiteral("out/cli-merged.gguf")});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        // The same bytes but for the provenance, which names the plan's paths as each was given.
        const auto theirs = GgufModel::open(inRoot(QStringLiteral("out/cli-merged.gguf")).toStdString());
        for (const TensorInfo& t : merged->tensors()) {
            QVERIFY2(
                std::ranges::equal(merged->tensorData(t), theirs->tensorData(*theirs->findTensor(t.name))),
                t.name.c_str());
        }

        nlohmann::json outside = plan;
        outside["donors"]["c"] = "outside/secret.gguf";
        QCOMPARE(post(port, QStringLiteral("/v1/plan/check"), {{"plan", outside}}).status, 403);
        nlohmann::json unknown = plan;
        unknown["operations"][0]["models"][0]["model"] = "d";
        const Answer refused = post(port, QStringLiteral("/v1/plan/check"), {{"plan", unknown}});
        QCOMPARE(refused.status, 422);
        QVERIFY(refused.body["error"]["message"].get<std::string>().find("no model called \"d\"") !=
                std::string::npos);
    }

    // POST /v1/surgeon: a prune search on a specimen inside the root, the text inline; its result is
    // the record the command line writes, its best plan one that the plan check accepts. A bad
    // goal, an unknown field and a text outside the root are refused before a job starts.
    void searchesPlans() {
        SpecimenShape shape;
        shape.blocks = 3;
        QVERIFY(writeSpecimen(inRoot(QStringLiteral("models/prune.gguf")).toStdString(), 5, shape).isOk());
        Server server(m_root);
        QVERIFY(server.port() != 0);
        const quint16 port = server.port();
        const std::string text = "The cat sat in the sun.\nThe dog ran to the sea.\nThe bird sang a song.\n";
        const Answer started =
            post(port, QStringLiteral("/v1/surgeon"),
                 {{"path", "models/prune.gguf"}, {"goal", "prune"}, {"prune", 1}, {"text", text}});
        QCOMPARE(started.status, 202);
        JCOMPARE(started.body["kind"], "surgeon");
        const nlohmann::json job = waitForJob(port, started.body);
        JCOMPARE(job["state"], "done");
        const nlohmann::json& record = job["result"];
        JCOMPARE(record["format"], "organ-surgeon");
        QVERIFY(record["best"].is_number_unsigned());
        const nlohmann::json& best = record["candidates"][record["best"].get<std::size_t>()];
        JCOMPARE(best["layers"], 2);
        const Answer checked = post(port, QStringLiteral("/v1/plan/check"), {{"plan", best["plan"]}});
        QCOMPARE(checked.status, 200);
        JCOMPARE(checked.body["ok"], true);
        const auto refused = [&](const nlohmann::json& body, int status, const char* message) {
            const Answer a = post(port, QStringLiteral("/v1/surgeon"), body);
            QVERIFY2(a.status == status && a.body.dump().find(message) != std::string::npos,
                     a.body.dump().c_str());
        };
        refused({{"path", "models/prune.gguf"}, {"goal", "shrink"}}, 400, "prune, merge or organs");
        refused({{"path", "models/prune.gguf"}, {"goal", "prune"}, {"width", 2}}, 400,
                "unknown field 'width'");
        refused({{"path", "models/prune.gguf"}, {"goal", "prune"}, {"text_path", "outside/secret.gguf"}}, 403,
                "");
        // Too many blocks to remove: the job fails with the engine's message.
        const Answer tooMany =
            post(port, QStringLiteral("/v1/surgeon"),
                 {{"path", "models/prune.gguf"}, {"goal", "prune"}, {"prune", 3}, {"text", text}});
        const nlohmann::json failed = waitForJob(port, tooMany.body);
        JCOMPARE(failed["state"], "failed");
        QVERIFY2(failed["error"].get<std::string>().find("removes 1 to 2") != std::string::npos,
                 failed.dump().c_str());
    }

    void staysInsideTheRoot() {
        Server server(m_root);
        QVERIFY(server.port() != 0);
        const quint16 port = server.port();
        for (const char* attempt :
             {"/v1/inspect?path=../root/models/a.gguf", "/v1/inspect?path=models/../../root/models/a.gguf",
              "/v1/inspect?path=%2e%2e%2froot%2fmodels%2fa.gguf", "/v1/inspect?path=%2Fetc%2Fpasswd",
              "/v1/inspect?path=/etc/passwd", "/v1/inspect?path=link.gguf",
              "/v1/inspect?path=outside/secret.gguf", "/v1/validate?path=outside%2Fsecret.gguf"}) {
            const Answer a = get(port, QString::fromLatin1(attempt));
            QVERIFY2(a.status == 403, attempt);
            QVERIFY2(a.body["error"]["message"].is_string(), attempt);
        }
        // A link is not followed even when it leads to a file inside: it could be swapped for
        // another while it is followed.
        QVERIFY(QFile::link(inRoot(QStringLiteral("models/a.gguf")),
                            inRoot(QStringLiteral("models/alias.gguf"))));
        const Answer alias = get(port, QStringLiteral("/v1/inspect?path=models/alias.gguf"));
        QCOMPARE(alias.status, 403);
        QVERIFY2(alias.body["error"]["message"].get<std::string>().find("symbolic link") != std::string::npos,
                 alias.raw.constData());
        QVERIFY(QFile::remove(inRoot(QStringLiteral("models/alias.gguf"))));
        // The same root by its absolute path is fine.
        QCOMPARE(
            get(port, QStringLiteral("/v1/inspect?path=") + inRoot(QStringLiteral("models/a.gguf"))).status,
            200);
        QCOMPARE(get(port, QStringLiteral("/v1/inspect?path=models/none.gguf")).status, 404);
        QCOMPARE(get(port, QStringLiteral("/v1/inspect?path=models/fleet/broken.gguf")).status, 422);
        QCOMPARE(get(port, QStringLiteral("/v1/inspect")).status, 400);
        // Outputs: never through a link out, never into a missing folder, never over a file.
        QCOMPARE(post(port, QStringLiteral("/v1/extract"),
                      {{"path", "models/a.gguf"}, {"output", "outside/stolen"}})
                     .status,
                 403);
        QCOMPARE(
            post(port, QStringLiteral("/v1/extract"), {{"path", "models/a.gguf"}, {"output", "/tmp/stolen"}})
                .status,
            403);
        QCOMPARE(
            post(port, QStringLiteral("/v1/extract"), {{"path", "models/a.gguf"}, {"output", "nowhere/dir"}})
                .status,
            404);
        QCOMPARE(post(port, QStringLiteral("/v1/extract"),
                      {{"path", "models/a.gguf"}, {"output", "models/b.gguf"}})
                     .status,
                 409);
        QVERIFY(!QFile::exists(m_outside.filePath(QStringLiteral("stolen"))));
        // A plan whose donor lies outside is refused before anything opens.
        const nlohmann::json plan = {
            {"format", "organ-graft-plan"},
            {"version", 1},
            {"base", "models/a.gguf"},
            {"donors", {{"other", "outside/secret.gguf"}}},
            {"operations", {{{"op", "replace"}, {"donor", "other"}, {"layers", "1-2"}}}}};
        QCOMPARE(post(port, QStringLiteral("/v1/plan/check"), {{"plan", plan}}).status, 403);
        // A fleet does not measure a linked model outside.
        const Answer fleet = post(port, QStringLiteral("/v1/fleet"), {{"paths", {"link.gguf"}}});
        QCOMPARE(fleet.status, 403);
    }

    void refusesMalformedAndOversizedRequests() {
        Server server(m_root, {QStringLiteral("--max-body"), QStringLiteral("4096")});
        QVERIFY(server.port() != 0);
        const quint16 port = server.port();
        auto body = [&](const QByteArray& bytes) {
            return request(port, "POST", QStringLiteral("/v1/measure"), bytes);
        };
        QCOMPARE(body("{not json").status, 400);
        QCOMPARE(body("[1, 2]").status, 400);
        QCOMPARE(body("").status, 400);
        QCOMPARE(body(R"({"path": "models/a.gguf", "extra": 1})").status, 400);
        QCOMPARE(body(R"({"path": 5})").status, 400);
        QCOMPARE(body(R"({"path": "models/a.gguf", "sample": -3})").status, 400);
        // A field of the wrong type is the client's mistake (400), never the server's (500).
        for (const char* keep : {"null", "\"yes\"", "1", "[]"}) {
            const Answer wrong = request(
                port, "POST", QStringLiteral("/v1/assemble"),
                QByteArray(
                    R"({"plan": {"format": "organ-graft-plan", "version": 1, "base": "models/a.gguf", )"
                    R"("operations": []}, "output": "out/k.gguf", "keep_invalid": )") +
                    keep + "}");
            QVERIFY2(wrong.status == 400, wrong.raw.constData());
        }
        QCOMPARE(body(QByteArray(70, '[') + QByteArray(70, ']')).status, 400);
        const Answer big = body("{\"path\": \"" + QByteArray(5000, 'a') + "\"}");
        QCOMPARE(big.status, 413);
        QVERIFY(big.body["error"]["message"].get<std::string>().find("4096") != std::string::npos);
        // Declared but not sent, chunked, and a header flood: answered before any body is read.
        QCOMPARE(
            rawStatus(port, "POST /v1/measure HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{"),
            413);
        QCOMPARE(
            rawStatus(port,
                      "POST /v1/measure HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello"),
            411);
        QCOMPARE(
            rawStatus(port, "GET /v1/health HTTP/1.1\r\nX-Flood: " + QByteArray(20000, 'x') + "\r\n\r\n"),
            431);
        // Lines ended by LF alone, which Qt's server takes too: the caps hold for them as well.
        QCOMPARE(rawStatus(port, "POST /v1/measure HTTP/1.1\nHost: x\nContent-Length: 99999999999\n\n{"),
                 413);
        // Headers that could be read two ways: the guard and Qt's server might each take one, and a
        // body the guard let through as a body be answered as a request. Refused, and only that.
        const QByteArray inner = "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n";
        const QByteArray size = QByteArray::number(inner.size());
        const QByteArrayList heads{"Content-Length: 0\r\nContent-Length: " + size,
                                   "Content-Length: " + size + "\r\nContent-Length: " + size,
                                   "Content-Length : " + size, "X-Folded: a\r\n Content-Length: " + size,
                                   "Content-Length: +" + size};
        for (const QByteArray& head : heads) {
            QByteArray answer;
            QCOMPARE(rawStatus(port, "POST /v1/measure HTTP/1.1\r\nHost: x\r\n" + head + "\r\n\r\n" + inner,
                               &answer),
                     400);
            QVERIFY2(answer.count("HTTP/1.1 ") == 1, answer.constData());
        }
        // Two requests on one connection, then an oversized one: the guard follows the stream
        // across requests (a body that merely looks like headers is not taken for them).
        QTcpSocket socket;
        socket.connectToHost(QStringLiteral("127.0.0.1"), port);
        QVERIFY(socket.waitForConnected(5000));
        const QByteArray tricky = "{\"path\": \"x\r\nContent-Length: 999999\r\n\r\n\"}";
        QByteArray answers;
        const QByteArray post =
            "POST /v1/measure HTTP/1.1\r\nHost: x\r\nContent-Length: " + QByteArray::number(tricky.size()) +
            "\r\n\r\n" + tricky;
        for (const QByteArray& one : {QByteArray("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"), post}) {
            socket.write(one);
            const qsizetype before = answers.count("HTTP/1.1 ");
            for (int i = 0; i < 100 && answers.count("HTTP/1.1 ") == before; ++i) {
                socket.waitForReadyRead(100);
                answers += socket.readAll();
            }
        }
        QVERIFY2(answers.startsWith("HTTP/1.1 200") && answers.contains("HTTP/1.1 400"), answers.constData());
        socket.write("POST /v1/measure HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
        answers.clear();
        for (int i = 0; i < 100 && !answers.contains("\r\n\r\n"); ++i) {
            socket.waitForReadyRead(100);
            answers += socket.readAll();
        }
        QVERIFY2(answers.startsWith("HTTP/1.1 413"), answers.constData());
        // Unknown endpoints and methods.
        QCOMPARE(get(port, QStringLiteral("/v1/nothing")).status, 404);
        QCOMPARE(get(port, QStringLiteral("/v1/measure")).status, 405);
        QCOMPARE(request(port, "DELETE", QStringLiteral("/v1/health")).status, 405);
        QCOMPARE(get(port, QStringLiteral("/v1/jobs/424242")).status, 404);
        QCOMPARE(get(port, QStringLiteral("/v1/jobs/x%00y")).status, 404);
        // And the server is still there.
        QCOMPARE(get(port, QStringLiteral("/v1/health")).status, 200);
    }

    // Connections are capped, 32 from one address (any of 127/8 is this machine) and 256 in all,
    // and the caps count exactly the connections open: while 256 are held, refused and answered
    // requests come and go for seconds, and every probe is refused, every held connection kept
    // (none is refused for a slot a finished one still took); closing them frees every slot.
    // (Silent connections are closed after 10 s: this runs in less.)
    void capsCountExactlyTheOpenConnections() {
        Server server(m_root);
        QVERIFY(server.port() != 0);
        const int port = server.port();
        const std::string health = "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        const std::vector<const char*> holders{"127.0.0.10", "127.0.0.11", "127.0.0.12", "127.0.0.13",
                                               "127.0.0.14", "127.0.0.15", "127.0.0.16", "127.0.0.17"};
        std::vector<int> held;
        auto hold = [&](const char* from) {
            for (int i = 0; i < 32; ++i) {
                held.push_back(connectFrom(from, port));
            }
        };
        auto untouchedCount = [&] { return std::count_if(held.begin(), held.end(), untouched); };
        auto closeHeld = [&] {
            for (const int fd : held) {
                ::close(fd);
            }
            held.clear();
        };
        // A server accepts connections in the order they were made: a probe made after the held
        // ones is judged with all of them counted.
        hold(holders[0]);
        const Exchange sameAddress = exchange(port, health, holders[0]);
        QCOMPARE(statusOf(sameAddress.answer), 503);
        QVERIFY(bodyOf(sameAddress.answer)["error"]["message"].get<std::string>().find("from your address") !=
                std::string::npos);
        // Another address is answered, and its connection closed by the server, as the request asked.
        const Exchange other = exchange(port, health, "127.0.0.1");
        QCOMPARE(statusOf(other.answer), 200);
        QVERIFY(other.closedByServer);
        for (std::size_t i = 1; i < holders.size(); ++i) {
            hold(holders[i]);
        }
        QCOMPARE(statusOf(roundTrip(port, health, "127.0.0.1")), 503);
        QCOMPARE(untouchedCount(), std::ptrdiff_t(256));
        // For 3 s, 20 times a second: probes from a held address and from others are refused; between them a
        // held connection is closed by its client, a probe gets in once the server has seen that, and the
        // connection is made again, taking the last slot.
        int probes = 0;
        int refused = 0;
        int answered = 0;
        for (QDeadlineTimer spell(3000); !spell.hasExpired();) {
            for (const char* from : {"127.0.0.1", "127.0.0.10", "127.0.0.18"}) {
                ++probes;
                refused += statusOf(roundTrip(port, health, from)) == 503 ? 1 : 0;
            }
            ::close(held.back());
            held.pop_back();
            int status = 0;
            for (QDeadlineTimer wait(5000); status != 200 && !wait.hasExpired();) {
                status = statusOf(roundTrip(port, health, "127.0.0.1"));
            }
            QCOMPARE(status, 200);
            ++answered;
            held.push_back(connectFrom(holders.back(), port));
            QTest::qWait(50);
        }
        std::printf("cap held for 3 s: %d of %d probes answered 503; %d answered 200 while a slot was free\n",
                    refused, probes, answered);
        QCOMPARE(refused, probes);
        QCOMPARE(untouchedCount(), std::ptrdiff_t(256));
        // Closed by their client, the held connections free their slots: all 256 can be held again.
        closeHeld();
        QTRY_VERIFY(statusOf(roundTrip(port, health, "127.0.0.1")) == 200);
        for (const char* from : holders) {
            hold(from);
        }
        QCOMPARE(statusOf(roundTrip(port, health, "127.0.0.18")), 503);
        QCOMPARE(untouchedCount(), std::ptrdiff_t(256));
        closeHeld();
        QTRY_VERIFY(statusOf(roundTrip(port, health, "127.0.0.1")) == 200);
    }

    // An assembly llama.cpp would refuse is not written, and the job fails; asked to keep it, the
    // job writes it and is done, its result naming the errors (never "not written" beside
    // "written": true).
    void keptInvalidAssemblyIsDone() {
        Server server(m_root);
        QVERIFY(server.port() != 0);
        const nlohmann::json plan = {
            {"format", "organ-graft-plan"},
            {"version", 1},
            {"base", "models/a.gguf"},
            {"operations",
             {{{"op", "set_metadata"}, {"key", "llama.block_count"}, {"type", "u64"}, {"value", 4}}}}};
        const Answer refused = post(server.port(), QStringLiteral("/v1/assemble"),
                                    {{"plan", plan}, {"output", "out/invalid.gguf"}});
        QCOMPARE(refused.status, 202);
        const nlohmann::json failed = waitForJob(server.port(), refused.body);
        JCOMPARE(failed["state"], "failed");
        JCOMPARE(failed["result"]["written"], false);
        QVERIFY(!QFile::exists(inRoot(QStringLiteral("out/invalid.gguf"))));
        const Answer kept = post(server.port(), QStringLiteral("/v1/assemble"),
                                 {{"plan", plan}, {"output", "out/invalid.gguf"}, {"keep_invalid", true}});
        QCOMPARE(kept.status, 202);
        const nlohmann::json done = waitForJob(server.port(), kept.body);
        JCOMPARE(done["state"], "done");
        QVERIFY2(!done.contains("error"), done.dump().c_str());
        JCOMPARE(done["result"]["written"], true);
        QVERIFY(done["result"]["check"]["errors"].get<int>() > 0);
        QVERIFY(QFile::exists(inRoot(QStringLiteral("out/invalid.gguf"))));
    }

    // POST /v1/quant-lab: the error report is organ quantize --report's; the sweep's sensitivity is
    // organ quantize --sensitivity's, its budget mixes never lose KL as they grow, llama-quantize's
    // mixes are measured at organ quantize's sizes; cancelled, it leaves no result.
    void quantLab() {
        const QString base = familyModel("family-base-f16.gguf");
        ORGAN_REQUIRE_SHARED(base);
        QVERIFY(QFile::copy(base, inRoot(QStringLiteral("models/family.gguf"))));
        const QByteArray head = familyTextHead("general.txt", 500);
        QVERIFY(!head.isEmpty());
        QVERIFY(writeAll(inRoot(QStringLiteral("models/short.txt")), head));
        Server server(m_root);
        QVERIFY(server.port() != 0);
        const quint16 port = server.port();
        const Answer started = post(port, QStringLiteral("/v1/quant-lab"),
                                    {{"path", "models/family.gguf"},
                                     {"report", true},
                                     {"pareto", true},
                                     {"text_path", "models/short.txt"},
                                     {"groups", "role"},
                                     {"budgets", 5}});
        QCOMPARE(started.status, 202);
        JCOMPARE(started.body["kind"], "quant-lab");
        const nlohmann::json job = waitForJob(port, started.body, 6000);
        JCOMPARE(job["state"], "done");
        const nlohmann::json& result = job["result"];

        QProcess cli;
        cli.setWorkingDirectory(m_root);
        const QString reportDoc = m_dir.filePath(QStringLiteral("cli-report.json"));
        cli.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                  {QStringLiteral("quantize"), QStringLiteral("--report"),
                   QStringLiteral("models/family.gguf"), QStringLiteral("--json"), reportDoc});
        QVERIFY(cli.waitForFinished(240000));
        QCOMPARE(cli.exitCode(), 0);
        nlohmann::json report = result["report"];
        nlohmann::json cliReport = parsed(readAll(reportDoc));
        report.erase("model");
        cliReport.erase("model");
        QVERIFY2(report == cliReport, report.dump().substr(0, 400).c_str());

        const QString sensitivityDoc = m_dir.filePath(QStringLiteral("cli-sensitivity.json"));
        cli.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                  {QStringLiteral("quantize"), QStringLiteral("--sensitivity"),
                   QStringLiteral("models/family.gguf"), QStringLiteral("--text"),
                   QStringLiteral("models/short.txt"), QStringLiteral("--groups"), QStringLiteral("role"),
                   QStringLiteral("--types"), QStringLiteral("Q2_K,Q3_K,Q4_K,IQ4_XS,Q5_K,Q6_K,Q8_0"),
                   QStringLiteral("--json"), sensitivityDoc});
        QVERIFY(cli.waitForFinished(240000));
        QCOMPARE(cli.exitCode(), 0);
        const nlohmann::json theirs = parsed(readAll(sensitivityDoc));
        const nlohmann::json& pareto = result["pareto"];
        JCOMPARE(pareto["format"], "organ-quantize-pareto");
        const nlohmann::json& ours = pareto["sensitivity"];
        QCOMPARE(ours["groups"].size(), theirs["groups"].size());
        for (std::size_t g = 0; g < ours["groups"].size(); ++g) {
            for (std::size_t t = 0; t < ours["groups"][g]["types"].size(); ++t) {
                JCOMPARE(ours["groups"][g]["types"][t]["kl_mean"],
                         theirs["groups"][g]["types"][t]["kl_mean"]);
            }
        }
        // Larger budget mixes never predict more KL; each is within its size.
        QVERIFY(pareto["mixes"].size() >= 5);
        for (std::size_t i = 1; i < pareto["mixes"].size(); ++i) {
            const nlohmann::json& a = pareto["mixes"][i - 1];
            const nlohmann::json& b = pareto["mixes"][i];
            QVERIFY(a["tensor_bytes"].get<std::uint64_t>() <= b["tensor_bytes"].get<std::uint64_t>());
            QVERIFY2(b["predicted_kl"].get<double>() <= a["predicted_kl"].get<double>(),
                     pareto["mixes"].dump().c_str());
        }
        // llama-quantize's Q4_K_M: organ quantize's size, measured.
        const auto q4 = std::find_if(pareto["references"].begin(), pareto["references"].end(),
                                     [](const nlohmann::json& r) { return r["label"] == "Q4_K_M"; });
        QVERIFY(q4 != pareto["references"].end());
        QVERIFY((*q4)["measured"]["kl_mean"].get<double>() > 0);
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q4_K_M;
        const auto model = GgufModel::open(base.toStdString());
        JCOMPARE((*q4)["tensor_bytes"], quantizedSize(*model, recipe, false).tensorBytes);

        // Refused before it starts; cancelled, it has no result.
        const Answer neither = post(port, QStringLiteral("/v1/quant-lab"), {{"path", "models/family.gguf"}});
        QCOMPARE(neither.status, 400);
        const Answer badGroups = post(port, QStringLiteral("/v1/quant-lab"),
                                      {{"path", "models/family.gguf"}, {"pareto", true}, {"groups", "rows"}});
        QCOMPARE(badGroups.status, 400);
        QCOMPARE(post(port, QStringLiteral("/v1/quant-lab"),
                      {{"path", "models/family.gguf"}, {"pareto", true}, {"text_path", "models/none.txt"}})
                     .status,
                 404);
        const Answer cancelled =
            post(port, QStringLiteral("/v1/quant-lab"), {{"path", "models/family.gguf"}, {"pareto", true}});
        QCOMPARE(cancelled.status, 202);
        QCOMPARE(
            request(port, "DELETE", QString::fromStdString(cancelled.body["href"].get<std::string>())).status,
            202);
        const nlohmann::json ended = waitForJob(port, cancelled.body, 6000);
        JCOMPARE(ended["state"], "cancelled");
        QVERIFY(!ended.contains("result"));
        QFile::remove(inRoot(QStringLiteral("models/family.gguf")));
    }

    void capsAndCancelsJobs() {
        // A model large enough that measuring every value takes a while.
        QVERIFY(
            writeSpecimen(inRoot(QStringLiteral("models/big.gguf")).toStdString(), 9, slowShape()).isOk());
        Server server(m_root, {QStringLiteral("--max-jobs"), QStringLiteral("1")});
        QVERIFY(server.port() != 0);
        const quint16 port = server.port();
        const Answer first =
            post(port, QStringLiteral("/v1/measure"), {{"path", "models/big.gguf"}, {"sample", "all"}});
        QCOMPARE(first.status, 202);
        const Answer second = post(port, QStringLiteral("/v1/measure"), {{"path", "models/a.gguf"}});
        QCOMPARE(second.status, 429);
        const QString href = QString::fromStdString(first.body["href"].get<std::string>());
        const Answer cancel = request(port, "DELETE", href);
        QCOMPARE(cancel.status, 202);
        // Running, it is now stopping; had it not started, it would have ended at once.
        QVERIFY2(cancel.body["state"] == "cancelling" || cancel.body["state"] == "cancelled",
                 cancel.raw.constData());
        const nlohmann::json ended = waitForJob(port, first.body);
        JCOMPARE(ended["state"], "cancelled");
        QVERIFY(!ended.contains("result"));
        // The list is the queue's: the job's state, as the job's own page says it.
        const Answer list = get(port, QStringLiteral("/v1/jobs"));
        QCOMPARE(list.status, 200);
        JCOMPARE(list.body["jobs"][0]["state"], "cancelled");
        JCOMPARE(list.body["running"], 0);
        QCOMPARE(request(port, "DELETE", href).status, 409);
        // The slot is free again; two clients at once are both answered.
        const Answer third = post(port, QStringLiteral("/v1/measure"), {{"path", "models/a.gguf"}});
        QCOMPARE(third.status, 202);
        const nlohmann::json measured = waitForJob(port, third.body);
        JCOMPARE(measured["state"], "done");
        QFile::remove(inRoot(QStringLiteral("models/big.gguf")));
    }

    void needsItsToken() {
        const QByteArray token = "a-token-of-24-characters";
        Server server(m_root, {QStringLiteral("--token"), QString::fromLatin1(token)});
        QVERIFY(server.port() != 0);
        const Answer none = get(server.port(), QStringLiteral("/v1/health"));
        QCOMPARE(none.status, 401);
        QCOMPARE(none.authenticate, QByteArray("Bearer"));
        QCOMPARE(get(server.port(), QStringLiteral("/v1/health"), "a-token-of-24-characterz").status, 401);
        QCOMPARE(get(server.port(), QStringLiteral("/v1/health"), "a-token").status, 401);
        QCOMPARE(get(server.port(), QStringLiteral("/v1/health"), token).status, 200);
        QCOMPARE(rawStatus(server.port(), "GET /v1/health HTTP/1.1\r\nAuthorization: Basic eDp5\r\n\r\n"),
                 401);

        // Any address but loopback needs a token, and a token has at least 16 characters.
        for (const QStringList& args : {QStringList{QStringLiteral("--listen"), QStringLiteral("0.0.0.0:0")},
                                        QStringList{QStringLiteral("--token"), QStringLiteral("short")},
                                        QStringList{QStringLiteral("--listen"), QStringLiteral("nohost")},
                                        QStringList{QStringLiteral("--root")}}) {
            QProcess process;
            process.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                          QStringList{QStringLiteral("serve")} + args);
            QVERIFY(process.waitForFinished(10000));
            QCOMPARE(process.exitCode(), 2);
        }
        // An option given twice is refused, never the last one winning; a token is never echoed.
        for (const auto& [option, said] :
             {std::pair{QStringLiteral("--root"), QByteArray("--root is given twice ('.', then '/tmp')")},
              std::pair{QStringLiteral("--token"), QByteArray("--token is given twice: give one value")}}) {
            const QString value =
                option == QStringLiteral("--root") ? QStringLiteral(".") : QStringLiteral("0123456789abcdef");
            const QString again = option == QStringLiteral("--root") ? QStringLiteral("/tmp")
                                                                     : QStringLiteral("fedcba9876543210");
            QProcess twice;
            twice.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                        {QStringLiteral("serve"), option, value, option, again, QStringLiteral("--listen"),
                         QStringLiteral("127.0.0.1:0")});
            QVERIFY(twice.waitForFinished(10000));
            QCOMPARE(twice.exitCode(), 2);
            const QByteArray err = twice.readAllStandardError();
            QVERIFY2(err.contains(said), err.constData());
            QVERIFY(!err.contains("fedcba9876543210"));
        }
        QProcess process;
        process.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                      {QStringLiteral("serve"), QStringLiteral("--root"),
                       m_dir.filePath(QStringLiteral("absent")), QStringLiteral("--listen"),
                       QStringLiteral("127.0.0.1:0")});
        QVERIFY(process.waitForFinished(10000));
        QCOMPARE(process.exitCode(), 1);
        QVERIFY(process.readAllStandardError().contains("not a folder"));
    }
};

QTEST_GUILESS_MAIN(TestApi)
#include "tst_api.moc"
