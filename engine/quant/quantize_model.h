#pragma once

#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"
#include "quant/imatrix_file.h"
#include "quant/quant_mix.h"
#include "support/job.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace organ {

// One tensor of a quantized model: whether it was converted and importance weights shaped its
// bytes, its type before and after.
struct QuantizedTensor {
    std::string name;
    bool converted = false;
    bool weighted = false;
    TensorType from = TensorType::F32;
    TensorType to = TensorType::F32;
};

// What quantizing a model would write, before a byte is: the spec (tensors in llama-quantize's
// order, sources that encode as the writer reads) and what to tell the user.
struct QuantizePlan {
    GgufWriteSpec spec;
    std::vector<QuantizedTensor> tensors;
    std::vector<std::string> notes; // requantized inputs, fallbacks, tensors the matrix lacks
};

// The importance weights llama-quantize takes for `tensor` from `matrix` (read from `file`):
// ne[0] per expert, or none when the matrix lacks the tensor (a note in `notes`) or when they are
// a token embedding's (never right, dropped). Throws FormatError when their count does not fit.
std::vector<float> importanceWeightsOf(const ImatrixData& matrix, const std::string& file,
                                       const TensorInfo& tensor, std::vector<std::string>& notes);

// The types of chooseTensorTypes() for `model`, the metadata llama-quantize writes
// (general.file_type, general.quantization_version, quantize.imatrix.* with a matrix) and
// sources that encode with `importance` when given. Throws FormatError when llama-quantize would
// refuse: a recipe problem, a matrix whose weights do not fit a tensor.
QuantizePlan planQuantization(const GgufModel& model, const QuantizeRecipe& recipe,
                              const ImatrixData* importance, unsigned threads = 0);

// The keys llama-quantize records in what it writes: general.quantization_version and
// general.file_type moved to the end, and with `importance` quantize.imatrix.* (the file as the
// recipe names it, the first dataset, the entries, the chunks).
void setQuantizeMetadata(GgufWriteSpec& spec, const QuantizeRecipe& recipe, const ImatrixData* importance);

struct QuantizeOutcome {
    JobResult written;
    std::vector<QuantizedTensor> tensors;
    std::vector<std::string> notes;
};

// `organ quantize`: the model written to `output` as llama-quantize would write it with the
// recipe, through writeGguf (a partial file, checked, renamed; nothing left on cancel or failure).
// A quantized input is decoded and quantized again (llama-quantize's --allow-requantize), with a
// note. `threads`: for encoding (0: one per core).
QuantizeOutcome quantizeModel(const GgufModel& model, const QuantizeRecipe& recipe,
                              const ImatrixData* importance, const RootedPath& output,
                              const ProgressFn& progress = {}, const StopToken* stop = nullptr,
                              unsigned threads = 0);

// `organ quantize --json` and the HTTP API: output, written, file type, tensors, notes.
nlohmann::json quantizeOutcomeToJson(const QuantizeOutcome& outcome, const QuantizeRecipe& recipe,
                                     const std::string& output);

} // namespace organ
