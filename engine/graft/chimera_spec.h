#pragma once

#include "gguf/gguf_writer.h"
#include "graft/graft_check.h"
#include "purify/purify_model.h"

#include <memory>

namespace organ {

// How the tensors' bytes of a chimera's spec will be read.
enum class ChimeraSources {
    None,   // not at all: shapes and types only, for checking before anything is written
    Writer, // once, in order: a purified tensor is dropped after its last byte
    Reader, // again and again (the vital signs): a purified tensor is kept while the spec lives
};

// The chimera's metadata (the base's, layer-indexed keys rewritten, the plan's set and
// remove, block_count, provenance under organ.graft., organ.purify.* when it purifies) and
// tensors. What purifying did goes to `log` when given, as the tensors are made.
GgufWriteSpec chimeraSpec(const GraftPlan& plan, const GraftModels& models, const ChimeraLayout& layout,
                          ChimeraSources sources, std::shared_ptr<PurifyLog> log = {});

} // namespace organ
