// One core's throughput of the forward pass's weight × activation products, per weight type and
// instruction set: G multiply-adds per CPU second of the thread (other processes' turns on the core
// do not count), the best of five, the activations prepared beforehand (as the forward pass does
// once per weight it meets). Shapes of a Llama-3.2-1B block: an attention projection (2048 × 2048)
// and the FFN's down projection (2048 rows of 8192), each against 128 tokens (a perplexity pass)
// and one (generation).
// Usage: bench_products [TYPE …]   (Q8_0, Q4_K, Q6_K, F16; all when none is named)
#include "bench_models.h"
#include "gguf/tensor_type.h"
#include "quant/dequant.h"
#include "quant/f16_dot.h"
#include "quant/kquant_dot.h"
#include "quant/quant_dot.h"
#include "quant/quantize.h"
#include "support/instruction_set.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace organ;
using namespace organ::bench;

namespace {

struct Shape {
    const char* name;
    std::size_t rows;
    std::size_t columns;
    std::size_t tokens;
};

// The weight's bytes as stored: F16 converted, the others quantized as llama-quantize does.
std::vector<std::byte> storedWeight(TensorType type, const std::vector<float>& values, std::size_t rows,
                                    std::size_t columns) {
    std::vector<std::byte> bytes(storedBytes(type, values.size()));
    if (type == TensorType::F16) {
        for (std::size_t i = 0; i < values.size(); ++i) {
            const std::uint16_t h = floatToHalf(values[i]);
            std::memcpy(bytes.data() + 2 * i, &h, 2);
        }
    } else {
        quantizeRows(type, values.data(), rows, columns, nullptr, bytes.data());
    }
    return bytes;
}

// The product of the weight with `x` as the forward pass calls it, for this type.
std::function<void(float*)> product(TensorType type, const std::vector<std::byte>& weight, std::size_t rows,
                                    std::size_t columns, const std::vector<float>& x, std::size_t tokens) {
    if (type == TensorType::F16) {
        auto halves = std::make_shared<HalfActivations>(x.data(), columns, tokens);
        return [&weight, rows, halves](float* out) {
            f16Product(reinterpret_cast<const std::uint16_t*>(weight.data()), rows, *halves, out, rows);
        };
    }
    if (hasQ8KProduct(type)) {
        auto q = std::make_shared<Q8KActivations>(x.data(), columns, tokens);
        return [&weight, rows, type, q](float* out) { q8KProduct(type, weight.data(), rows, *q, out, rows); };
    }
    auto q = std::make_shared<QuantizedActivations>(x.data(), columns, tokens);
    return
        [&weight, rows, type, q](float* out) { quantizedProduct(type, weight.data(), rows, *q, out, rows); };
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> types(argv + 1, argv + argc);
    if (types.empty()) {
        types = {"Q8_0", "Q4_K", "Q6_K", "F16"};
    }
    const Shape shapes[] = {{"2048x2048 x128", 2048, 2048, 128},
                            {"2048x8192 x128", 2048, 8192, 128},
                            {"2048x2048 x1", 2048, 2048, 1},
                            {"2048x8192 x1", 2048, 8192, 1}};
    std::printf("G multiply-adds per CPU second of one thread, best of 5\n%-6s %-16s", "type", "shape");
    const auto& sets = supportedInstructionSets();
    for (const InstructionSet set : sets) {
        std::printf(" %11s", std::string(instructionSetName(set)).c_str());
    }
    std::printf("\n");
    Noise noise(7);
    for (const std::string& name : types) {
        const auto type = tensorTypeFromName(name);
        if (!type) {
            std::fprintf(stderr, "bench_products: unknown type %s\n", name.c_str());
            return 2;
        }
        for (const Shape& shape : shapes) {
            std::vector<float> w(shape.rows * shape.columns);
            for (float& v : w) {
                v = 0.02f * noise.next();
            }
            std::vector<float> x(shape.columns * shape.tokens);
            for (float& v : x) {
                v = noise.next();
            }
            const std::vector<std::byte> weight = storedWeight(*type, w, shape.rows, shape.columns);
            std::vector<float> out(shape.rows * shape.tokens);
            std::printf("%-6s %-16s", name.c_str(), shape.name);
            const double multiplyAdds = double(shape.rows) * double(shape.columns) * double(shape.tokens);
            for (const InstructionSet set : sets) {
                useInstructionSet(instructionSetName(set));
                const auto run = product(*type, weight, shape.rows, shape.columns, x, shape.tokens);
                // Portable kernels are slow: one pass of one token-sized product tells enough.
                const int repeats = set == InstructionSet::Portable ? 1 : 5;
                const int calls = shape.tokens == 1 ? 20 : 1;
                double best = 0;
                for (int r = 0; r < repeats; ++r) {
                    const double start = threadSeconds();
                    for (int c = 0; c < calls; ++c) {
                        run(out.data());
                    }
                    best = std::max(best, calls * multiplyAdds / (threadSeconds() - start) * 1e-9);
                }
                std::printf(" %11.1f", best);
                std::fflush(stdout);
            }
            std::printf("\n");
        }
    }
}
