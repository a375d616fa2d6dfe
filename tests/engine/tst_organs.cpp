// Organ directories: every shared model taken apart and put back byte for byte; every value
// type of the metadata kept exactly; damaged files and manifests refused by name; extraction
// all or nothing.
#include "fixtures.h"
#include "organs/organ_directory.h"
#include "shared_models.h"
#include "support/errors.h"
#include "support/sha256.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

using namespace organ;
using namespace organ::testing;

namespace {

// What OrganDirectory::open or assembleOrgans says about a directory, "" when it assembles
// (whether llama.cpp would load the result or not: these models are made to hold values).
QString assembleError(const QString& directory, const QString& output) {
    try {
        const OrganDirectory organs = OrganDirectory::open(directory.toStdString());
        const JobResult done = assembleOrgans(organs, output.toStdString(), true);
        return done.isOk() ? QString() : QString::fromStdString(done.message);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
}

nlohmann::json readManifest(const QString& directory) {
    return nlohmann::json::parse(readAll(directory + QStringLiteral("/manifest.json")).toStdString());
}

void writeManifest(const QString& directory, const nlohmann::json& manifest) {
    QVERIFY(
        writeAll(directory + QStringLiteral("/manifest.json"), QByteArray::fromStdString(manifest.dump(1))));
}

} // namespace

class TestOrgans : public QObject {
    Q_OBJECT

private slots:
    void init() { QVERIFY(m_dir.isValid()); }

    // Extract → assemble gives the very bytes back for every v3 file of ../shared/models (and a
    // v3 file with the same tensors for the v1 one).
    void roundTripEverySharedModel() {
        const QStringList files = sharedGgufFiles();
        if (files.isEmpty()) {
            ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        }
        int identical = 0;
        for (const QString& file : files) {
            const auto model = GgufModel::open(file.toStdString());
            const QString name = QFileInfo(file).completeBaseName();
            const QString directory = m_dir.filePath(name);
            const JobResult extracted = extractOrgans(*model, directory.toStdString());
            QVERIFY2(extracted.isOk(), qPrintable(name + u": " + QString::fromStdString(extracted.message)));
            const QString back = m_dir.filePath(name + QStringLiteral(".gguf"));
            QCOMPARE(assembleError(directory, back), QString());
            if (model->primary().version() == 3) {
                QVERIFY2(readAll(back) == readAll(file), qPrintable(name + u" is not byte-identical"));
                ++identical;
            } else {
                const auto again = GgufModel::open(back.toStdString());
                QCOMPARE(again->primary().version(), 3u);
                QCOMPARE(again->tensors().size(), model->tensors().size());
                for (const TensorInfo& t : model->tensors()) {
                    const TensorInfo* u = again->findTensor(t.name);
                    QVERIFY(u != nullptr);
                    QVERIFY(std::ranges::equal(again->tensorData(*u), model->tensorData(t)));
                }
            }
            QDir(directory).removeRecursively();
            QFile::remove(back);
        }
        qInfo("%d files byte-identical after extract → assemble", identical);
        QVERIFY(identical >= 40);
    }

    // Every value type, non-finite floats, strings and keys that are not UTF-8, nested and
    // empty arrays: the manifest keeps them exactly.
    void metadataKeepsEveryValue() {
        GgufWriteSpec spec;
        spec.set("general.architecture", MetaValue::fromString("llama"));
        spec.set("t.u8", MetaValue::fromU8(255));
        spec.set("t.i8", MetaValue::fromI8(-128));
        spec.set("t.u16", MetaValue::fromU16(65535));
        spec.set("t.i16", MetaValue::fromI16(-32768));
        spec.set("t.u32", MetaValue::fromU32(4294967295u));
        spec.set("t.i32", MetaValue::fromI32(-2147483647 - 1));
        spec.set("t.u64", MetaValue::fromU64(18446744073709551615ull));
        spec.set("t.i64", MetaValue::fromI64(std::numeric_limits<std::int64_t>::min()));
        spec.set("t.f32", MetaValue::fromF32(0.1f));
        spec.set("t.f32nan", MetaValue::fromF32(std::numeric_limits<float>::quiet_NaN()));
        spec.set("t.f32inf", MetaValue::fromF32(-std::numeric_limits<float>::infinity()));
        spec.set("t.f64", MetaValue::fromF64(1.0 / 3.0));
        spec.set("t.f64nan", MetaValue::fromF64(std::nan("7")));
        spec.set("t.bool", MetaValue::fromBool(true));
        spec.set("t.bytes", MetaValue::fromString(std::string("\xff\xfe\x00ok", 5)));
        // Shaped like UTF-8 but not UTF-8: an overlong NUL and a surrogate.
        spec.set("t.overlong", MetaValue::fromString("\xc0\x80"));
        spec.set("t.surrogate", MetaValue::fromString("\xed\xa0\x80"));
        spec.set(std::string("t.key\xff", 6), MetaValue::fromString("the key is not UTF-8"));
        spec.set("t.empty", MetaValue::fromArray(ValueType::U32, {}));
        spec.set("t.nested", MetaValue::fromArray(ValueType::Array, {MetaValue::fromStrings({"a", "b"}),
                                                                     MetaValue::fromStrings({"\xc3"})}));
        spec.tensors.push_back(patternTensor("blk.0.ffn_up.weight", TensorType::F32, {8, 4}, 1));
        spec.tensors.push_back(patternTensor("strange/name?.weight", TensorType::F16, {8}, 2));
        const QString file = m_dir.filePath(QStringLiteral("values.gguf"));
        QVERIFY(writeFixture(file, spec));
        const QString directory = m_dir.filePath(QStringLiteral("values"));
        QVERIFY(extractOrgans(*GgufModel::open(file.toStdString()), directory.toStdString()).isOk());
        QVERIFY(QFileInfo::exists(directory + QStringLiteral("/organs/blk_0_ffn_up.bin")));
        QVERIFY(QFileInfo::exists(directory + QStringLiteral("/other/strange_name_.bin")));
        const QString back = m_dir.filePath(QStringLiteral("values-back.gguf"));
        QCOMPARE(assembleError(directory, back), QString());
        QVERIFY(readAll(back) == readAll(file));
    }

    // The digest every organ is checked with: FIPS 180-4's answers, fed whole and in odd
    // pieces (the buffered path and the whole-block path, in hardware where the CPU has it).
    void sha256KnownAnswers() {
        auto hex = [](const std::string& s) {
            return Sha256::hex(std::as_bytes(std::span(s.data(), s.size())));
        };
        QCOMPARE(hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        QCOMPARE(hex("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        const std::string million(1000000, 'a');
        QCOMPARE(hex(million),
                 std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
        Sha256 pieces;
        for (std::size_t at = 0, step = 1; at < million.size(); at += step, step = step * 3 % 1000 + 1) {
            const std::size_t n = std::min(step, million.size() - at);
            pieces.update(std::as_bytes(std::span(million.data() + at, n)));
        }
        const auto digest = pieces.finish();
        std::string piecesHex;
        for (const std::uint8_t b : digest) {
            piecesHex += QByteArray::number(b, 16).rightJustified(2, '0').toStdString();
        }
        QCOMPARE(piecesHex, hex(million));
    }

    void fileNamesAreSafeAndUnique() {
        std::vector<std::string> taken;
        QCOMPARE(organFileName("blk.0.ffn_gate.weight", taken), std::string("blk_0_ffn_gate.bin"));
        QCOMPARE(organFileName("blk.0.attn_q.bias", taken), std::string("blk_0_attn_q_bias.bin"));
        QCOMPARE(organFileName("../../etc/passwd", taken), std::string("______etc_passwd.bin"));
        // Unique even where case does not count.
        QCOMPARE(organFileName("A.weight", taken), std::string("A.bin"));
        QCOMPARE(organFileName("a.weight", taken), std::string("a-2.bin"));
        QCOMPARE(organFileName("a?weight", taken), std::string("a_weight.bin"));
        QCOMPARE(organFolder(System::Organ), std::string("organs"));
        QCOMPARE(organFolder(System::Adapter), std::string("adapters"));
    }

    // A damaged tensor file or manifest is refused with the name of what is wrong; nothing is
    // written.
    void damageIsNamed_data() {
        QTest::addColumn<QString>("damage");
        QTest::addColumn<QString>("message");
        QTest::newRow("data byte")
            << QStringLiteral("data")
            << QStringLiteral("organs/blk_0_ffn_up.bin: its data does not match the manifest's SHA-256");
        QTest::newRow("header dtype") << QStringLiteral("header")
                                      << QStringLiteral("organs/blk_0_ffn_up.bin: its header does not match");
        QTest::newRow("truncated") << QStringLiteral("truncate")
                                   << QStringLiteral("organs/blk_0_ffn_up.bin is 99 bytes, expected");
        QTest::newRow("missing file")
            << QStringLiteral("remove") << QStringLiteral("organs/blk_0_ffn_up.bin is missing");
        QTest::newRow("link") << QStringLiteral("link")
                              << QStringLiteral(
                                     "organs/blk_0_ffn_up.bin leads through a link (a linked file or "
                                     "sub-folder is never followed out of organs-link)");
        QTest::newRow("not JSON") << QStringLiteral("json") << QStringLiteral("manifest.json: not JSON");
        QTest::newRow("format") << QStringLiteral("format")
                                << QStringLiteral("\"format\" is not \"organ-directory\"");
        QTest::newRow("path escapes")
            << QStringLiteral("path") << QStringLiteral("is not a plain path inside the directory");
        QTest::newRow("dtype") << QStringLiteral("dtype") << QStringLiteral("unknown dtype 'Q9_9'");
        QTest::newRow("bytes") << QStringLiteral("bytes")
                               << QStringLiteral("bytes do not fit the shape and dtype");
        QTest::newRow("twice") << QStringLiteral("twice") << QStringLiteral("is listed twice");
        QTest::newRow("metadata type")
            << QStringLiteral("u8") << QStringLiteral("metadata[1] (t.u8): out of range for u8");
        QTest::newRow("no manifest") << QStringLiteral("nomanifest") << QStringLiteral("no manifest.json");
    }

    void damageIsNamed() {
        QFETCH(QString, damage);
        QFETCH(QString, message);
        GgufWriteSpec spec;
        spec.set("general.architecture", MetaValue::fromString("llama"));
        spec.set("t.u8", MetaValue::fromU8(7));
        spec.tensors.push_back(patternTensor("blk.0.ffn_up.weight", TensorType::F32, {8, 4}, 1));
        spec.tensors.push_back(patternTensor("blk.0.ffn_down.weight", TensorType::F32, {4, 8}, 2));
        const QString file = m_dir.filePath(QStringLiteral("model.gguf"));
        QVERIFY(writeFixture(file, spec));
        const QString directory = m_dir.filePath(QStringLiteral("organs-") + damage);
        QVERIFY(extractOrgans(*GgufModel::open(file.toStdString()), directory.toStdString()).isOk());
        const QString tensor = directory + QStringLiteral("/organs/blk_0_ffn_up.bin");
        nlohmann::json manifest = readManifest(directory);
        if (damage == QStringLiteral("data") || damage == QStringLiteral("header")) {
            QByteArray bytes = readAll(tensor);
            const qsizetype at = damage == QStringLiteral("data") ? bytes.size() - 1 : bytes.size() - 128 - 4;
            bytes[at] = char(bytes[at] ^ 1);
            QVERIFY(writeAll(tensor, bytes));
        } else if (damage == QStringLiteral("truncate")) {
            QVERIFY(writeAll(tensor, readAll(tensor).left(99)));
        } else if (damage == QStringLiteral("remove")) {
            QVERIFY(QFile::remove(tensor));
        } else if (damage == QStringLiteral("link")) {
            QVERIFY(QFile::rename(tensor, tensor + QStringLiteral(".real")));
            std::filesystem::create_symlink(QString(tensor + QStringLiteral(".real")).toStdString(),
                                            tensor.toStdString());
        } else if (damage == QStringLiteral("json")) {
            QVERIFY(writeAll(directory + QStringLiteral("/manifest.json"), "{\"format\": "));
        } else if (damage == QStringLiteral("format")) {
            manifest["format"] = "something-else";
            writeManifest(directory, manifest);
        } else if (damage == QStringLiteral("path")) {
            manifest["tensors"][0]["file"] = "../model.gguf";
            writeManifest(directory, manifest);
        } else if (damage == QStringLiteral("dtype")) {
            manifest["tensors"][0]["dtype"] = "Q9_9";
            writeManifest(directory, manifest);
        } else if (damage == QStringLiteral("bytes")) {
            manifest["tensors"][0]["bytes"] = 12;
            writeManifest(directory, manifest);
        } else if (damage == QStringLiteral("twice")) {
            manifest["tensors"][1]["name"] = manifest["tensors"][0]["name"];
            writeManifest(directory, manifest);
        } else if (damage == QStringLiteral("u8")) {
            manifest["metadata"][1]["value"] = 300;
            writeManifest(directory, manifest);
        } else if (damage == QStringLiteral("nomanifest")) {
            QVERIFY(QFile::remove(directory + QStringLiteral("/manifest.json")));
        }
        const QString out = m_dir.filePath(QStringLiteral("out-") + damage + QStringLiteral(".gguf"));
        const QString error = assembleError(directory, out);
        QVERIFY2(error.contains(message), qPrintable(error));
        QVERIFY(error.contains(QFileInfo(directory).fileName()));
        QVERIFY(!QFileInfo::exists(out));
    }

    // All or nothing: an existing target is refused, a cancelled extraction leaves nothing, not
    // even its partial directory.
    void extractionIsAtomic() {
        const QString file = m_dir.filePath(QStringLiteral("atomic.gguf"));
        GgufWriteSpec spec;
        spec.set("general.architecture", MetaValue::fromString("llama"));
        spec.tensors.push_back(patternTensor("blk.0.ffn_up.weight", TensorType::F32, {8, 4}, 1));
        QVERIFY(writeFixture(file, spec));
        const auto model = GgufModel::open(file.toStdString());
        const QString existing = m_dir.filePath(QStringLiteral("existing"));
        QVERIFY(QDir().mkdir(existing));
        const JobResult refused = extractOrgans(*model, existing.toStdString());
        QVERIFY(!refused.isOk());
        QVERIFY2(QString::fromStdString(refused.message).contains(QStringLiteral("existing: already exists")),
                 refused.message.c_str());
        StopToken stop;
        stop.requestStop();
        const QString cancelled = m_dir.filePath(QStringLiteral("cancelled"));
        QCOMPARE(extractOrgans(*model, cancelled.toStdString(), nullptr, {}, &stop).status,
                 JobResult::Status::Cancelled);
        QVERIFY(!QFileInfo::exists(cancelled));
        const QStringList left =
            QDir(m_dir.path()).entryList({QStringLiteral("*partial*")}, QDir::AllEntries);
        QVERIFY2(left.isEmpty(), qPrintable(left.join(u' ')));
        QVERIFY(!OrganDirectory::looksLikeOne(cancelled.toStdString()));
        const QString done = m_dir.filePath(QStringLiteral("done"));
        QVERIFY(extractOrgans(*model, done.toStdString()).isOk());
        QVERIFY(OrganDirectory::looksLikeOne(done.toStdString()));
        QVERIFY(!OrganDirectory::looksLikeOne(file.toStdString()));
    }

    // A split model becomes one directory and then one file, without its split keys.
    void splitModelsBecomeOne() {
        const std::string prefix = m_dir.filePath(QStringLiteral("split")).toStdString();
        for (std::uint16_t part = 0; part < 2; ++part) {
            GgufWriteSpec spec;
            if (part == 0) {
                spec.set("general.architecture", MetaValue::fromString("llama"));
            }
            spec.set("split.no", MetaValue::fromU16(part));
            spec.set("split.count", MetaValue::fromU16(2));
            spec.set("split.tensors.count", MetaValue::fromI32(4));
            for (int i = 0; i < 2; ++i) {
                spec.tensors.push_back(
                    patternTensor("blk." + std::to_string(part) + ".ffn_up.weight" + std::to_string(i),
                                  TensorType::F32, {8, 2}, std::uint8_t(part * 2 + i)));
            }
            QVERIFY(writeFixture(QString::fromStdString(splitPartPath(prefix, part + 1, 2)), spec));
        }
        const auto model = GgufModel::open(splitPartPath(prefix, 2, 2));
        QCOMPARE(model->shards().size(), std::size_t(2));
        const QString directory = m_dir.filePath(QStringLiteral("split-organs"));
        QVERIFY(extractOrgans(*model, directory.toStdString()).isOk());
        const QString back = m_dir.filePath(QStringLiteral("joined.gguf"));
        QCOMPARE(assembleError(directory, back), QString());
        const auto joined = GgufModel::open(back.toStdString());
        QCOMPARE(joined->shards().size(), std::size_t(1));
        QVERIFY(joined->find("split.count") == nullptr);
        QCOMPARE(joined->tensors().size(), std::size_t(4));
        for (const TensorInfo& t : model->tensors()) {
            QVERIFY(
                std::ranges::equal(joined->tensorData(*joined->findTensor(t.name)), model->tensorData(t)));
        }
    }

private:
    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestOrgans)
#include "tst_organs.moc"
