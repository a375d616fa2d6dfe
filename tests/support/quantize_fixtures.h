#pragma once

// What llama-quantize wrote for the shared models, as tests/tools/quantize_fixtures.py recorded
// it in tests/data/quantize: per tensor its type, block count and the SHA-256 of its bytes.
#include "gguf/gguf_file.h"
#include "support/sha256.h"

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QString>
#include <QStringList>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

namespace organ::testing {

struct ExpectedTensor {
    std::string name;
    TensorType type = TensorType::F32;
    std::uint64_t blocks = 0;
    std::string sha256;
};

struct QuantizeFixture {
    QString name;    // "family-base-f16.q4_k.imatrix"
    QString command; // the llama-quantize command that made it
    std::vector<ExpectedTensor> tensors;
};

inline QString quantizeFixtureDir() {
    return QStringLiteral(ORGAN_SOURCE_DIR "/tests/data/quantize");
}

// The fixture files whose names start with `prefix`, sorted.
inline QStringList quantizeFixtureNames(const QString& prefix) {
    QStringList names;
    const QStringList files =
        QDir(quantizeFixtureDir()).entryList({prefix + QStringLiteral("*.tsv")}, QDir::Files, QDir::Name);
    for (const QString& file : files) {
        names << file.chopped(4);
    }
    return names;
}

inline std::optional<QuantizeFixture> readQuantizeFixture(const QString& name) {
    QFile file(quantizeFixtureDir() + QLatin1Char('/') + name + QStringLiteral(".tsv"));
    if (!file.open(QIODevice::ReadOnly)) {
        return std::nullopt;
    }
    QuantizeFixture fixture;
    fixture.name = name;
    for (const QByteArray& line : file.readAll().split('\n')) {
        if (line.startsWith("# ")) {
            fixture.command = QString::fromUtf8(line.mid(2));
            continue;
        }
        const QList<QByteArray> fields = line.split('\t');
        if (fields.size() != 4) {
            continue;
        }
        const auto type = tensorTypeFromName(fields[1].toStdString());
        if (!type) {
            return std::nullopt;
        }
        fixture.tensors.push_back(
            {fields[0].toStdString(), *type, fields[2].toULongLong(), fields[3].toStdString()});
    }
    return fixture;
}

// Where llama-quantize's own outputs for the fixtures may be kept (they are never committed):
// with them at hand a failing comparison names the first block that differs.
inline QString quantizeReferenceOutput(const QString& fixture) {
    const QByteArray dir = qgetenv("ORGAN_QUANTIZE_REFERENCE_DIR");
    const QString path = QString::fromLocal8Bit(dir) + QLatin1Char('/') + fixture + QStringLiteral(".gguf");
    return !dir.isEmpty() && QFile::exists(path) ? path : QString();
}

// "first at block N, K of M blocks differ" for two encodings of one tensor of equal size.
inline QString blockMismatch(std::span<const std::byte> ours, std::span<const std::byte> theirs,
                             std::size_t blockBytes) {
    std::int64_t first = -1;
    std::uint64_t differing = 0;
    for (std::size_t b = 0; b * blockBytes < ours.size(); ++b) {
        if (std::memcmp(ours.data() + b * blockBytes, theirs.data() + b * blockBytes, blockBytes) != 0) {
            first = first < 0 ? std::int64_t(b) : first;
            ++differing;
        }
    }
    if (differing == 0) {
        return QStringLiteral(
            "no block differs from the output at hand: it is not the one the fixture was made from");
    }
    return QStringLiteral("first at block %1, %2 of %3 blocks differ")
        .arg(first)
        .arg(differing)
        .arg(ours.size() / blockBytes);
}

// "tensor T (TYPE): …" for bytes whose SHA-256 is not the fixture's: the first block that
// differs and how many do when llama-quantize's output is at hand, else how to find them.
inline QString quantizeMismatch(const QString& fixture, const ExpectedTensor& expected,
                                std::span<const std::byte> ours) {
    QString text = QString::fromStdString(expected.name) + QStringLiteral(" (") +
                   QString::fromUtf8(tensorTypeName(expected.type).data()) +
                   QStringLiteral(") differs from llama-quantize's (") + fixture + QStringLiteral(")");
    const QString reference = quantizeReferenceOutput(fixture);
    if (reference.isEmpty()) {
        return text + QStringLiteral("; set ORGAN_QUANTIZE_REFERENCE_DIR to llama-quantize's outputs "
                                     "(tests/tools/quantize_fixtures.py --scratch) to name the block");
    }
    const auto file = GgufFile::open(reference.toStdString());
    const TensorInfo* t = file->findTensor(expected.name);
    if (t == nullptr || t->bytes != ours.size()) {
        return text + QStringLiteral("; its size differs too");
    }
    return text + QStringLiteral(": ") +
           blockMismatch(ours, file->tensorData(*t), traitsOf(expected.type).bytesPerBlock);
}

} // namespace organ::testing
