#pragma once

#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"
#include "graft/graft_plan.h"

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

// A llama model of 5 layers written with per-layer arrays: feed_forward_length (`width`) and
// the head counts (4) are arrays of one number per layer (llama.cpp sizes every block by
// block 0's, so they are equal), and llama.attention.sliding_window_pattern is a bool array
// (`flags`) that differs from layer to layer. Embedding 16, 32 tokens, F32.
GgufWriteSpec perLayerLlama(std::uint8_t seed, std::vector<bool> flags = {true, false, true, false, true},
                            std::uint32_t width = 16);

// A plan that replaces the `select`ed tensors of `base` with those of `donor` (named
// "healthy": the shared graft pair heals stories260K-damaged from stories260K).
GraftPlan replacePlan(const QString& base, const QString& donor, const TensorSelector& select);
// The organs (FFN) of layers first … last.
TensorSelector organsOfLayers(std::uint32_t first, std::uint32_t last);

// Writes the GGUF at `source` as a split set of `parts` files (PREFIX-0000k-of-0000N.gguf), as
// llama.cpp's gguf-split does: the first part keeps every metadata key, each part gets split.no,
// split.count and split.tensors.count, the tensors are spread in order. Returns the parts' paths.
QStringList writeSplitFixture(const QString& source, const QString& prefix, unsigned parts);

// `model` taken apart into the organ directory `directory`; false (said) when it cannot be.
bool extractFixture(const QString& model, const QString& directory);

// Every file under `folder` (names and bytes): what "unchanged" means for a directory.
QByteArray folderDigest(const QString& folder);
// The id of a process that has exited and been reaped: what a killed run's partials carry.
qint64 exitedProcess();

// A tensor's values as floats, decoded from whatever type it has.
std::vector<float> tensorValues(const GgufModel& model, const std::string& name);

QByteArray readAll(const QString& path);
bool writeAll(const QString& path, const QByteArray& bytes);

} // namespace organ::testing
