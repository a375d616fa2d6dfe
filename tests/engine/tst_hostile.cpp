// Hostile input and write hygiene in the engine: strings from files shown safely, every
// output through SafeOutput (special files, inputs, planted links, killed runs' partials, a
// good file never lost), inputs read without blocking, cache entries checked, and counts a
// file or a plan declares capped before they drive memory or time.
#include "allocation_tracker.h"
#include "anatomy/anatomy.h"
#include "anatomy/model_validation.h"
#include "fixtures.h"
#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"
#include "graft/assembly.h"
#include "hostile_models.h"
#include "measure/measure_cache.h"
#include "measure/model_measure.h"
#include "support/errors.h"
#include "support/mapped_file.h"
#include "support/safe_files.h"
#include "support/sha256.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace organ;
using namespace organ::testing;

namespace {

// A process id that is not running: a child that has exited and been reaped.
pid_t deadPid() {
    const pid_t child = ::fork();
    if (child == 0) {
        ::_exit(0);
    }
    ::waitpid(child, nullptr, 0);
    return child;
}

std::string file(const QTemporaryDir& dir, const char* name) {
    return dir.filePath(QString::fromLatin1(name)).toStdString();
}

GgufWriteSpec smallModel(std::uint8_t seed = 1) {
    return hostileModelSpec(seed);
}

// 4096 values spread evenly (a simple generator): H near 1, so that its score follows H.
TensorToWrite uniformTensor(const std::string& name) {
    auto values = std::make_shared<std::vector<float>>(4096);
    std::uint32_t state = 12345;
    for (float& v : *values) {
        state = state * 1664525u + 1013904223u;
        v = static_cast<float>(state >> 8) / float(1u << 24) - 0.5f;
    }
    TensorToWrite t;
    t.name = name;
    t.type = TensorType::F32;
    t.nDims = 2;
    t.ne = {64, 64, 1, 1};
    t.source.bytes = std::as_bytes(std::span(*values));
    t.source.owner = values;
    return t;
}

} // namespace

class TestHostile : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    std::string writeModel(const char* name, std::uint8_t seed = 1) {
        const std::string path = file(m_dir, name);
        const JobResult result = writeGguf(path, smallModel(seed));
        if (!result.isOk()) {
            qWarning("%s", result.message.c_str());
        }
        return path;
    }

private slots:
    void escapesForPeople_data() {
        QTest::addColumn<QByteArray>("raw");
        QTest::addColumn<QByteArray>("shown");
        QTest::newRow("plain") << QByteArray("blk.0.ffn_up.weight") << QByteArray("blk.0.ffn_up.weight");
        QTest::newRow("unicode kept") << QByteArray("θ × 64 → ü") << QByteArray("θ × 64 → ü");
        QTest::newRow("backslash") << QByteArray("a\\b") << QByteArray("a\\\\b");
        QTest::newRow("escape sequence") << QByteArray("\x1b[2J") << QByteArray("\\x1B[2J");
        QTest::newRow("newline and tab") << QByteArray("a\nb\tc") << QByteArray("a\\x0Ab\\x09c");
        QTest::newRow("nul") << QByteArray("a\0b", 3) << QByteArray("a\\x00b");
        QTest::newRow("delete") << QByteArray("a\x7f") << QByteArray("a\\x7F");
        QTest::newRow("invalid byte") << QByteArray("l\xff"
                                                    "a")
                                      << QByteArray("l\\xFFa");
        QTest::newRow("overlong") << QByteArray("\xc0\xaf") << QByteArray("\\xC0\\xAF");
        QTest::newRow("surrogate") << QByteArray("\xed\xa0\x80") << QByteArray("\\xED\\xA0\\x80");
        QTest::newRow("truncated") << QByteArray("\xe2\x82") << QByteArray("\\xE2\\x82");
        QTest::newRow("C1 control") << QByteArray("\xc2\x9b") << QByteArray("\\u{009B}");
        QTest::newRow("bidi override") << QByteArray("\xe2\x80\xaertl") << QByteArray("\\u{202E}rtl");
        QTest::newRow("line separator") << QByteArray("\xe2\x80\xa8") << QByteArray("\\u{2028}");
    }
    void escapesForPeople() {
        QFETCH(QByteArray, raw);
        QFETCH(QByteArray, shown);
        const std::string escaped = escapeText(std::string_view(raw.constData(), std::size_t(raw.size())));
        QCOMPARE(QByteArray::fromStdString(escaped), shown);
        QVERIFY(isValidUtf8(escaped));
        for (unsigned char c : escaped) {
            QVERIFY(c >= 0x20 && c != 0x7f);
        }
    }

    // JSON never throws on invalid UTF-8: such strings and keys are written escaped; valid
    // strings, control characters included, pass unchanged (JSON escapes them itself).
    void jsonNeverThrows() {
        nlohmann::json doc = {{"name", kHostileName}, {"ok", "a\nb θ"}, {kHostileKey, {"x", "\xff"}}};
        const std::string text = dumpJson(doc, 2);
        QVERIFY(isValidUtf8(text));
        const auto back = nlohmann::json::parse(text);
        QCOMPARE(back.at("name").get<std::string>(), escapeText(kHostileName));
        QCOMPARE(back.at("ok").get<std::string>(), std::string("a\nb θ"));
        QCOMPARE(back.at(jsonText(kHostileKey)).at(1).get<std::string>(), std::string("\\xFF"));
        QCOMPARE(dumpJson(nlohmann::json{{"a", "b"}}), std::string(R"({"a":"b"})"));
        // DEL and C1 controls, which JSON allows raw, are written as \u escapes: the same
        // document, safe on a terminal.
        const std::string controls = dumpJson(nlohmann::json{{"v", "m\x7f"
                                                                   "del \xc2\x9b[2J \xe2\x80\xae"}});
        QCOMPARE(controls, std::string("{\"v\":\"m\\u007fdel \\u009b[2J \\u202e\"}"));
        QCOMPARE(nlohmann::json::parse(controls).at("v").get<std::string>(),
                 std::string("m\x7f"
                             "del \xc2\x9b[2J \xe2\x80\xae"));
    }

    // Outputs that are not regular files, inputs (by identity, through links), a missing
    // folder: refused with the reason, nothing created, nothing blocked.
    void outputRefusals() {
        auto refusal = [](const std::string& target, const std::vector<std::string>& inputs = {}) {
            try {
                SafeOutput out(target, inputs);
            } catch (const IoError& e) {
                return std::string(e.what());
            }
            return std::string();
        };
        QVERIFY(refusal("/dev/null").find("/dev/null: is a character device, not a regular file") !=
                std::string::npos);
        struct stat st {};
        QVERIFY(::stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
        const std::string fifo = file(m_dir, "fifo");
        QCOMPARE(::mkfifo(fifo.c_str(), 0644), 0);
        QElapsedTimer timer;
        timer.start();
        QVERIFY(refusal(fifo).find("fifo: is a FIFO (named pipe), not a regular file") != std::string::npos);
        QVERIFY(timer.elapsed() < 2000);
        QVERIFY(refusal(m_dir.path().toStdString()).find("is a folder") != std::string::npos ||
                refusal(m_dir.path().toStdString()).find("not a file name") != std::string::npos);
        QVERIFY(refusal(file(m_dir, "missing/out.gguf")).find("does not exist") != std::string::npos);
        // An input by another name: a hard link and a symbolic link to an open model.
        const std::string model = writeModel("input.gguf");
        const auto open = GgufModel::open(model);
        const std::string hard = file(m_dir, "hard.gguf");
        const std::string soft = file(m_dir, "soft.gguf");
        QCOMPARE(::link(model.c_str(), hard.c_str()), 0);
        QCOMPARE(::symlink(model.c_str(), soft.c_str()), 0);
        for (const std::string& target : {model, hard, soft}) {
            QVERIFY(refusal(target).find("refusing to write over a file that is also an input") !=
                    std::string::npos);
        }
        // And a file that is an input without being open (a plan, say), named in `inputs`.
        const std::string plan = file(m_dir, "plan.json");
        QVERIFY(writeAll(QString::fromStdString(plan), "{}"));
        QVERIFY(refusal(plan, {plan}).find("also an input") != std::string::npos);
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.partial*")}).size(), 0);
    }

    // A link planted where a partial would go is never followed; partials of runs that were
    // killed are removed and named; those of live processes are left alone.
    void partialsAndLinks() {
        const std::string victim = file(m_dir, "victim.txt");
        QVERIFY(writeAll(QString::fromStdString(victim), "precious"));
        const std::string out = file(m_dir, "out.gguf");
        const std::string planted = out + ".partial." + std::to_string(deadPid()) + ".abcdef";
        QCOMPARE(::symlink(victim.c_str(), planted.c_str()), 0);
        const std::string live = out + ".partial." + std::to_string(::getppid()) + ".123456";
        QVERIFY(writeAll(QString::fromStdString(live), "someone else's"));
        const JobResult result = writeGguf(out, smallModel());
        QVERIFY2(result.isOk(), result.message.c_str());
        QCOMPARE(readAll(QString::fromStdString(victim)), QByteArray("precious"));
        struct stat st {};
        QVERIFY(::lstat(planted.c_str(), &st) != 0); // removed, as stale
        QCOMPARE(result.warnings.size(), std::size_t(1));
        QVERIFY(result.warnings.front().find("removed a partial file left by an earlier run") !=
                std::string::npos);
        QVERIFY(QFileInfo::exists(QString::fromStdString(live)));
        QVERIFY(GgufModel::open(out) != nullptr);
        QFile::remove(QString::fromStdString(live));
    }

    // A write that fails or is cancelled leaves the file already at the target as it was;
    // two writers at once never leave anything but one whole file.
    void aGoodFileIsNeverLost() {
        const std::string out = writeModel("good.gguf", 1);
        const QByteArray before = readAll(QString::fromStdString(out));
        GgufWriteSpec failing = smallModel(2);
        failing.tensors.back().source.generate = [](std::uint64_t, std::span<std::byte>) {
            throw IoError("the source went away");
        };
        failing.tensors.back().source.bytes = {};
        QVERIFY(!writeGguf(out, failing).isOk());
        QCOMPARE(readAll(QString::fromStdString(out)), before);
        StopToken stop;
        stop.requestStop();
        QCOMPARE(writeGguf(out, smallModel(3), {}, &stop).status, JobResult::Status::Cancelled);
        QCOMPARE(readAll(QString::fromStdString(out)), before);
        // A written file its caller refuses (a chimera that fails validation) is not kept.
        std::string asked;
        const JobResult refused = writeGguf(out, smallModel(6), {}, nullptr, [&](const RootedPath& written) {
            asked = written.path;
            return std::optional<std::string>("out.gguf: not written: it would not load");
        });
        QCOMPARE(refused.message, std::string("out.gguf: not written: it would not load"));
        QVERIFY(!refused.isOk());
        QVERIFY(asked.find("good.gguf.partial.") != std::string::npos);
        QVERIFY(!QFileInfo::exists(QString::fromStdString(asked)));
        QCOMPARE(readAll(QString::fromStdString(out)), before);
        JobResult a;
        JobResult b;
        std::thread first([&] { a = writeGguf(out, smallModel(4)); });
        std::thread second([&] { b = writeGguf(out, smallModel(5)); });
        first.join();
        second.join();
        QVERIFY2(a.isOk() && b.isOk(), (a.message + " / " + b.message).c_str());
        const auto written = GgufModel::open(out);
        QCOMPARE(written->tensors().size(), smallModel().tensors.size());
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("good.gguf.partial*")}).size(), 0);
    }

    // A file cut short while mapped: reads past its new end give zeros, never SIGBUS; the file is
    // marked and named, and the writer keeps nothing made while it happened.
    void filesCutShortBeneathTheirMapping() {
        const std::string path = file(m_dir, "cut.bin");
        const long page = ::sysconf(_SC_PAGESIZE);
        QVERIFY(writeAll(QString::fromStdString(path), QByteArray(int(3 * page), 'x')));
        const auto mapped = MappedFile::open(path);
        const std::uint64_t before = MappedFile::cutEvents();
        QCOMPARE(char(mapped->bytes()[std::size_t(2 * page)]), 'x');
        QVERIFY(!mapped->wasCutShort());
        QCOMPARE(::truncate(path.c_str(), page), 0);
        const volatile std::byte* data = mapped->bytes().data();
        QCOMPARE(int(data[2 * page + 5]), 0); // SIGBUS here before
        QCOMPARE(int(data[page + 1]), 0);
        QCOMPARE(char(data[10]), 'x');
        QVERIFY(mapped->wasCutShort());
        QVERIFY(MappedFile::cutEvents() > before);
        const std::string expected = "cut.bin was cut short while it was read (" +
                                     groupDigits(std::uint64_t(page)) + " bytes now, " +
                                     groupDigits(std::uint64_t(3 * page)) + " when opened)";
        QVERIFY2(MappedFile::cutShortMessage().find(expected) != std::string::npos,
                 MappedFile::cutShortMessage().c_str());
        // A write made while a file was cut is not kept, the file it would replace untouched.
        const std::string out = file(m_dir, "after-cut.gguf");
        const std::uint64_t cutsAtStart = MappedFile::cutEvents();
        GgufWriteSpec spec = smallModel();
        TensorToWrite extra;
        extra.name = "cut.weight";
        extra.ne = {16, 1, 1, 1};
        extra.source.generate = [mapped](std::uint64_t, std::span<std::byte> outBytes) {
            const volatile std::byte* bytes = mapped->bytes().data();
            for (std::size_t i = 0; i < outBytes.size(); ++i) {
                outBytes[i] = bytes[i]; // its first page, past the file's end by then
            }
        };
        spec.tensors.push_back(extra);
        QCOMPARE(::truncate(path.c_str(), 0), 0); // cut again, to nothing
        const JobResult written = writeGguf(out, spec);
        QVERIFY(MappedFile::cutEvents() > cutsAtStart);
        QVERIFY2(!written.isOk() &&
                     written.message.find("cut.bin was cut short while it was read") != std::string::npos &&
                     written.message.find("after-cut.gguf was not written") != std::string::npos,
                 written.message.c_str());
        QVERIFY(!QFileInfo::exists(QString::fromStdString(out)));
        QVERIFY(QDir(m_dir.path()).entryList({QStringLiteral("after-cut.gguf*")}, QDir::Files).isEmpty());
    }

    // Inputs are opened without blocking and refused unless regular; small files are capped.
    void inputsNeverBlock() {
        const std::string fifo = file(m_dir, "model-fifo.gguf");
        QCOMPARE(::mkfifo(fifo.c_str(), 0644), 0);
        QElapsedTimer timer;
        timer.start();
        for (int k = 0; k < 2; ++k) {
            try {
                if (k == 0) {
                    GgufModel::open(fifo);
                } else {
                    readSmallFile(fifo, 1024);
                }
                QFAIL("a FIFO was opened");
            } catch (const IoError& e) {
                QVERIFY2(std::string(e.what()).find("is a FIFO (named pipe), not a regular file") !=
                             std::string::npos,
                         e.what());
            }
        }
        QVERIFY(timer.elapsed() < 2000);
        const std::string big = file(m_dir, "big.json");
        QVERIFY(writeAll(QString::fromStdString(big), QByteArray(5000, 'x')));
        QVERIFY_THROWS_EXCEPTION(IoError, readSmallFile(big, 4096));
        QVERIFY_THROWS_EXCEPTION(IoError, readSmallFile("/dev/zero", 4096));
    }

    // Cache entries are checked: a FIFO in an entry's place, an edited value (with or without
    // a matching checksum) are reported as damaged and measured afresh, never served.
    void damagedCacheEntries_data() {
        QTest::addColumn<QString>("damage");
        QTest::addColumn<QString>("said");
        QTest::newRow("fifo") << QStringLiteral("fifo")
                              << QStringLiteral("is a FIFO (named pipe), not a regular file");
        QTest::newRow("edited H") << QStringLiteral("edit-H") << QStringLiteral("checksum does not match");
        QTest::newRow("edited H, checksum fixed")
            << QStringLiteral("edit-H-checksum") << QStringLiteral("do not follow from H, K and C");
        QTest::newRow("huge K, checksum fixed")
            << QStringLiteral("huge-K-checksum") << QStringLiteral("do not follow from H, K and C");
    }
    void damagedCacheEntries() {
        QFETCH(QString, damage);
        QFETCH(QString, said);
        const std::string folder = file(m_dir, "cache-") + damage.toStdString();
        const MeasurementCache cache(folder);
        GgufWriteSpec spec = smallModel();
        spec.tensors.push_back(uniformTensor("spread.weight"));
        const std::string path = file(m_dir, "cached.gguf");
        QVERIFY(writeGguf(path, spec).isOk());
        MeasuredModel m;
        m.model = GgufModel::open(path);
        m.anatomy = analyzeAnatomy(*m.model);
        QVERIFY(measureModel(*m.model, m.anatomy, {}, m.measurement).isOk());
        QVERIFY(cache.store(m));
        const std::string entry = folder + "/" + cache.keyFor(*m.model, ZParams{}) + ".json";
        if (damage == QStringLiteral("fifo")) {
            QVERIFY(::unlink(entry.c_str()) == 0 && ::mkfifo(entry.c_str(), 0644) == 0);
        } else {
            auto json = nlohmann::json::parse(readSmallFile(entry, 1u << 24));
            // A tensor whose H decides its score (H > 0.5): an edit there changes what θ should be.
            auto& tensors = json["measurement"]["tensors"];
            std::size_t which = 0;
            for (std::size_t i = 0; i < tensors.size(); ++i) {
                if (tensors[i]["H"].is_number() && tensors[i]["H"].get<double>() > 0.6) {
                    which = i;
                }
            }
            QVERIFY(tensors[which]["H"].get<double>() > 0.6);
            auto& tensor = tensors[which];
            if (damage.startsWith(QStringLiteral("edit-H"))) {
                tensor["H"] = tensor["H"].get<double>() * 0.2; // 0.87 → 0.17, in range
            } else {
                tensor["K"] = 1e308;
            }
            if (damage.endsWith(QStringLiteral("checksum"))) {
                const std::string text = dumpJson(json["measurement"]);
                json["checksum"] = Sha256::hex(std::as_bytes(std::span(text.data(), text.size())));
            }
            std::ofstream(entry) << json.dump();
        }
        MeasuredModel again;
        again.model = m.model;
        again.anatomy = m.anatomy;
        std::string warning;
        QElapsedTimer timer;
        timer.start();
        QVERIFY(!cache.load(again, ZParams{}, &warning));
        QVERIFY(timer.elapsed() < 2000);
        QVERIFY2(QString::fromStdString(warning).contains(said), warning.c_str());
        QVERIFY(warning.find("is damaged") != std::string::npos);
        // Measured afresh, the entry is replaced and served again.
        QVERIFY(cache.store(m));
        QVERIFY(cache.load(again, ZParams{}, &warning));
    }

    // A declared block count of a million or two billion: one finding, at once, in bounded memory.
    void declaredBlockCounts_data() {
        QTest::addColumn<quint32>("blocks");
        QTest::newRow("a million") << quint32(1000000);
        QTest::newRow("2^31") << quint32(1u << 31);
    }
    void declaredBlockCounts() {
        QFETCH(quint32, blocks);
        GgufWriteSpec spec = smallModel();
        spec.set("llama.block_count", MetaValue::fromU32(blocks));
        const std::string path = file(m_dir, "blocks.gguf");
        QVERIFY(writeGguf(path, spec).isOk());
        const auto model = GgufModel::open(path);
        QElapsedTimer timer;
        timer.start();
        resetPeakAllocation();
        const auto findings = validateModel(*model);
        QVERIFY2(peakAllocationSinceReset() < (4u << 20),
                 qPrintable(QString::number(peakAllocationSinceReset())));
        QVERIFY(timer.elapsed() < 2000);
        QVERIFY(findings.size() <= 4); // missing blocks, more than 512, per-layer key lengths at most
        bool said = false;
        for (const auto& f : findings) {
            said |= f.message.find("blocks 1–" + std::to_string(blocks - 1) + " have no tensors") !=
                    std::string::npos;
        }
        QVERIFY(said);
    }

    // Findings of one kind are capped, with how many more there were.
    void findingsAreCapped() {
        GgufWriteSpec spec = hostileModelSpec(1, false);
        for (int k = 0; k < 61; ++k) {
            spec.tensors.push_back(
                patternTensor("mystery." + std::to_string(k) + ".weight", TensorType::F32, {4}, 1));
        }
        const std::string path = file(m_dir, "mystery.gguf");
        QVERIFY(writeGguf(path, spec).isOk());
        const auto findings = validateModel(*GgufModel::open(path));
        int unknown = 0;
        bool more = false;
        for (const auto& f : findings) {
            unknown += f.message.starts_with("llama.cpp does not load mystery.");
            more |= f.message.find("and 41 more finding(s) like the above") != std::string::npos;
        }
        QCOMPARE(unknown, 20); // 61 tensors llama.cpp does not load: 20 listed, 41 counted
        QVERIFY(more);
    }

    // A layer number in a name is not a size: "blk.4000000000.x" is not a layer.
    void hugeLayerNumbers() {
        GgufWriteSpec spec = smallModel();
        spec.tensors.push_back(patternTensor("blk.4000000000.attn_q.weight", TensorType::F32, {4}, 1));
        spec.tensors.push_back(patternTensor("blk.65536.attn_k.weight", TensorType::F32, {4}, 1));
        const std::string path = file(m_dir, "layers.gguf");
        QVERIFY(writeGguf(path, spec).isOk());
        resetPeakAllocation();
        const auto model = GgufModel::open(path);
        const ModelAnatomy anatomy = analyzeAnatomy(*model);
        validateModel(*model);
        QVERIFY(peakAllocationSinceReset() < (4u << 20));
        QCOMPARE(anatomy.layerCount(), 1u);
        QVERIFY(!classifyTensor("blk.4000000000.attn_q.weight").layer);
        QCOMPARE(classifyTensor("blk.65535.attn_q.weight").layer, std::optional<std::uint32_t>(65535));
    }

    // What a plan declares is capped too: alignment, stack runs, layers, operations.
    void planLimits() {
        const std::string base = writeModel("plan-base.gguf");
        GraftPlan plan;
        plan.base = base;
        GraftOperation align;
        align.kind = GraftOperation::Kind::SetMetadata;
        align.key = "general.alignment";
        align.value = MetaValue::fromU32(1u << 28);
        plan.operations.push_back(align);
        const GraftModels models = GraftModels::open(plan);
        auto errors = [](const CompatibilityReport& r) {
            std::string all;
            for (const auto& f : r.findings) {
                all += f.message + "\n";
            }
            return all;
        };
        std::string found = errors(checkGraft(plan, models));
        QVERIFY2(found.find("general.alignment must be a u32 power of two of at most 65536") !=
                     std::string::npos,
                 found.c_str());
        // The writer refuses it too, before any padding is made.
        GgufWriteSpec spec = smallModel();
        spec.set("general.alignment", MetaValue::fromU32(1u << 28));
        resetPeakAllocation();
        const JobResult written = writeGguf(file(m_dir, "aligned.gguf"), spec);
        QVERIFY(!written.isOk());
        QVERIFY(peakAllocationSinceReset() < (4u << 20));
        // A stack of a hundred thousand runs is refused when the plan is read.
        std::string json =
            R"({"format":"organ-graft-plan","version":1,"base":"b.gguf","donors":{},"operations":[{"op":"stack_layers","stack":[)";
        for (int k = 0; k < 100000; ++k) {
            json += std::string(k ? "," : "") + R"({"model":"base","layers":"0"})";
        }
        json += "]}]}";
        const std::string planPath = file(m_dir, "stack.json");
        QVERIFY(writeAll(QString::fromStdString(planPath), QByteArray::fromStdString(json)));
        QElapsedTimer timer;
        timer.start();
        try {
            loadGraftPlan(planPath);
            QFAIL("a stack of 100 000 runs was read");
        } catch (const FormatError& e) {
            QVERIFY2(std::string(e.what()).find("more than the 1024 a plan may stack") != std::string::npos,
                     e.what());
        }
        QVERIFY(timer.elapsed() < 5000);
        // A run of four billion layers is refused before any is built.
        GraftPlan huge;
        huge.base = base;
        GraftOperation stack;
        stack.kind = GraftOperation::Kind::StackLayers;
        stack.stack.push_back({"base", 0, 4294967295u});
        huge.operations.push_back(stack);
        timer.restart();
        found = errors(checkGraft(huge, GraftModels::open(huge)));
        QVERIFY(found.find("more than the 4096 a chimera may have") != std::string::npos);
        QVERIFY(timer.elapsed() < 2000);
    }
};

QTEST_APPLESS_MAIN(TestHostile)
#include "tst_hostile.moc"
