#pragma once

#include "gguf/gguf_writer.h"
#include "graft/graft_check.h"

namespace organ {

// The chimera's metadata (the base's, layer-indexed keys rewritten, the plan's set and
// remove, block_count, provenance under organ.graft.) and tensors. withSources = false: the
// tensors' shapes and types only, for checking the chimera before anything is written.
GgufWriteSpec chimeraSpec(const GraftPlan& plan, const GraftModels& models, const ChimeraLayout& layout,
                          bool withSources);

} // namespace organ
