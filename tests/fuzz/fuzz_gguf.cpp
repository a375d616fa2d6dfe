// libFuzzer target: arbitrary bytes as a GGUF file, through everything that reads one when a
// user opens it: the parser, the model, anatomy, validation, the inspect reports, and the
// dequantization of the start of every tensor. A FormatError is the right answer to bad
// bytes; anything else that escapes (another exception, a crash, a sanitizer report, a hang,
// a huge allocation) is a bug.
#include "anatomy/model_summary.h"
#include "anatomy/model_validation.h"
#include "gguf/gguf_model.h"
#include "quant/dequant.h"
#include "support/errors.h"
#include "support/text_safety.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace organ;
    try {
        const auto file =
            GgufFile::fromBytes("fuzz.gguf", std::span(reinterpret_cast<const std::byte*>(data), size));
        const auto model = GgufModel::fromFile(file);
        const ModelAnatomy anatomy = analyzeAnatomy(*model);
        (void)validateModel(*model);
        (void)dumpJson(modelToJson(*model, anatomy, 8));
        (void)summaryText(*model, anatomy);
        (void)tensorTableText(*model, anatomy);
        (void)metadataText(*model, 8);
        std::vector<float> values;
        for (const TensorInfo& t : model->tensors()) {
            const std::uint64_t block = traitsOf(t.type).blockSize;
            const std::uint64_t count = std::min<std::uint64_t>(t.elements, 4096) / block * block;
            values.resize(count);
            dequantizeRange(t.type, model->tensorData(t), 0, count, values.data());
        }
    } catch (const FormatError&) {
    }
    return 0;
}
