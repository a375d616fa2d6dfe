#pragma once

#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"

#include <vector>

namespace organ {

// The bytes of `tensor` of `model` decoded and encoded again as `target` (canQuantizeTo), made
// as the writer reads them: whole rows, a bounded batch at a time, split across `threads`
// threads (0: one per core). `importance`: an importance matrix's weights for this tensor (ne[0]
// per expert, one expert after another) or empty. The same bytes as quantizeRows() over the whole
// tensor, which are llama-quantize's. The source keeps the model's mapping, not the model.
TensorSource quantizedSource(const GgufModel& model, const TensorInfo& tensor, TensorType target,
                             std::vector<float> importance = {}, unsigned threads = 0);

} // namespace organ
