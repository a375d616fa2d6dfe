// Single-core dequantization throughput of every tensor type: values per CPU second (the thread's
// own time, so that other processes' turns on the core do not count) decoded from 64 MiB
// of plausible blocks (every float scale a normal number), the best of five runs taken in turns
// with ggml's. Built with
// ggml (-DORGAN_GGML_INCLUDE_DIR=… -DORGAN_GGML_BASE_LIBRARY=…/libggml-base.a, e.g. a llama.cpp
// build), it decodes the same bytes with ggml's to_float and prints the ratio (ours / ggml's speed;
// at least 1 is the goal).
// Usage: bench_dequant [TYPE …]   (all types when none is named)
#include "bench_models.h"
#include "quant/dequant.h"

#include <algorithm>
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

using Decode = std::function<void(const std::byte*, std::size_t blocks, float*)>;

// Values per CPU second of one pass of `decode` over `source`, 1 Mi values a call.
double valuesPerSecond(const TensorTypeTraits& traits, const std::vector<std::byte>& source,
                       const Decode& decode) {
    std::vector<float> out(1u << 20);
    const std::size_t blocksPerCall = out.size() / traits.blockSize;
    const std::size_t blocks = source.size() / traits.bytesPerBlock;
    const double start = threadSeconds();
    std::size_t decoded = 0;
    for (std::size_t b = 0; b + blocksPerCall <= blocks; b += blocksPerCall) {
        decode(source.data() + b * traits.bytesPerBlock, blocksPerCall, out.data());
        decoded += blocksPerCall * traits.blockSize;
    }
    return static_cast<double>(decoded) / (threadSeconds() - start);
}

// The best of five passes of each decoder, taken in turns so that both meet the same load.
std::vector<double> bestInTurns(const TensorTypeTraits& traits, const std::vector<std::byte>& source,
                                const std::vector<Decode>& decoders) {
    std::vector<double> best(decoders.size(), 0.0);
    for (int round = 0; round < 5; ++round) {
        for (std::size_t i = 0; i < decoders.size(); ++i) {
            best[i] = std::max(best[i], valuesPerSecond(traits, source, decoders[i]));
        }
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
        std::vector<Decode> decoders = {[&](const std::byte* src, std::size_t blocks, float* out) {
            dequantizeBlocks(traits.type, src, blocks, out);
        }};
#ifdef ORGAN_WITH_GGML
        const auto* ggml = ggml_get_type_traits(static_cast<ggml_type>(traits.type));
        if (ggml != nullptr && ggml->to_float != nullptr &&
            ggml->blck_size == static_cast<int64_t>(traits.blockSize)) {
            decoders.emplace_back([&](const std::byte* src, std::size_t blocks, float* out) {
                ggml->to_float(src, out, static_cast<std::int64_t>(blocks * traits.blockSize));
            });
        }
#endif
        const std::vector<double> speeds = bestInTurns(traits, source, decoders);
        std::printf("%-8s %8.2f G/s", traits.name.data(), speeds[0] / 1e9);
#ifdef ORGAN_WITH_GGML
        if (speeds.size() > 1) {
            std::printf(" %8.2f G/s %7.2f×", speeds[1] / 1e9, speeds[0] / speeds[1]);
        } else {
            std::printf(" %12s", "(none)");
        }
#endif
        std::printf("\n");
        std::fflush(stdout);
    }
    return 0;
}
