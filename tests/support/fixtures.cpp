#include "fixtures.h"

#include <QFile>
#include <QTest>
#include <memory>

namespace organ::testing {

TensorToWrite patternTensor(const std::string& name, TensorType type, std::vector<std::uint64_t> dims,
                            std::uint8_t seed) {
    TensorToWrite t;
    t.name = name;
    t.type = type;
    t.nDims = static_cast<std::uint32_t>(dims.size());
    std::uint64_t elements = 1;
    for (std::size_t d = 0; d < dims.size(); ++d) {
        t.ne[d] = dims[d];
        elements *= dims[d];
    }
    const auto& traits = traitsOf(type);
    auto buffer =
        std::make_shared<std::vector<std::byte>>(elements / traits.blockSize * traits.bytesPerBlock);
    for (std::size_t i = 0; i < buffer->size(); ++i) {
        // Small values: valid as floats of every width, never NaN patterns in F16/F32.
        (*buffer)[i] = static_cast<std::byte>((i * 7 + seed) % 61);
    }
    t.source.bytes = *buffer;
    t.source.owner = buffer;
    return t;
}

bool writeFixture(const QString& path, const GgufWriteSpec& spec) {
    const JobResult result = writeGguf(path.toStdString(), spec);
    if (!result.isOk()) {
        qWarning("fixture %s: %s", qPrintable(path), result.message.c_str());
    }
    return result.isOk();
}

QByteArray readAll(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

bool writeAll(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly | QIODevice::Truncate) && file.write(bytes) == bytes.size();
}

} // namespace organ::testing
