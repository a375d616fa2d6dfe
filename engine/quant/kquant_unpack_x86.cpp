// The levels of Q4_K and Q6_K super-blocks unpacked 32 bytes at a time (AVX2), and their rows'
// products with one column of activations (generation) straight from the packed bytes: a row that
// meets one column only would cost more to unpack than to multiply.
#include "quant/dequant_detail.h"
#include "quant/kquant_unpack.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include "quant/x86_intrinsics.h"

namespace organ::detail {
namespace {

#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c")))

ORGAN_TARGET inline __m256i load256(const std::byte* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

ORGAN_TARGET inline void store256(std::uint8_t* p, __m256i v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(p), v);
}

// The 12 bytes of a Q4_K super-block's scales (scaleMin) as 16: the eight 6-bit scales in bytes 0-7,
// the eight mins in bytes 8-15.
inline __m128i q4KScalesMins(const std::byte* packed) {
    std::uint32_t w[3];
    std::memcpy(w, packed, sizeof w);
    const std::uint32_t low6 = 0x3F3F3F3Fu;
    const std::uint32_t low4 = 0x0F0F0F0Fu;
    const std::uint32_t low2 = 0x03030303u;
    const std::uint32_t scalesHigh = (w[2] & low4) | (((w[0] >> 6) & low2) << 4);
    const std::uint32_t minsHigh = ((w[2] >> 4) & low4) | (((w[1] >> 6) & low2) << 4);
    return _mm_set_epi32(static_cast<int>(minsHigh), static_cast<int>(w[1] & low6),
                         static_cast<int>(scalesHigh), static_cast<int>(w[0] & low6));
}

// The exact totals of two vectors of int32 lanes, in lanes 0 and 1.
ORGAN_TARGET inline __m128i pairTotals(__m256i first, __m256i second) {
    const __m256i pairs = _mm256_hadd_epi32(first, second);
    const __m128i quarters = _mm_add_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
    return _mm_hadd_epi32(quarters, quarters);
}

// A super-block's scaled sums and its mins' sums totalled, as floats in lanes 0 and 1.
ORGAN_TARGET inline __m128 superBlockTotals(__m256i sums, __m256i minSums) {
    return _mm_cvtepi32_ps(pairTotals(sums, minSums));
}

// The byte-shuffle control that picks int16 element j (bytes 2j, 2j + 1) into an int16.
constexpr std::int16_t int16Pick(int j) {
    return static_cast<std::int16_t>(0x0100 + 0x0202 * j);
}

// The control that picks int16 element `low` into every int16 of a register's low 128 bits and
// element `high` into its high 128 bits.
ORGAN_TARGET inline __m256i pickControl(int low, int high) {
    return _mm256_set_m128i(_mm_set1_epi16(int16Pick(high)), _mm_set1_epi16(int16Pick(low)));
}

// int16 element `low` of `v`'s low 128 bits in every int16 of the low half, element `high` of its high
// 128 bits in the high half.
ORGAN_TARGET inline __m256i pickInt16(__m256i v, int low, int high) {
    return _mm256_shuffle_epi8(v, pickControl(low, high));
}

// A Q4_K super-block's eight scales as int16, in both 128-bit halves (q4KScalesMins' bytes 0-7).
ORGAN_TARGET inline __m128i q4KScales(__m128i scalesMins) {
    return _mm_cvtepu8_epi16(scalesMins);
}

// Its eight mins as int16, each twice: the min of every 16 levels (bytes 8-15).
ORGAN_TARGET inline __m256i q4KMinPairs(__m128i scalesMins) {
    return _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scalesMins, scalesMins));
}

// A Q6_K super-block's sixteen signed scales as int16.
ORGAN_TARGET inline __m256i q6KScales(const std::byte* src) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 192)));
}

// The levels (level + 32) of half `half` of a Q6_K super-block, 32 a register: run t takes nibble
// t / 2 of ql[32 · (t % 2) …] and bits 2t, 2t + 1 of qh as its bits 4 and 5.
ORGAN_TARGET inline void q6KLevels(const std::byte* src, int half, __m256i q[4]) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i high = _mm256_set1_epi8(0x30);
    const __m256i a = load256(src + 64 * half);
    const __m256i b = load256(src + 64 * half + 32);
    const __m256i h = load256(src + 128 + 32 * half);
    q[0] = _mm256_or_si256(_mm256_and_si256(a, nibble), _mm256_and_si256(_mm256_slli_epi16(h, 4), high));
    q[1] = _mm256_or_si256(_mm256_and_si256(b, nibble), _mm256_and_si256(_mm256_slli_epi16(h, 2), high));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), nibble), _mm256_and_si256(h, high));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), nibble),
                           _mm256_and_si256(_mm256_srli_epi16(h, 2), high));
}

// q4KFactors with the scales and mins widened in registers: the same Unpacked.
ORGAN_TARGET void q4KFactorsAvx2(const std::byte* src, Unpacked& u) {
    u.d = halfAt(src);
    u.dmin = halfAt(src + 2);
    u.hasMins = true;
    u.wideLevels = false;
    const __m128i scalesMins = q4KScalesMins(src + 4);
    const __m256i scales = _mm256_broadcastsi128_si256(q4KScales(scalesMins));
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.scales[i]), pickInt16(scales, i, i));
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(u.correction), q4KMinPairs(scalesMins));
}

// q6KFactors the same way: scale j of every 16 levels, 32 · scale as the correction.
ORGAN_TARGET void q6KFactorsAvx2(const std::byte* src, Unpacked& u) {
    u.d = halfAt(src + 208);
    u.hasMins = false;
    u.wideLevels = false;
    const __m256i scales16 = q6KScales(src);
    const __m256i low = _mm256_permute4x64_epi64(scales16, 0x44);
    const __m256i high = _mm256_permute4x64_epi64(scales16, 0xEE);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.scales[i]), pickInt16(low, 2 * i, 2 * i + 1));
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.scales[4 + i]), pickInt16(high, 2 * i, 2 * i + 1));
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(u.correction), _mm256_slli_epi16(scales16, 5));
}

// qs[128] from byte 16: 32 bytes give 32 levels in their low nibbles, then 32 in their high ones.
ORGAN_TARGET void unpackQ4KAvx2(const std::byte* src, Unpacked& u) {
    q4KFactorsAvx2(src, u);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    for (int k = 0; k < 4; ++k) {
        const __m256i v = load256(src + 16 + 32 * k);
        store256(u.q + 64 * k, _mm256_and_si256(v, nibble));
        store256(u.q + 64 * k + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
    }
}

// The levels of both halves (q6KLevels), 128 bytes each.
ORGAN_TARGET void unpackQ6KAvx2(const std::byte* src, Unpacked& u) {
    q6KFactorsAvx2(src, u);
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
        __m256i q[4];
        q6KLevels(src, half, q);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            store256(u.q + 128 * half + 32 * k, q[k]);
        }
    }
}

// acc + d · x.d · sums − dmin · x.d · mins, the two fused multiply-adds of kQuantTilePortable;
// `totals` from superBlockTotals.
ORGAN_TARGET inline float addSuperBlock(float acc, const std::byte* halves, float xd, __m128 totals) {
    std::uint32_t both;
    std::memcpy(&both, halves, sizeof both);
    const __m128 scales =
        _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(both))), _mm_set1_ps(xd));
    acc = std::fma(_mm_cvtss_f32(scales), _mm_cvtss_f32(totals), acc);
    return std::fma(-_mm_cvtss_f32(_mm_movehdup_ps(scales)), _mm_cvtss_f32(_mm_movehdup_ps(totals)), acc);
}

// Σ over a super-block's 16 sums of 16 activations of the min of each pair of them: `mins` bytes
// 8-15 as q4KScalesMins gives them.
ORGAN_TARGET inline __m256i minSums(__m128i scalesMins, const Q8KBlock& x) {
    return _mm256_madd_epi16(load256(reinterpret_cast<const std::byte*>(x.sums)), q4KMinPairs(scalesMins));
}

// acc + d · x.d · (Σ levels · scales · x − 32 Σ scales · sums of 16 x), a Q6_K super-block's fused
// multiply-add in kQuantTilePortable: `sums` the int32 lanes of the first total, `scales16` the
// sixteen scales.
ORGAN_TARGET inline float addQ6KSuperBlock(float acc, const std::byte* src, const Q8KBlock& x, __m256i sums,
                                           __m256i scales16) {
    const __m256i biasSums = _mm256_madd_epi16(load256(reinterpret_cast<const std::byte*>(x.sums)), scales16);
    const __m128i totals = pairTotals(sums, biasSums);
    const std::int32_t total = _mm_cvtsi128_si32(totals) - 32 * _mm_extract_epi32(totals, 1);
    return std::fma(halfAt(src + 208) * x.d, static_cast<float>(total), acc);
}

// acc after each of a row's `blocks` super-blocks of kBytes bytes met its column's: step(acc,
// super-block, activations). Inlined into each instruction set's function with its steps.
template <std::size_t kBytes, class Step>
[[gnu::always_inline]] ORGAN_TARGET inline float rowDot(const std::byte* row, const Q8KBlock* x,
                                                        std::size_t blocks, Step step) {
    float acc = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
        // A row is read once, from memory, and the rows after it follow it: ask for the
        // super-block about 4800 bytes on (all of its cache lines, rows further on where this one
        // ends) while this one is summed; the address made as an integer, never as a pointer
        // past the rows, and a hint never faults. AMD Zen 4, one thread, a Q4_K_M model's generated
        // tokens: 600 bytes 18.3-18.8 tokens/s, 1200 19.4-19.6, 2400 20.3-20.5, 4800 20.7-21.0,
        // 9600 20.0-20.2; into the second-level cache at 2048 bytes 14.5-14.6.
        constexpr std::size_t kAhead = (4800 + kBytes - 1) / kBytes * kBytes;
        for (std::size_t line = 0; line < kBytes; line += 64) {
            _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(row) + b * kBytes +
                                                       kAhead + line),
                         _MM_HINT_T0);
        }
        acc = step(acc, row + b * kBytes, x[b]);
    }
    return acc;
}

// A Q4_K super-block's step as kQuantTilePortable takes it from the unpacked row: the same exact
// integer sums (Sums: the int32 lanes of Σ level · scale · x from the 128 bytes of levels, the
// scales and mins, and the activations), then the same two fused multiply-adds.
template <class Sums> struct Q4KStep {
    [[gnu::always_inline]] ORGAN_TARGET float operator()(float acc, const std::byte* src,
                                                         const Q8KBlock& x) const {
        const __m128i scalesMins = q4KScalesMins(src + 4);
        return addSuperBlock(
            acc, src, x.d, superBlockTotals(Sums{}(src + 16, scalesMins, x.values), minSums(scalesMins, x)));
    }
};

// A Q6_K super-block's, the same way: levels q = level + 32 as unpackQ6KAvx2 makes them, less
// 32 · Σ scale · (sums of 16 x); Sums gives the int32 lanes of Σ q · scale · x from the
// super-block, its sixteen scales and the activations.
template <class Sums> struct Q6KStep {
    [[gnu::always_inline]] ORGAN_TARGET float operator()(float acc, const std::byte* src,
                                                         const Q8KBlock& x) const {
        const __m256i scales16 = q6KScales(src);
        return addQ6KSuperBlock(acc, src, x, Sums{}(src, scales16, x.values), scales16);
    }
};

// 32 bytes of levels at a time: their low nibbles (one sub-block) and their high ones (the next).
struct Q4KSumsAvx2 {
    ORGAN_TARGET __m256i operator()(const std::byte* levels, __m128i scalesMins, const std::int8_t* x) const {
        const __m256i nibble = _mm256_set1_epi8(0x0F);
        const __m256i scales = _mm256_broadcastsi128_si256(q4KScales(scalesMins));
        __m256i sum = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m256i v = load256(levels + 32 * k);
            const std::int8_t* xs = x + 64 * k;
            sum = _mm256_add_epi32(
                sum, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(v, nibble),
                                                            load256(reinterpret_cast<const std::byte*>(xs))),
                                       pickInt16(scales, 2 * k, 2 * k)));
            sum = _mm256_add_epi32(
                sum,
                _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble),
                                                       load256(reinterpret_cast<const std::byte*>(xs + 32))),
                                  pickInt16(scales, 2 * k + 1, 2 * k + 1)));
        }
        return sum;
    }
};

// 32 levels a register.
struct Q6KSumsAvx2 {
    ORGAN_TARGET __m256i operator()(const std::byte* src, __m256i scales16, const std::int8_t* x) const {
        __m256i sum = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int half = 0; half < 2; ++half) {
            __m256i q[4];
            q6KLevels(src, half, q);
            // This half's eight scales in both 128-bit halves.
            const __m256i scales = half == 0 ? _mm256_permute4x64_epi64(scales16, 0x44)
                                             : _mm256_permute4x64_epi64(scales16, 0xEE);
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m256i products = _mm256_maddubs_epi16(
                    q[k], load256(reinterpret_cast<const std::byte*>(x + 32 * (4 * half + k))));
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(products, pickInt16(scales, 2 * k, 2 * k + 1)));
            }
        }
        return sum;
    }
};

// A row's product on this instruction set: rowDot with a type's steps.
template <std::size_t kBytes, class Step>
ORGAN_TARGET float rowDotAvx2(const std::byte* row, const Q8KBlock* x, std::size_t blocks) {
    return rowDot<kBytes>(row, x, blocks, Step{});
}

// The eight rows' scales of sub-block `sub` as int32 lanes; their mins of sub-blocks 2p and 2p + 1
// as pairs of int16.
ORGAN_TARGET inline __m256i interleavedScales(const std::byte* g, int sub) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g + 32 + 8 * sub)));
}

ORGAN_TARGET inline __m256i interleavedMinPairs(const std::byte* g, int p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 96 + 16 * p)));
}

// Eight interleaved Q4_K rows (interleaveQ4K) · one q8_K column. A register of levels holds four
// of each row's, one row a 32-bit lane, and meets the same four activations in every lane, read
// as one 32-bit broadcast; Sums adds a lane's four byte products (sum(acc, levels, x)) and turns
// its sums into int32 (total(acc)). No prefetch: the group is one stream, which the hardware
// prefetchers follow (AMD Zen 4, 400 MB of rows: 25.4-25.7 GB/s without, 22.1-22.3 asking two
// groups ahead, 19.6-20.3 eight).
template <class Sums>
[[gnu::always_inline]] ORGAN_TARGET inline void interleavedDot(const std::byte* group, const Q8KBlock* x,
                                                               std::size_t blocks, float* out, Sums sums) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::byte* g = group + b * kQ4KGroupBytes;
        const std::int8_t* xs = x[b].values;
        __m256i scaled = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            // Sub-block 2k from the runs' low nibbles, 2k + 1 from their high ones.
            __m256i low = _mm256_setzero_si256();
            __m256i high = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int run = 0; run < 8; ++run) {
                const __m256i v = load256(g + 160 + 32 * (8 * k + run));
                std::int32_t lowX = 0;
                std::int32_t highX = 0;
                std::memcpy(&lowX, xs + 64 * k + 4 * run, 4);
                std::memcpy(&highX, xs + 64 * k + 32 + 4 * run, 4);
                low = sums.sum(low, _mm256_and_si256(v, nibble), _mm256_set1_epi32(lowX));
                high = sums.sum(high, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble),
                                _mm256_set1_epi32(highX));
            }
            scaled = _mm256_add_epi32(
                scaled,
                _mm256_add_epi32(_mm256_mullo_epi32(sums.total(low), interleavedScales(g, 2 * k)),
                                 _mm256_mullo_epi32(sums.total(high), interleavedScales(g, 2 * k + 1))));
        }
        // Σ mins · sums of 32 activations: the pairs of sums of 16 added, then a pair of sub-blocks a
        // multiply-add.
        const __m128i pairs =
            _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].sums)),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].sums + 8)));
        const __m256i both = _mm256_broadcastsi128_si256(pairs);
        const __m256i corrections = _mm256_add_epi32(
            _mm256_add_epi32(_mm256_madd_epi16(interleavedMinPairs(g, 0), _mm256_shuffle_epi32(both, 0x00)),
                             _mm256_madd_epi16(interleavedMinPairs(g, 1), _mm256_shuffle_epi32(both, 0x55))),
            _mm256_add_epi32(_mm256_madd_epi16(interleavedMinPairs(g, 2), _mm256_shuffle_epi32(both, 0xAA)),
                             _mm256_madd_epi16(interleavedMinPairs(g, 3), _mm256_shuffle_epi32(both, 0xFF))));
        // kQuantTilePortable's two fused multiply-adds, a row a lane.
        const __m256 xd = _mm256_set1_ps(x[b].d);
        const __m256 d =
            _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g))), xd);
        const __m256 dmin =
            _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16))), xd);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(scaled), acc);
        acc = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(corrections), acc);
    }
    _mm256_storeu_ps(out, acc);
}

// Byte products in pairs summed in 16 bits: a lane's 16-bit halves reach at most 8 runs · 2
// products · 15 · 127 = 30 480 over a sub-block, then one multiply-add by ones makes them 32 bits.
struct ByteSums16 {
    ORGAN_TARGET __m256i sum(__m256i acc, __m256i levels, __m256i x) const {
        return _mm256_add_epi16(acc, _mm256_maddubs_epi16(levels, x));
    }
    ORGAN_TARGET __m256i total(__m256i acc) const { return _mm256_madd_epi16(acc, _mm256_set1_epi16(1)); }
};

ORGAN_TARGET void interleavedDotAvx2(const std::byte* group, const Q8KBlock* x, std::size_t blocks,
                                     float* out) {
    interleavedDot(group, x, blocks, out, ByteSums16{});
}

// VNNI's four byte products summed into a 32-bit lane at once, already int32: with AVX-VNNI's
// encoding (VEX), or with AVX-512 VNNI's (EVEX, below), as CPUs have either without the other.
struct ByteSums32 {
    ORGAN_TARGET __m256i total(__m256i acc) const { return acc; }
};

struct ByteSumsAvxVnni : ByteSums32 {
    __attribute__((target("avx2,avxvnni"))) __m256i sum(__m256i acc, __m256i levels, __m256i x) const {
        return _mm256_dpbusd_avx_epi32(acc, levels, x);
    }
};

__attribute__((target("avx2,fma,f16c,avxvnni"))) void
interleavedDotAvxVnni(const std::byte* group, const Q8KBlock* x, std::size_t blocks, float* out) {
    interleavedDot(group, x, blocks, out, ByteSumsAvxVnni{});
}

#undef ORGAN_TARGET
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))

// The same with 512-bit registers: a register holds a 32-byte run's low nibbles (levels of one
// sub-block) in its low half and its high nibbles (the next sub-block) in its high half, against
// 64 contiguous activations.
struct Q4KSumsAvx512 {
    ORGAN_TARGET __m256i operator()(const std::byte* levels, __m128i scalesMins, const std::int8_t* x) const {
        const __m512i nibble = _mm512_set1_epi8(0x0F);
        const __m512i shifts = _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0);
        const __m512i scales = _mm512_broadcast_i32x4(q4KScales(scalesMins));
        __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m512i v = _mm512_broadcast_i64x4(load256(levels + 32 * k));
            const __m512i products =
                _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srlv_epi64(v, shifts), nibble),
                                     _mm512_loadu_si512(reinterpret_cast<const void*>(x + 64 * k)));
            // Scale 2k in the low half, 2k + 1 in the high one.
            const __m512i pick = _mm512_inserti64x4(_mm512_castsi256_si512(pickControl(2 * k, 2 * k)),
                                                    pickControl(2 * k + 1, 2 * k + 1), 1);
            sum = _mm512_add_epi32(sum, _mm512_madd_epi16(products, _mm512_shuffle_epi8(scales, pick)));
        }
        return _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
    }
};

// A Q6_K row · a q8_K column with 512-bit registers: a register holds the levels of 64
// consecutive values (two runs of 32: low nibbles of 64 bytes of ql, or their high nibbles, with
// their bits of qh), each 128-bit lane meeting the scale of its 16.
struct Q6KSumsAvx512 {
    ORGAN_TARGET __m256i operator()(const std::byte* src, __m256i scales16, const std::int8_t* x) const {
        const __m512i nibble = _mm512_set1_epi8(0x0F);
        const __m512i twoBits = _mm512_set1_epi8(0x03);
        const __m512i lowShifts = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
        const __m512i highShifts = _mm512_set_epi64(6, 6, 6, 6, 4, 4, 4, 4);
        __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int half = 0; half < 2; ++half) {
            const __m512i ql = _mm512_loadu_si512(reinterpret_cast<const void*>(src + 64 * half));
            const __m512i qh = _mm512_broadcast_i64x4(load256(src + 128 + 32 * half));
            const __m512i levels[2] = {
                _mm512_or_si512(
                    _mm512_and_si512(ql, nibble),
                    _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi64(qh, lowShifts), twoBits), 4)),
                _mm512_or_si512(
                    _mm512_and_si512(_mm512_srli_epi16(ql, 4), nibble),
                    _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi64(qh, highShifts), twoBits), 4))};
            // This half's eight scales in every 128-bit lane.
            const __m512i scales = _mm512_broadcast_i32x4(half == 0 ? _mm256_castsi256_si128(scales16)
                                                                    : _mm256_extracti128_si256(scales16, 1));
#pragma GCC unroll 2
            for (int k = 0; k < 2; ++k) {
                const __m512i products = _mm512_maddubs_epi16(
                    levels[k], _mm512_loadu_si512(reinterpret_cast<const void*>(x + 128 * half + 64 * k)));
                const __m512i pick = _mm512_inserti64x4(_mm512_castsi256_si512(pickControl(4 * k, 4 * k + 1)),
                                                        pickControl(4 * k + 2, 4 * k + 3), 1);
                sum = _mm512_add_epi32(sum, _mm512_madd_epi16(products, _mm512_shuffle_epi8(scales, pick)));
            }
        }
        return _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
    }
};

template <std::size_t kBytes, class Step>
ORGAN_TARGET float rowDotAvx512(const std::byte* row, const Q8KBlock* x, std::size_t blocks) {
    return rowDot<kBytes>(row, x, blocks, Step{});
}

// 256-bit registers all the same with AVX-512 VNNI: the eight rows are one.
struct ByteSumsAvx512Vnni : ByteSums32 {
    __attribute__((target("avx2,avx512f,avx512vl,avx512vnni"))) __m256i sum(__m256i acc, __m256i levels,
                                                                            __m256i x) const {
        return _mm256_dpbusd_epi32(acc, levels, x);
    }
};

__attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni"))) void
interleavedDotAvx512Vnni(const std::byte* group, const Q8KBlock* x, std::size_t blocks, float* out) {
    interleavedDot(group, x, blocks, out, ByteSumsAvx512Vnni{});
}

#undef ORGAN_TARGET

} // namespace

InterleavedDotFn interleavedQ4KDotX86(InstructionSet set) {
    if (set == InstructionSet::Portable) {
        return nullptr;
    }
    if (set == InstructionSet::Avx512Vnni) {
        return interleavedDotAvx512Vnni;
    }
    return set == InstructionSet::AvxVnni ? interleavedDotAvxVnni : interleavedDotAvx2;
}

UnpackFn superBlockUnpackerX86(TensorType type) {
    if (type == TensorType::Q4_K) {
        return unpackQ4KAvx2;
    }
    return type == TensorType::Q6_K ? unpackQ6KAvx2 : nullptr;
}

PackedRowDotFn packedRowDotX86(TensorType type, InstructionSet set) {
    const bool wide = set == InstructionSet::Avx512 || set == InstructionSet::Avx512Vnni;
    if (type == TensorType::Q4_K) {
        return wide ? rowDotAvx512<144, Q4KStep<Q4KSumsAvx512>> : rowDotAvx2<144, Q4KStep<Q4KSumsAvx2>>;
    }
    if (type == TensorType::Q6_K) {
        return wide ? rowDotAvx512<210, Q6KStep<Q6KSumsAvx512>> : rowDotAvx2<210, Q6KStep<Q6KSumsAvx2>>;
    }
    return nullptr;
}

} // namespace organ::detail

#else

namespace organ::detail {

UnpackFn superBlockUnpackerX86(TensorType) {
    return nullptr;
}

PackedRowDotFn packedRowDotX86(TensorType, InstructionSet) {
    return nullptr;
}

InterleavedDotFn interleavedQ4KDotX86(InstructionSet) {
    return nullptr;
}

} // namespace organ::detail

#endif
