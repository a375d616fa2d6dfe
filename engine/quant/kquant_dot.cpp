#include "quant/kquant_dot.h"

#include "quant/dequant_detail.h"
#include "quant/kquant_unpack.h"
#include "quant/product_kernels.h"
#include "support/instruction_set.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ORGAN_X86 1
#endif

namespace organ {
namespace {

using detail::Unpacked;

// Σ_j scale[j] · Σ_{16 levels of j} level · x, and Σ_j correction[j] · sums[j]: exact in 32 bits
// (at most 16 · 128 · 16 · 255 · 127, and 16 · 4096 · 2032).
void integerSums(const Unpacked& w, const Q8KBlock& x, std::int32_t& scaled, std::int32_t& corrections) {
    scaled = 0;
    corrections = 0;
    for (int j = 0; j < 16; ++j) {
        std::int32_t sum = 0;
        for (int k = 16 * j; k < 16 * j + 16; ++k) {
            sum += std::int32_t(w.q[k]) * std::int32_t(x.values[k]);
        }
        scaled += w.scales[j / 2][8 * (j % 2)] * sum;
        corrections += w.correction[j] * std::int32_t(x.sums[j]);
    }
}

// One block of 32 IQ4_NL levels (looked up from their nibbles) · 32 q8_0 values.
std::int32_t iq4NlSumPortable(const std::uint8_t* nibbles, const std::int8_t* x) {
    std::int32_t sum = 0;
    for (int j = 0; j < 16; ++j) {
        sum += detail::kIq4Levels[nibbles[j] & 0xF] * std::int32_t(x[j]) +
               detail::kIq4Levels[nibbles[j] >> 4] * std::int32_t(x[j + 16]);
    }
    return sum;
}

#ifdef ORGAN_X86
__attribute__((target("avx2"))) std::int32_t horizontalSum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// The nibbles looked up as bytes (pshufb over the 16 levels): low nibbles are values 0-15,
// high ones 16-31, as q8_0 holds them.
__attribute__((target("avx2"))) std::int32_t iq4NlSumAvx2(const std::uint8_t* nibbles, const std::int8_t* x) {
    const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(detail::kIq4Levels));
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(nibbles));
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i low = _mm_shuffle_epi8(levels, _mm_and_si128(packed, mask));
    const __m128i high = _mm_shuffle_epi8(levels, _mm_and_si128(_mm_srli_epi16(packed, 4), mask));
    const __m256i qw = _mm256_set_m128i(high, low);
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw));
    return horizontalSum(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}
#endif

using Iq4NlSum = std::int32_t (*)(const std::uint8_t* nibbles, const std::int8_t* x);

// IQ4_NL's integer sums: plain C++ for portable, AVX2 otherwise.
Iq4NlSum iq4NlSum() {
#ifdef ORGAN_X86
    if (activeInstructionSet() != InstructionSet::Portable) {
        return iq4NlSumAvx2;
    }
#endif
    return iq4NlSumPortable;
}

} // namespace

// One row × one column, super-block after super-block: the exact integer total (less the bias
// correction where it belongs to it), one multiply-add with d · x.d, and for the types with
// minimums one with −dmin · x.d of the minimums' total.
void detail::kQuantTilePortable(const Unpacked* const* rows, const Q8KBlock* const* columns,
                                std::size_t blocks, float* out) {
    float acc = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
        const Unpacked& w = rows[0][b];
        const Q8KBlock& x = columns[0][b];
        std::int32_t scaled = 0;
        std::int32_t corrections = 0;
        integerSums(w, x, scaled, corrections);
        acc = std::fma(w.d * x.d, static_cast<float>(w.hasMins ? scaled : scaled - corrections), acc);
        if (w.hasMins) {
            acc = std::fma(-(w.dmin * x.d), static_cast<float>(corrections), acc);
        }
    }
    *out = acc;
}

void quantizeQ8K(const float* x, std::size_t count, Q8KBlock* out) {
    for (std::size_t b = 0; b < count / 256; ++b, x += 256) {
        Q8KBlock& block = out[b];
        float max = 0;
        float amax = 0;
        for (int j = 0; j < 256; ++j) {
            if (std::abs(x[j]) > amax) {
                amax = std::abs(x[j]);
                max = x[j];
            }
        }
        if (amax == 0) {
            block.d = 0;
            std::memset(block.values, 0, sizeof block.values);
            std::memset(block.sums, 0, sizeof block.sums);
            continue;
        }
        const float inverse = -127.0f / max;
        for (int j = 0; j < 256; ++j) {
            const float level = std::nearbyint(inverse * x[j]);
            // |level| ≤ 127 for finite values; a NaN gives 127 (as ggml's MIN does), never
            // undefined behaviour.
            block.values[j] = static_cast<std::int8_t>(level < 127.0f ? std::max(level, -127.0f) : 127.0f);
        }
        for (int j = 0; j < 16; ++j) {
            int sum = 0;
            for (int k = 16 * j; k < 16 * j + 16; ++k) {
                sum += block.values[k];
            }
            block.sums[j] = static_cast<std::int16_t>(sum);
        }
        block.d = 1.0f / inverse;
    }
}

Q8KActivations::Q8KActivations(const float* x, std::size_t columns, std::size_t count)
    : m_columns(columns), m_count(count), m_blocks(columns / 256 * count) {
    detail::activationQuantizersOf(activeInstructionSet()).q8K(x, columns * count, m_blocks.data());
}

bool hasQ8KProduct(TensorType type) {
    return detail::superBlockUnpacker(type) != nullptr;
}

void q8KProduct(TensorType type, const std::byte* weights, std::size_t rows, const Q8KActivations& x,
                float* out, std::size_t outStride) {
    const InstructionSet set = activeInstructionSet();
    const detail::UnpackFn unpack = detail::superBlockUnpacker(type, set);
    if (unpack == nullptr) {
        return;
    }
    const detail::KQuantKernels& kernels = detail::kernelsOf(set).kQuant;
    const std::size_t blocks = x.columns() / 256;
    const std::size_t blockBytes = traitsOf(type).bytesPerBlock;
    const detail::PackedRowDotFn packedDot =
        set != InstructionSet::Portable && x.count() == 1 ? detail::packedRowDotX86(type, set) : nullptr;
    if (packedDot != nullptr) {
        for (std::size_t r = 0; r < rows; ++r) {
            out[r] = packedDot(weights + r * blocks * blockBytes, x.column(0), blocks);
        }
        return;
    }
    // A group of rows unpacked once meets every column.
    const std::size_t group =
        static_cast<std::size_t>(std::max(kernels.wide.rows, kernels.narrow.rows)) * (x.count() > 1 ? 2 : 1);
    thread_local std::vector<Unpacked> unpacked;
    unpacked.resize(group * blocks);
    auto columnAt = [&](std::size_t c) { return x.column(c); };
    for (std::size_t first = 0; first < rows; first += group) {
        const std::size_t count = std::min(group, rows - first);
        for (std::size_t i = 0; i < count * blocks; ++i) {
            unpack(weights + (first * blocks + i) * blockBytes, unpacked[i]);
        }
        auto rowAt = [&](std::size_t r) { return unpacked.data() + r * blocks; };
        detail::runProduct(kernels, count, x.count(), blocks, rowAt, columnAt, columnAt, out + first,
                           outStride);
    }
}

std::size_t interleavedQ4KBytes(std::size_t rows, std::size_t columns) {
    return rows / detail::kQ4KGroupRows * (columns / 256) * detail::kQ4KGroupBytes;
}

namespace {

void requireGroups(std::size_t rows) {
    if (rows % detail::kQ4KGroupRows != 0) {
        throw std::invalid_argument("interleaved Q4_K rows: " + std::to_string(rows) +
                                    " is not a multiple of 8");
    }
}

} // namespace

void interleaveQ4K(const std::byte* weights, std::size_t rows, std::size_t columns, std::byte* out) {
    requireGroups(rows);
    const std::size_t blocks = columns / 256;
    for (std::size_t first = 0; first < rows; first += detail::kQ4KGroupRows) {
        detail::interleaveQ4K(weights + first * blocks * 144, blocks,
                              out + interleavedQ4KBytes(first, columns));
    }
}

void interleavedQ4KProduct(const std::byte* interleaved, std::size_t rows, const Q8KActivations& x,
                           float* out, std::size_t outStride) {
    requireGroups(rows);
    detail::InterleavedDotFn dot = detail::interleavedQ4KDotX86(activeInstructionSet());
    if (dot == nullptr) {
        dot = detail::interleavedQ4KDotPortable;
    }
    const std::size_t blocks = x.columns() / 256;
    for (std::size_t c = 0; c < x.count(); ++c) {
        for (std::size_t first = 0; first < rows; first += detail::kQ4KGroupRows) {
            float sums[detail::kQ4KGroupRows];
            dot(interleaved + interleavedQ4KBytes(first, x.columns()), x.column(c), blocks, sums);
            std::copy_n(sums, detail::kQ4KGroupRows, out + first + c * outStride);
        }
    }
}

void iq4NlProduct(const std::byte* weights, std::size_t rows, const QuantizedActivations& x, float* out,
                  std::size_t outStride) {
    const Iq4NlSum sum = iq4NlSum();
    const std::size_t blocks = x.columns() / 32;
    for (std::size_t r = 0; r < rows; ++r) {
        const std::byte* row = weights + r * blocks * 18;
        for (std::size_t c = 0; c < x.count(); ++c) {
            const QuantizedActivations::Block* column = x.column(c);
            float acc = 0;
            for (std::size_t b = 0; b < blocks; ++b) {
                const std::byte* block = row + b * 18;
                const std::int32_t total = sum(detail::bytes(block + 2), column[b].values);
                acc = std::fma(detail::loadHalf(block) * column[b].scale, static_cast<float>(total), acc);
            }
            out[r + c * outStride] = acc;
        }
    }
}

} // namespace organ
