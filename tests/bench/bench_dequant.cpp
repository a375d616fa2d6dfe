// Single-core dequantization throughput of every tensor type: values per second decoded from 64 MiB
// of plausible blocks (every float scale a normal number), the best of three runs. Built with
// ggml (-DORGAN_GGML_INCLUDE_DIR=… -DORGAN_GGML_BASE_LIBRARY=…/libggml-base.a, e.g. a llama.cpp
// build), it decodes the same bytes with ggml's to_float and prints the ratio (ours / ggml's speed;
// at least 1 is the goal).
// Usage: bench_dequant [TYPE …]   (all types when none is named)
#include "bench_models.h"
#include "quant/dequant.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#ifdef ORGAN_WITH_GGML
#include <ggml.h>
#endif

using namespace organ;
using namespace organ::bench;

namespace {

// Values per second of `decode` over `source`, 1 Mi values a call, the best of three runs.
double valuesPerSecond(const TensorTypeTraits& traits, const std::vector<std::byte>& source,
                       const std::function<void(const std::byte*, std::size_t blocks, float*)>& decode) {
    std::vector<float> out(1u << 20);
    const std::size_t blocksPerCall = out.size() / traits.blockSize;
    const std::size_t blocks = source.size() / traits.bytesPerBlock;
    double best = 0;
    for (int run = 0; run < 3; ++run) {
        const auto start = std::chrono::steady_clock::now();
        std::size_t decoded = 0;
        for (std::size_t b = 0; b + blocksPerCall <= blocks; b += blocksPerCall) {
            decode(source.data() + b * traits.bytesPerBlock, blocksPerCall, out.data());
            decoded += blocksPerCall * traits.blockSize;
        }
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, static_cast<double>(decoded) / elapsed);
    }
    return best;
}

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> named(argv + 1, argv + argc);
#ifdef ORGAN_WITH_GGML
    std::printf("%-8s %12s %12s %8s\n", "type", "ours", "ggml", "ratio");
#else
    std::printf("%-8s %12s   (ggml: not built in; see the header)\n", "type", "ours");
#endif
    constexpr std::size_t kBytes = 64u << 20;
    for (const TensorTypeTraits& traits : allTensorTypes()) {
        if (!named.empty() && std::find(named.begin(), named.end(), traits.name) == named.end()) {
            continue;
        }
        std::vector<std::byte> source(kBytes / traits.bytesPerBlock * traits.bytesPerBlock);
        Noise noise(7);
        // Bytes in [4, 59]: every half or float scale read from them is a normal number of a
        // plausible size (subnormal scales would time the CPU's slow path, not ours).
        for (auto& b : source) {
            b = std::byte(
                static_cast<std::uint8_t>(4 + static_cast<int>(std::abs(noise.next()) * 20.0f) % 56));
        }
        const double ours =
            valuesPerSecond(traits, source, [&](const std::byte* src, std::size_t blocks, float* out) {
                dequantizeBlocks(traits.type, src, blocks, out);
            });
        std::printf("%-8s %8.2f G/s", traits.name.data(), ours / 1e9);
#ifdef ORGAN_WITH_GGML
        const auto* ggml = ggml_get_type_traits(static_cast<ggml_type>(traits.type));
        if (ggml != nullptr && ggml->to_float != nullptr &&
            ggml->blck_size == static_cast<int64_t>(traits.blockSize)) {
            const double theirs =
                valuesPerSecond(traits, source, [&](const std::byte* src, std::size_t blocks, float* out) {
                    ggml->to_float(src, out, static_cast<std::int64_t>(blocks * traits.blockSize));
                });
            std::printf(" %8.2f G/s %7.2f×", theirs / 1e9, ours / theirs);
        } else {
            std::printf(" %12s", "(none)");
        }
#endif
        std::printf("\n");
        std::fflush(stdout);
    }
    return 0;
}
