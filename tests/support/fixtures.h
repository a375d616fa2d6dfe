#pragma once

#include "gguf_writer.h"

#include <QByteArray>
#include <QString>
#include <string>
#include <vector>

namespace organ::testing {

// A tensor whose bytes are a pattern derived from its index, in a buffer it owns.
TensorToWrite patternTensor(const std::string& name, TensorType type, std::vector<std::uint64_t> dims,
                            std::uint8_t seed);

// Writes the spec with the project's writer; fails the test with the writer's message.
bool writeFixture(const QString& path, const GgufWriteSpec& spec);

QByteArray readAll(const QString& path);
bool writeAll(const QString& path, const QByteArray& bytes);

} // namespace organ::testing
