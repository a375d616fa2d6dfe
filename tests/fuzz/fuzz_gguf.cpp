// libFuzzer target: arbitrary bytes as a GGUF file, through everything that reads one when a
// user opens it: the parser, the model, anatomy, validation, the inspect reports, the
// dequantization of the start of every tensor, and the tokenizer its vocabulary makes. A
// FormatError (or VitalsUnavailable, for a vocabulary vital signs cannot read) is the right
// answer to bad bytes; anything else that escapes (another exception, a crash, a sanitizer report, a hang,
// a huge allocation) is a bug.
#include "anatomy/model_summary.h"
#include "anatomy/model_validation.h"
#include "gguf/gguf_model.h"
#include "quant/dequant.h"
#include "support/errors.h"
#include "support/text_safety.h"
#include "vitals/tokenizer.h"

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
        try {
            const Tokenizer tokenizer = Tokenizer::fromModel(*model);
            (void)tokenizer.decode(
                tokenizer.encode("Once upon a time, na\xC3\xAFve 12345 it's\n\n  \xF0\x9F\xA6\x99"));
        } catch (const VitalsUnavailable&) {
        }
    } catch (const FormatError&) {
    }
    return 0;
}
