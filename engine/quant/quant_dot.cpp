#include "quant/quant_dot.h"

#include "quant/dequant.h"
#include "quant/kquant_dot.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ORGAN_X86 1
#endif

namespace organ {
namespace {

// A Q8_0 weight block: an F16 scale and 32 int8 values (34 bytes, unaligned).
constexpr std::size_t kQ8Bytes = 34;

float weightScale(const std::byte* block) {
    std::uint16_t bits;
    std::memcpy(&bits, block, 2);
    return halfToFloat(bits);
}

using RowKernel = float (*)(const std::byte* row, const QuantizedActivations::Block* x, std::size_t blocks);
// Four rows × four columns into out[r + c·outStride]; none where the kernel has no tiles.
using TileKernel = void (*)(const std::byte* rows, std::size_t rowBytes,
                            const QuantizedActivations::Block* const* columns, std::size_t blocks, float* out,
                            std::size_t outStride);

// In the order the SIMD kernels add: eight lanes of four products each, every block's lane
// sums scaled and fused into the lane, the lanes added pairwise at the end — so that every
// kernel gives the same bits.
float dotPortable(const std::byte* row, const QuantizedActivations::Block* x, std::size_t blocks) {
    float lanes[8] = {};
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::byte* w = row + b * kQ8Bytes;
        const auto* q = reinterpret_cast<const std::int8_t*>(w + 2);
        const float scale = weightScale(w) * x[b].scale;
        for (int lane = 0; lane < 8; ++lane) {
            std::int32_t s = 0;
            for (int k = 4 * lane; k < 4 * lane + 4; ++k) {
                s += std::int32_t(q[k]) * std::int32_t(x[b].values[k]);
            }
            lanes[lane] = std::fma(scale, static_cast<float>(s), lanes[lane]);
        }
    }
    const float a = lanes[0] + lanes[4];
    const float b = lanes[1] + lanes[5];
    const float c = lanes[2] + lanes[6];
    const float d = lanes[3] + lanes[7];
    return (a + c) + (b + d);
}

#ifdef ORGAN_X86
__attribute__((target("avx2,fma"))) float horizontalSum(__m256 v) {
    const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
    return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

// |w| · (x with w's sign), summed in pairs to int16 then to int32: w · x without a signed-by-
// signed byte product (|w| ≤ 128 and |x| ≤ 127, so the pairs never saturate).
__attribute__((target("avx2,fma"))) float dotAvx2(const std::byte* row, const QuantizedActivations::Block* x,
                                                  std::size_t blocks) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::byte* w = row + b * kQ8Bytes;
        const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2));
        const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].values));
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw));
        const __m256 sums = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        const float scale = weightScale(w) * x[b].scale;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(scale), sums, acc);
    }
    return horizontalSum(acc);
}

__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))) float
dotVnni(const std::byte* row, const QuantizedActivations::Block* x, std::size_t blocks) {
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::byte* w = row + b * kQ8Bytes;
        const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2));
        const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].values));
        const __m256i sums =
            _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw));
        std::uint16_t bits;
        std::memcpy(&bits, w, 2);
        const float scale = _cvtsh_ss(bits) * x[b].scale;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(sums), acc);
    }
    return horizontalSum(acc);
}

// Four rows against four columns at once, each block of each row and column loaded once. The
// activations enter as unsigned bytes x + 128 (one multiply-add instruction per pair, no sign
// juggling); 128 · Σw, the same for every column, is taken off again per block.
__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))) void
tileVnni(const std::byte* rows, std::size_t rowBytes, const QuantizedActivations::Block* const* columns,
         std::size_t blocks, float* out, std::size_t outStride) {
    constexpr int R = 4;
    constexpr int C = 4;
    __m256 acc[R][C];
#pragma GCC unroll 4
    for (auto& row : acc) {
#pragma GCC unroll 4
        for (auto& a : row) {
            a = _mm256_setzero_ps();
        }
    }
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
    for (std::size_t b = 0; b < blocks; ++b) {
        __m256i w[R];
        __m256i offset[R];
        __m256 wScale[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const std::byte* block = rows + r * rowBytes + b * kQ8Bytes;
            w[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
            offset[r] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), bias, w[r]);
            std::uint16_t bits;
            std::memcpy(&bits, block, 2);
            wScale[r] = _mm256_set1_ps(_cvtsh_ss(bits));
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            const QuantizedActivations::Block& xb = columns[c][b];
            const __m256i xu =
                _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.values)), bias);
            const __m256 xScale = _mm256_set1_ps(xb.scale);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const __m256i sums =
                    _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), xu, w[r]), offset[r]);
                acc[r][c] =
                    _mm256_fmadd_ps(_mm256_mul_ps(wScale[r], xScale), _mm256_cvtepi32_ps(sums), acc[r][c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            out[r + c * outStride] = horizontalSum(acc[r][c]);
        }
    }
}
#endif

struct Kernel {
    RowKernel dot;
    TileKernel tile;
    const char* name;
};

// The kernels this CPU can run, the fastest first.
std::vector<Kernel> availableKernels() {
    std::vector<Kernel> kernels;
#ifdef ORGAN_X86
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2 && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vnni")) {
        kernels.push_back({dotVnni, tileVnni, "avx512-vnni"});
    }
    if (avx2) {
        kernels.push_back({dotAvx2, nullptr, "avx2"});
    }
#endif
    kernels.push_back({dotPortable, nullptr, "portable"});
    return kernels;
}

const std::vector<Kernel>& kernels() {
    static const std::vector<Kernel> all = availableKernels();
    return all;
}

std::atomic<const Kernel*> chosen{nullptr};

const Kernel& kernel() {
    const Kernel* k = chosen.load();
    return k != nullptr ? *k : kernels().front();
}

} // namespace

bool hasQuantizedProduct(TensorType type) {
    return type == TensorType::Q8_0 || type == TensorType::IQ4_NL;
}

QuantizedActivations::QuantizedActivations(const float* x, std::size_t columns, std::size_t count)
    : m_columns(columns), m_count(count), m_blocks(columns / 32 * count) {
    for (std::size_t b = 0; b < m_blocks.size(); ++b) {
        const float* v = x + b * 32;
        float amax = 0;
        for (int i = 0; i < 32; ++i) {
            amax = std::max(amax, std::abs(v[i]));
        }
        // As llama.cpp's x86 code: times 127/amax, rounded to nearest even.
        const float inverse = amax != 0 ? 127.0f / amax : 0.0f;
        Block& out = m_blocks[b];
        out.scale = halfToFloat(floatToHalf(amax / 127.0f));
        for (int i = 0; i < 32; ++i) {
            out.values[i] = static_cast<std::int8_t>(std::nearbyint(v[i] * inverse));
        }
    }
}

void quantizedProduct(TensorType type, const std::byte* weights, std::size_t rows,
                      const QuantizedActivations& x, float* out, std::size_t outStride) {
    if (type == TensorType::IQ4_NL) {
        iq4NlProduct(weights, rows, x, out, outStride);
        return;
    }
    if (type != TensorType::Q8_0) {
        return;
    }
    const std::size_t blocks = x.columns() / 32;
    const std::size_t rowBytes = blocks * kQ8Bytes;
    const Kernel& k = kernel();
    // Whole tiles of four rows × four columns where the kernel has them, dot by dot elsewhere.
    std::size_t tiledRows = 0;
    std::size_t tiledColumns = 0;
    if (k.tile != nullptr) {
        tiledRows = rows / 4 * 4;
        tiledColumns = x.count() / 4 * 4;
        // Rows outside, columns inside: four rows stay in the first-level cache while the
        // activations stream from the second.
        for (std::size_t r = 0; r < tiledRows; r += 4) {
            for (std::size_t c = 0; c < tiledColumns; c += 4) {
                const QuantizedActivations::Block* columns[4] = {x.column(c), x.column(c + 1),
                                                                 x.column(c + 2), x.column(c + 3)};
                k.tile(weights + r * rowBytes, rowBytes, columns, blocks, out + r + c * outStride, outStride);
            }
        }
    }
    for (std::size_t c = 0; c < x.count(); ++c) {
        const std::size_t firstRow = c < tiledColumns ? tiledRows : 0;
        for (std::size_t r = firstRow; r < rows; ++r) {
            out[r + c * outStride] = k.dot(weights + r * rowBytes, x.column(c), blocks);
        }
    }
}

const char* quantizedProductKernel() {
    return kernel().name;
}

std::vector<std::string> quantizedProductKernels() {
    std::vector<std::string> names;
    for (const Kernel& k : kernels()) {
        names.emplace_back(k.name);
    }
    return names;
}

void useQuantizedProductKernel(std::string_view name) {
    for (const Kernel& k : kernels()) {
        if (name == k.name) {
            chosen.store(&k);
            return;
        }
    }
    throw std::invalid_argument("no quantized product kernel '" + std::string(name) + "' on this CPU");
}

} // namespace organ
