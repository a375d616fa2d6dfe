// An organ directory as an adversary leaves it: a tensor file changed after its manifest was
// written, a sub-folder linked to somewhere else, a manifest whose arrays are expensive to read,
// outputs aimed inside it, and the partial directories of runs that were killed.
#include "allocation_tracker.h"
#include "fixtures.h"
#include "organ_fixture.h"
#include "shared_models.h"

#include "fleet/fleet.h"
#include "graft/assembly.h"
#include "graft/graft_check.h"
#include "measure/measure_report.h"
#include "measure/shard_report.h"
#include "organs/organ_directory.h"
#include "purify/purify_model.h"
#include "quant/quantize_model.h"
#include "support/safe_files.h"
#include "vitals/vitals_report.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <unistd.h>

using namespace organ;
using namespace organ::testing;
namespace fs = std::filesystem;

namespace {

template <typename F> QString thrown(F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

void flipLastByte(const QString& file) {
    QByteArray bytes = readAll(file);
    bytes[bytes.size() - 1] = char(bytes[bytes.size() - 1] ^ 1);
    QVERIFY(writeAll(file, bytes));
}

} // namespace

class TestOrganSafety : public OrganFixture {
    Q_OBJECT

private slots:
    void initTestCase() {
        m_model = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(m_model);
    }

    // A sub-folder (or the manifest) that is a link is never followed out of the directory:
    // `mv d/organs /elsewhere && ln -s /elsewhere/organs d/organs` was read as if it were inside.
    void linksNeverLeadOut_data() {
        QTest::addColumn<QString>("linked");
        QTest::addColumn<QString>("message");
        QTest::newRow("sub-folder") << QStringLiteral("organs")
                                    << QStringLiteral("leads through a link (a linked file or sub-folder is "
                                                      "never followed out of linked-organs)");
        QTest::newRow("manifest") << QStringLiteral("manifest.json") << QStringLiteral("no manifest.json");
    }
    void linksNeverLeadOut() {
        QFETCH(QString, linked);
        QFETCH(QString, message);
        const QString directory = extracted(QStringLiteral("linked-") + QFileInfo(linked).baseName());
        QVERIFY(!directory.isEmpty());
        const QString elsewhere = path(QStringLiteral("elsewhere-") + QFileInfo(linked).baseName());
        QVERIFY(QDir().mkpath(elsewhere));
        const QString moved = elsewhere + u'/' + linked;
        QVERIFY(QFile::rename(directory + u'/' + linked, moved));
        fs::create_symlink(moved.toStdString(), QString(directory + u'/' + linked).toStdString());
        const QString error = thrown([&] { openModel(directory.toStdString()); });
        QVERIFY2(error.contains(message), qPrintable(error));
        QVERIFY2(thrown([&] { OrganDirectory::open(directory.toStdString()); }) == error, qPrintable(error));
    }

    // A tensor file changed after its manifest was written is never copied, computed from or
    // laundered into a new manifest: each reader of its bytes checks the SHA-256 and names it.
    void tamperedTensorsAreRefused_data() {
        QTest::addColumn<QString>("use");
        for (const char* use :
             {"graft into a GGUF", "graft into a directory", "purify it", "purify another", "extract again",
              "assemble", "vital signs", "vital signs of a plan", "quantize it", "quantize, copied as is"}) {
            QTest::newRow(use) << QString::fromUtf8(use);
        }
    }
    void tamperedTensorsAreRefused() {
        QFETCH(QString, use);
        const QString directory =
            extracted(QStringLiteral("tampered-") + QString::number(QTest::currentDataTag()[0]) +
                      QString::number(qHash(use)));
        QVERIFY(!directory.isEmpty());
        flipLastByte(directory + QStringLiteral("/organs/blk_0_ffn_up.bin"));
        const QByteArray before = folderDigest(directory);
        const std::string d = directory.toStdString();
        const QString out = path(QStringLiteral("out-") + QString::number(qHash(use)));
        const GraftPlan plan = replacePlan(directory, m_model, organsOfLayers(4, 4)); // layer 0 from the base
        QString error;
        if (use == QStringLiteral("graft into a GGUF") || use == QStringLiteral("graft into a directory")) {
            const std::string target =
                QString(out + (use.endsWith(QStringLiteral("GGUF")) ? QStringLiteral(".gguf") : QString()))
                    .toStdString();
            error =
                QString::fromStdString(graftChimera(plan, GraftModels::open(plan), target).written.message);
            QVERIFY(!fs::exists(target));
        } else if (use.startsWith(QStringLiteral("purify"))) {
            TensorSelector select;
            select.names = {use.endsWith(QStringLiteral("it")) ? "blk.0.ffn_up.weight"
                                                               : "blk.1.ffn_up.weight"};
            PurifyParams params;
            error = QString::fromStdString(purifyModel(*openModel(d), select, params,
                                                       QString(out + QStringLiteral(".gguf")).toStdString())
                                               .written.message);
        } else if (use == QStringLiteral("extract again")) {
            error = QString::fromStdString(extractOrgans(*openModel(d), out.toStdString()).message);
            QVERIFY(!QFileInfo::exists(out));
        } else if (use.startsWith(QStringLiteral("quantize"))) {
            QuantizeRecipe recipe;
            recipe.fileType = QuantFileType::F16; // any row length (the model's FFN rows are 172)
            if (use.endsWith(QStringLiteral("as is"))) {
                recipe.tensorTypes = {{"ffn_up", TensorType::F32}};
            }
            const std::string target = QString(out + QStringLiteral(".gguf")).toStdString();
            const QuantizeOutcome outcome = quantizeModel(*openModel(d), recipe, nullptr, target);
            error = QString::fromStdString(outcome.written.message);
            QVERIFY(!fs::exists(target));
        } else if (use == QStringLiteral("assemble")) {
            error = QString::fromStdString(
                assembleOrgans(OrganDirectory::open(d), QString(out + QStringLiteral(".gguf")).toStdString())
                    .message);
        } else if (use == QStringLiteral("vital signs")) {
            VitalsRequest request;
            request.continuation = 0;
            error = thrown([&] { takeVitals(ModelWeights::ofModel(openModel(d)), {}, request); });
        } else {
            const GraftModels models = GraftModels::open(plan);
            const CompatibilityReport report = checkGraft(plan, models);
            VitalsRequest request;
            request.continuation = 0;
            error = thrown([&] { takeVitals(ModelWeights::ofPlan(plan, models, report), {}, request); });
        }
        QVERIFY2(
            error.contains(QFileInfo(directory).fileName() +
                           QStringLiteral("/organs/blk_0_ffn_up.bin: its data does not match the manifest's "
                                          "SHA-256")),
            qPrintable(use + u": " + error));
        QCOMPARE(folderDigest(directory), before);
        QVERIFY(QDir(m_dir.path()).entryList({QStringLiteral("*partial*")}).isEmpty());
    }

    // A measurement reads samples, not every byte, and says so.
    void measurementSaysDigestsWereNotChecked() {
        const QString directory = extracted(QStringLiteral("measured"));
        QVERIFY(!directory.isEmpty());
        MeasuredModel m;
        m.model = openModel(directory.toStdString());
        m.anatomy = analyzeAnatomy(*m.model);
        QVERIFY(measureModel(*m.model, m.anatomy, {}, m.measurement).isOk());
        QCOMPARE(measurementToJson(m).value("tensor_digests", std::string()), std::string("not checked"));
        MeasuredModel g = m;
        g.model = GgufModel::open(m_model.toStdString());
        QVERIFY(!measurementToJson(g).contains("tensor_digests"));
    }

    // Every file of an open directory is an input, the manifest and files yet to be made
    // included: `organ measure d --json d/manifest.json` destroyed d.
    void nothingIsWrittenInsideAnInputDirectory() {
        const QString directory = extracted(QStringLiteral("input"));
        QVERIFY(!directory.isEmpty());
        const QByteArray before = folderDigest(directory);
        const std::string manifest = QString(directory + QStringLiteral("/manifest.json")).toStdString();
        const std::string inside = QString(directory + QStringLiteral("/organs/new.json")).toStdString();
        // Named as an input, before anything is open.
        QVERIFY(thrown([&] {
                    checkOutputTarget(manifest, {directory.toStdString()});
                }).contains(QStringLiteral("is inside input")));
        QVERIFY(thrown([&] {
                    checkOutputTarget(inside, {directory.toStdString()});
                }).contains(QStringLiteral("is inside input")));
        {
            const auto model = openModel(directory.toStdString());
            for (const std::string& target : {manifest, inside}) {
                const QString error = thrown([&] { writeFileSafely(target, "{}"); });
                QVERIFY2(error.contains(QStringLiteral("is inside input, a folder that is an input")),
                         qPrintable(error));
            }
            const JobResult gguf = writeGguf(manifest, specFromModel(*model));
            QVERIFY2(gguf.message.find("is inside input") != std::string::npos, gguf.message.c_str());
            const JobResult organs =
                extractOrgans(*model, QString(directory + QStringLiteral("/again")).toStdString());
            QVERIFY2(organs.message.find("is inside input") != std::string::npos, organs.message.c_str());
        }
        QCOMPARE(folderDigest(directory), before);
        // Closed, it is a folder like any other.
        writeFileSafely(inside, "{}");
        QVERIFY(QFileInfo::exists(QString::fromStdString(inside)));
    }

    // What killed writers left is found and removed the next time the target is written, and
    // named: the writer's partial folders as they are named now and as earlier versions named
    // them, and partial files; a live process's partial is left alone, a link is removed and
    // never followed.
    void partialsOfKilledRunsAreRemoved() {
        const QString target = path(QStringLiteral("killed"));
        const pid_t dead = exitedProcess();
        const QString stale = target + QStringLiteral(".partial-%1-0").arg(dead);
        QVERIFY(QDir().mkpath(stale + QStringLiteral("/organs")));
        QVERIFY(writeAll(stale + QStringLiteral("/organs/blk_0_ffn_up.bin"), QByteArray(4096, 'x')));
        const QString staleNow = target + QStringLiteral(".partial-%1.1f03a9").arg(dead);
        QVERIFY(QDir().mkpath(staleNow + QStringLiteral("/embed")));
        QVERIFY(writeAll(staleNow + QStringLiteral("/embed/token_embd.bin"), QByteArray(4096, 'y')));
        const QString staleFile = target + QStringLiteral(".partial.%1.abc123").arg(dead);
        QVERIFY(writeAll(staleFile, "partial"));
        const QString kept = path(QStringLiteral("kept-by-a-link"));
        QVERIFY(QDir().mkpath(kept));
        QVERIFY(writeAll(kept + QStringLiteral("/precious"), "keep me"));
        const QString link = target + QStringLiteral(".partial-%1-1").arg(dead);
        fs::create_symlink(kept.toStdString(), link.toStdString());
        const QString alive = target + QStringLiteral(".partial-%1-0").arg(::getppid());
        QVERIFY(QDir().mkpath(alive));

        const JobResult done = extractOrgans(*GgufModel::open(m_model.toStdString()), target.toStdString());
        QVERIFY2(done.isOk(), done.message.c_str());
        QVERIFY(!QFileInfo::exists(stale));
        QVERIFY(!QFileInfo::exists(staleNow));
        QVERIFY(!QFileInfo::exists(staleFile));
        QVERIFY(!QFileInfo(link).isSymLink());
        QCOMPARE(readAll(kept + QStringLiteral("/precious")), QByteArray("keep me"));
        QVERIFY(QFileInfo::exists(alive));
        QCOMPARE(done.warnings.size(), std::size_t(4));
        std::string all;
        for (const std::string& warning : done.warnings) {
            all += warning + "\n";
        }
        for (const std::string& name : {std::to_string(dead) + "-0", std::to_string(dead) + ".1f03a9"}) {
            QVERIFY2(all.find("killed.partial-" + name +
                              ": removed a partial directory left by an earlier run (process " +
                              std::to_string(dead) + ")") != std::string::npos,
                     all.c_str());
        }
    }

    // A name as long as a file system allows (255 bytes) can be written, as a file and as an organ
    // directory: the partial's name is cut to fit, at a character's start, and a killed run's
    // partial of such a name is still found and removed.
    void longestNamesAreWritten() {
        const QString longName = QStringLiteral("é").repeated(40) + QStringLiteral("x").repeated(167) +
                                 QStringLiteral(".json"); // 252 bytes
        QCOMPARE(longName.toUtf8().size(), 252);
        const QString file = path(longName);
        const pid_t dead = exitedProcess();
        const QByteArray stem = longName.toUtf8().left(200);
        const QString staleFile =
            path(QString::fromUtf8(stem) + QStringLiteral(".partial.%1.abc123").arg(dead));
        QVERIFY(writeAll(staleFile, "partial"));
        std::vector<std::string> warnings;
        writeFileSafely(file.toStdString(), "{}", {}, &warnings);
        QCOMPARE(readAll(file), QByteArray("{}"));
        QVERIFY(!QFileInfo::exists(staleFile));
        QCOMPARE(warnings.size(), std::size_t(1));
        // 200 bytes would cut the last é in two: the stem ends before it.
        const QString cutName = QStringLiteral("y").repeated(199) + QStringLiteral("é").repeated(26);
        writeFileSafely(path(cutName).toStdString(), "{}");
        QCOMPARE(readAll(path(cutName)), QByteArray("{}"));
        const QString folder = path(QStringLiteral("o").repeated(250));
        const JobResult done = extractOrgans(*GgufModel::open(m_model.toStdString()), folder.toStdString());
        QVERIFY2(done.isOk(), done.message.c_str());
        QVERIFY(QFileInfo(folder).isDir());
        const QStringList partials =
            QDir(m_dir.path())
                .entryList({QStringLiteral("o").repeated(200) + QStringLiteral("*partial*"),
                            QString::fromUtf8(stem) + QStringLiteral("*partial*"),
                            QStringLiteral("y").repeated(199) + QStringLiteral("*partial*")},
                           QDir::AllEntries | QDir::Hidden | QDir::System);
        QVERIFY2(partials.isEmpty(), qPrintable(partials.join(u' ')));
    }

    // A manifest's array costs its bytes, not a value object per element: ten million u8
    // values (30 MB) took 1.43 GB to open. Past kMaxManifestValues it is refused, cheaply.
    void manifestArraysCostBoundedMemory() {
        const QString directory = extracted(QStringLiteral("big-array"));
        QVERIFY(!directory.isEmpty());
        const QString manifestPath = directory + QStringLiteral("/manifest.json");
        nlohmann::json manifest = nlohmann::json::parse(readAll(manifestPath).toStdString());
        auto withArray = [&](std::size_t count) {
            nlohmann::json values = nlohmann::json::array();
            for (std::size_t i = 0; i < count; ++i) {
                values.push_back(i % 251);
            }
            nlohmann::json copy = manifest;
            copy["metadata"].push_back(
                {{"key", "t.big"}, {"type", "array"}, {"element_type", "u8"}, {"value", values}});
            QVERIFY(writeAll(manifestPath, QByteArray::fromStdString(copy.dump())));
        };
        withArray(2'000'000);
        resetPeakAllocation();
        const OrganDirectory opened = OrganDirectory::open(directory.toStdString());
        const std::size_t peak = peakAllocationSinceReset();
        const auto* big = &opened.metadata().back().second;
        QCOMPARE(big->arraySize(), std::uint64_t(2'000'000));
        QCOMPARE(big->elements(3).back().asUInt(), std::optional<std::uint64_t>(2));
        qInfo("a manifest with 2 000 000 u8 values opened with %.1f MiB at most", double(peak) / (1 << 20));
        QVERIFY2(peak < (160u << 20), qPrintable(QString::number(peak)));

        withArray(kMaxManifestValues);
        resetPeakAllocation();
        const QString error = thrown([&] { OrganDirectory::open(directory.toStdString()); });
        const std::size_t refused = peakAllocationSinceReset();
        QVERIFY2(error.contains(QStringLiteral("more than 4 194 304 values")), qPrintable(error));
        qInfo("one of 4 194 304 refused with %.1f MiB at most", double(refused) / (1 << 20));
        QVERIFY2(refused < (400u << 20), qPrintable(QString::number(refused)));
    }

    // Shard and fleet reports read for --merge cost bounded memory: a report of 30 million small
    // numbers (60 MB, under the byte caps) took 1.6 GB and more to parse; it is refused after
    // 4 194 304 values, naming the file, and one of real size still reads.
    void reportsCostBoundedMemory() {
        const QString path = QDir(m_dir.path()).filePath(QStringLiteral("huge-report.json"));
        QByteArray text = "{\"rows\": [0";
        text.reserve(60 << 20);
        while (text.size() < (60 << 20)) {
            text += ",0";
        }
        text += "]}";
        QVERIFY(writeAll(path, text));
        for (const bool fleet : {true, false}) {
            resetPeakAllocation();
            const QString error = thrown([&] {
                if (fleet) {
                    readFleetReport(path.toStdString());
                } else {
                    readShardReport(path.toStdString());
                }
            });
            const std::size_t peak = peakAllocationSinceReset();
            QVERIFY2(error.startsWith(QStringLiteral("huge-report.json: more than 4 194 304 values")),
                     qPrintable(error));
            qInfo("a %s report of 30 000 000 values refused with %.1f MiB at most", fleet ? "fleet" : "shard",
                  double(peak) / (1 << 20));
            QVERIFY2(peak < (400u << 20), qPrintable(QString::number(peak)));
        }
        const QString small = QDir(m_dir.path()).filePath(QStringLiteral("not-a-report.json"));
        QVERIFY(writeAll(small, "{\"format\": \"something else\"}"));
        QVERIFY2(thrown([&] {
                     readFleetReport(small.toStdString());
                 }).startsWith(QStringLiteral("not-a-report.json: ")),
                 qPrintable(thrown([&] { readFleetReport(small.toStdString()); })));
        QVERIFY2(thrown([&] {
                     readShardReport(small.toStdString());
                 }).startsWith(QStringLiteral("not-a-report.json: ")),
                 qPrintable(thrown([&] { readShardReport(small.toStdString()); })));
    }
};

QTEST_GUILESS_MAIN(TestOrganSafety)
#include "tst_organ_safety.moc"
