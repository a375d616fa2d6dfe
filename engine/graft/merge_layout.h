#pragma once

#include "graft/graft_check.h"
#include "merge/merge_parameter.h"

#include <memory>
#include <optional>
#include <string>

namespace organ {

// The merge of one chimera tensor, resolved before anything is written: the tensor of the name
// its bytes came from (`tensor`) in the merge's base and models, and its parameters at `place`.
struct MergeResolution {
    std::shared_ptr<const ChimeraMerge> merge; // null: not merged
    // A model lacks the tensor or has another shape: it is kept as it stands (the spec takes it from
    // the base), and the report names it.
    bool keptAsItStands = false;
    std::string keptBecause;          // "b.gguf has it 64 × 128, the base 64 × 176", "b.gguf lacks it"
    std::optional<std::string> error; // a vocabulary that differs, a parameter that is missing
};
MergeResolution resolveMerge(const MergeSpec& spec, const GraftModels& models, const std::string& tensor,
                             const TensorPlace& place, const TensorInfo& expected);

// "merge (ties): 57 tensors from base.gguf, farm.gguf and sea.gguf": the models named by their files.
std::string mergeSummary(const MergeSpec& spec, const GraftModels& models, std::size_t tensors);

} // namespace organ
