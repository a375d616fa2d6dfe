// Purification throughput per method: values per second on one core, on a 2048 × 4096
// tensor of heavy-tailed noise with some low-rank structure.
#include "bench_models.h"
#include "purify/purification.h"

#include <chrono>
#include <cstdio>

using namespace organ;
using namespace organ::bench;

int main() {
    const std::uint64_t columns = 2048;
    const std::uint64_t rows = 4096;
    std::vector<float> values(columns * rows);
    Noise noise(11);
    for (std::uint64_t r = 0; r < rows; ++r) {
        const float a = 0.01f * noise.next();
        for (std::uint64_t c = 0; c < columns; ++c) {
            values[r * columns + c] = 0.02f * noise.next() + a * float(c % 97) / 97.0f;
        }
    }
    for (const auto method : {PurifyParams::Method::Fft, PurifyParams::Method::Haar}) {
        PurifyParams params;
        params.method = method;
        const auto start = std::chrono::steady_clock::now();
        const Purified out = purify(values, columns, params);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("%s: %.1f M values in %.2f s = %.1f M values/s on one core (relative change %.3f)\n",
                    purifyMethodName(method).c_str(), values.size() / 1e6, s, values.size() / s / 1e6,
                    out.relativeChange);
    }
    return 0;
}
