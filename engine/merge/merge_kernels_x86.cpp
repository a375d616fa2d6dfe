// AVX2 and AVX-512 kernels of the merger (merge_kernels.h): 8 or 16 values at a time, each the
// portable kernel's float operations in the same order (this file is compiled without contracting
// a multiply and an add into one), so they give the same bits.
#include "merge/merge_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include "quant/x86_intrinsics.h"

#include <array>
#include <bit>

namespace organ::detail {
namespace {

#define ORGAN_AVX2 __attribute__((target("avx2,fma,f16c,popcnt")))
#define ORGAN_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c,popcnt")))

// The lanes of a mask of 8 packed to the low end: for each mask, the lanes that are set, four bits
// each, the lowest first.
constexpr std::array<std::uint32_t, 256> kLeftPack = [] {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t mask = 0; mask < 256; ++mask) {
        std::uint32_t packed = 0;
        std::uint32_t at = 0;
        for (std::uint32_t lane = 0; lane < 8; ++lane) {
            if (((mask >> lane) & 1) != 0) {
                packed |= lane << (4 * at++);
            }
        }
        table[mask] = packed;
    }
    return table;
}();

template <bool WithBase>
ORGAN_AVX2 std::size_t gatherWindowAvx2(const float* values, const float* base, std::size_t n,
                                        std::uint32_t low, std::uint32_t high, std::uint32_t* kept,
                                        std::uint64_t& above) {
    // Keys' high 16 bits are below 0x8000 and the window's ends at most 0xFFFF: signed compares
    // order them as unsigned ones would.
    const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
    const __m256i belowLow = _mm256_set1_epi32(static_cast<int>(low) - 1);
    const __m256i top = _mm256_set1_epi32(static_cast<int>(high));
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i nibble = _mm256_set1_epi32(0xF);
    std::size_t m = 0;
    __m256i over = _mm256_setzero_si256(); // per lane, negated (a compare is −1): at most n / 8
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_loadu_ps(values + j);
        if constexpr (WithBase) {
            v = _mm256_sub_ps(v, _mm256_loadu_ps(base + j));
        }
        const __m256i key = _mm256_and_si256(_mm256_castps_si256(v), magnitude);
        const __m256i bucket = _mm256_srli_epi32(key, 16);
        const __m256i overTop = _mm256_cmpgt_epi32(bucket, top);
        const __m256i in = _mm256_andnot_si256(overTop, _mm256_cmpgt_epi32(bucket, belowLow));
        const auto inMask = static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(in)));
        over = _mm256_add_epi32(over, overTop);
        const __m256i lanes = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(kLeftPack[inMask])), shifts), nibble);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(kept + m), _mm256_permutevar8x32_epi32(key, lanes));
        m += static_cast<std::size_t>(std::popcount(inMask));
    }
    alignas(32) std::int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), over);
    for (const std::int32_t minus : lanes) {
        above += static_cast<std::uint64_t>(-static_cast<std::int64_t>(minus));
    }
    return m + gatherWindowFrom(values, base, j, n, low, high, kept + m, above);
}

// A model's values and the keys it keeps, in registers. Keys are at most 0x7FFFFFFF and the limits
// at most 0x80000000: "key >= low" is "key > low − 1" and "key < high" is "not key > high − 1" in
// signed compares (low or high 0 giving −1).
struct ConsensusInput256 {
    const float* values;
    __m256 weight;
    __m256i belowLow;
    __m256i belowHigh;
};

ORGAN_AVX2 inline ConsensusInput256 inRegisters256(const ConsensusInput& model) {
    return {model.values, _mm256_set1_ps(model.weight), _mm256_set1_epi32(static_cast<int>(model.low - 1)),
            _mm256_set1_epi32(static_cast<int>(model.high - 1))};
}

ORGAN_AVX2 inline const ConsensusInput256& inRegisters256(const ConsensusInput256& model) {
    return model;
}

ORGAN_AVX2 inline __m256 cutDeltaAvx2(const ConsensusInput256& model, __m256 base, std::size_t j) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(model.values + j), base);
    const __m256i key = _mm256_and_si256(_mm256_castps_si256(d), _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i pastHigh = _mm256_cmpgt_epi32(key, model.belowHigh);
    return _mm256_and_ps(
        d, _mm256_castsi256_ps(_mm256_andnot_si256(pastHigh, _mm256_cmpgt_epi32(key, model.belowLow))));
}

// Values j to j + 8. An entry agrees with the elected sign when it is above 0 with its sign turned
// where the sum's is not at or above 0 (neither ±0 nor NaN ever does).
template <std::size_t Held, typename Model>
ORGAN_AVX2 inline __attribute__((always_inline)) void signConsensus8(const Model* models, std::size_t count,
                                                                     const float* base, std::size_t j,
                                                                     bool normalize, float* out) {
    const __m256 zero = _mm256_setzero_ps();
    if constexpr (Held != 0) {
        count = Held;
    }
    const __m256 b = _mm256_loadu_ps(base + j);
    __m256 held[Held != 0 ? Held : 1];
    __m256 sum = zero;
    for (std::size_t i = 0; i < count; ++i) {
        const ConsensusInput256& model = inRegisters256(models[i]);
        const __m256 x = cutDeltaAvx2(model, b, j);
        if constexpr (Held != 0) {
            held[i] = x;
        }
        sum = _mm256_add_ps(sum, _mm256_mul_ps(model.weight, x));
    }
    const __m256 turned =
        _mm256_andnot_ps(_mm256_cmp_ps(sum, zero, _CMP_GE_OQ),
                         _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))));
    __m256 agreed = zero;
    __m256 divisor = zero;
    for (std::size_t i = 0; i < count; ++i) {
        const ConsensusInput256& model = inRegisters256(models[i]);
        const __m256 v = _mm256_mul_ps(model.weight, Held != 0 ? held[i] : cutDeltaAvx2(model, b, j));
        const __m256 agrees = _mm256_cmp_ps(_mm256_xor_ps(v, turned), zero, _CMP_GT_OQ);
        agreed = _mm256_add_ps(agreed, _mm256_and_ps(agrees, v));
        divisor = _mm256_add_ps(divisor, _mm256_and_ps(agrees, model.weight));
    }
    if (normalize) {
        const __m256 d =
            _mm256_blendv_ps(divisor, _mm256_set1_ps(1.0f), _mm256_cmp_ps(divisor, zero, _CMP_EQ_OQ));
        agreed = _mm256_div_ps(agreed, d);
    }
    _mm256_storeu_ps(out + j, _mm256_add_ps(b, agreed));
}

// Held: the models' count when it is small, their cut task vectors then kept in registers between
// the sum and the election, and their constants throughout; 0: any count, each computed again and
// the constants loaded for each 8 values.
template <std::size_t Held>
ORGAN_AVX2 void signConsensusAvx2(const ConsensusInput* models, std::size_t count, const float* base,
                                  std::size_t n, bool normalize, float* out) {
    std::size_t j = 0;
    if constexpr (Held != 0) {
        ConsensusInput256 held[Held];
        for (std::size_t i = 0; i < Held; ++i) {
            held[i] = inRegisters256(models[i]);
        }
        for (; j + 8 <= n; j += 8) {
            signConsensus8<Held>(held, Held, base, j, normalize, out);
        }
    } else {
        for (; j + 8 <= n; j += 8) {
            signConsensus8<Held>(models, count, base, j, normalize, out);
        }
    }
    signConsensusFrom(models, count, base, j, n, normalize, out);
}

#define ORGAN_AVX512_INLINE ORGAN_AVX512 inline __attribute__((always_inline))

// The window's keys among values j to j + 16 (those of `lanes`) at kept[m], m advanced past them;
// the lanes above the window counted in `over`.
template <bool WithBase>
ORGAN_AVX512_INLINE void gatherWindow16(const float* values, const float* base, std::size_t j,
                                        __mmask16 lanes, __m512i bottom, __m512i top, __m512i width,
                                        std::uint32_t* kept, std::size_t& m, __m512i& over) {
    __m512 v = _mm512_maskz_loadu_ps(lanes, values + j);
    if constexpr (WithBase) {
        v = _mm512_sub_ps(v, _mm512_maskz_loadu_ps(lanes, base + j));
    }
    const __m512i key = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF));
    const __m512i bucket = _mm512_srli_epi32(key, 16);
    over = _mm512_mask_add_epi32(over, _mm512_mask_cmpgt_epu32_mask(lanes, bucket, top), over,
                                 _mm512_set1_epi32(1));
    const __mmask16 in = _mm512_mask_cmple_epu32_mask(lanes, _mm512_sub_epi32(bucket, bottom), width);
    _mm512_storeu_si512(kept + m, _mm512_maskz_compress_epi32(in, key));
    m += static_cast<std::size_t>(std::popcount(static_cast<std::uint32_t>(in)));
}

// 16 at a time; the last few through masked loads.
template <bool WithBase>
ORGAN_AVX512 std::size_t gatherWindowAvx512(const float* values, const float* base, std::size_t n,
                                            std::uint32_t low, std::uint32_t high, std::uint32_t* kept,
                                            std::uint64_t& above) {
    const __m512i bottom = _mm512_set1_epi32(static_cast<int>(low));
    const __m512i top = _mm512_set1_epi32(static_cast<int>(high));
    const __m512i width = _mm512_set1_epi32(static_cast<int>(high - low));
    std::size_t m = 0;
    __m512i over = _mm512_setzero_si512(); // per lane: at most n / 16
    std::size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        gatherWindow16<WithBase>(values, base, j, 0xFFFF, bottom, top, width, kept, m, over);
    }
    if (j < n) {
        const auto lanes = static_cast<__mmask16>((1u << (n - j)) - 1);
        gatherWindow16<WithBase>(values, base, j, lanes, bottom, top, width, kept, m, over);
    }
    above += static_cast<std::uint32_t>(_mm512_reduce_add_epi32(over));
    return m;
}

// A model's values and the keys it keeps, in registers: [low, low + width).
struct ConsensusInput512 {
    const float* values;
    __m512 weight;
    __m512i low;
    __m512i width;
};

ORGAN_AVX512_INLINE ConsensusInput512 inRegisters(const ConsensusInput& model) {
    const std::uint32_t width = model.high > model.low ? model.high - model.low : 0;
    return {model.values, _mm512_set1_ps(model.weight), _mm512_set1_epi32(static_cast<int>(model.low)),
            _mm512_set1_epi32(static_cast<int>(width))};
}

ORGAN_AVX512_INLINE const ConsensusInput512& inRegisters(const ConsensusInput512& model) {
    return model;
}

ORGAN_AVX512_INLINE __m512 cutDeltaAvx512(const ConsensusInput512& model, __m512 base, std::size_t j,
                                          __mmask16 lanes) {
    const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, model.values + j), base);
    const __m512i key = _mm512_and_si512(_mm512_castps_si512(d), _mm512_set1_epi32(0x7FFFFFFF));
    return _mm512_maskz_mov_ps(_mm512_cmplt_epu32_mask(_mm512_sub_epi32(key, model.low), model.width), d);
}

// Values j to j + 16 (those of `lanes`). An entry agrees with the elected sign when it is above 0
// with its sign turned where the sum is not at or above 0 (neither ±0 nor NaN ever does). The sums
// of the entries that agree and of their weights start at +0 and add nothing that is ±0, so they are
// never −0: adding only where an entry agrees gives the bits of adding +0 where it does not.
template <std::size_t Held, typename Model>
ORGAN_AVX512_INLINE void signConsensus16(const Model* models, std::size_t count, const float* base,
                                         std::size_t j, __mmask16 lanes, bool normalize, float* out) {
    if constexpr (Held != 0) {
        count = Held;
    }
    const __m512 zero = _mm512_setzero_ps();
    const __m512 b = _mm512_maskz_loadu_ps(lanes, base + j);
    __m512 held[Held != 0 ? Held : 1];
    __m512 sum = zero;
    for (std::size_t i = 0; i < count; ++i) {
        const ConsensusInput512& model = inRegisters(models[i]);
        const __m512 x = cutDeltaAvx512(model, b, j, lanes);
        if constexpr (Held != 0) {
            held[i] = x;
        }
        sum = _mm512_add_ps(sum, _mm512_mul_ps(model.weight, x));
    }
    const __m512i turned =
        _mm512_maskz_mov_epi32(static_cast<__mmask16>(~_mm512_cmp_ps_mask(sum, zero, _CMP_GE_OQ)),
                               _mm512_set1_epi32(static_cast<int>(0x80000000u)));
    __m512 agreed = zero;
    __m512 divisor = zero;
    for (std::size_t i = 0; i < count; ++i) {
        const ConsensusInput512& model = inRegisters(models[i]);
        const __m512 v =
            _mm512_mul_ps(model.weight, Held != 0 ? held[i] : cutDeltaAvx512(model, b, j, lanes));
        const __mmask16 agrees = _mm512_cmp_ps_mask(
            _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), turned)), zero, _CMP_GT_OQ);
        agreed = _mm512_mask_add_ps(agreed, agrees, agreed, v);
        divisor = _mm512_mask_add_ps(divisor, agrees, divisor, model.weight);
    }
    if (normalize) {
        const __m512 d =
            _mm512_mask_mov_ps(divisor, _mm512_cmp_ps_mask(divisor, zero, _CMP_EQ_OQ), _mm512_set1_ps(1.0f));
        agreed = _mm512_div_ps(agreed, d);
    }
    _mm512_mask_storeu_ps(out + j, lanes, _mm512_add_ps(b, agreed));
}

// The values of n, 16 at a time, the last few through masked loads and stores.
template <std::size_t Held, typename Model>
ORGAN_AVX512_INLINE void signConsensusRun(const Model* models, std::size_t count, const float* base,
                                          std::size_t n, bool normalize, float* out) {
    std::size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        signConsensus16<Held>(models, count, base, j, 0xFFFF, normalize, out);
    }
    if (j < n) {
        const auto lanes = static_cast<__mmask16>((1u << (n - j)) - 1);
        signConsensus16<Held>(models, count, base, j, lanes, normalize, out);
    }
}

// Held: as signConsensusAvx2's; the held models' constants stay in registers, any other count's are
// loaded for each 16 values.
template <std::size_t Held>
ORGAN_AVX512 void signConsensusAvx512(const ConsensusInput* models, std::size_t count, const float* base,
                                      std::size_t n, bool normalize, float* out) {
    if constexpr (Held != 0) {
        ConsensusInput512 held[Held];
        for (std::size_t i = 0; i < Held; ++i) {
            held[i] = inRegisters(models[i]);
        }
        signConsensusRun<Held>(held, Held, base, n, normalize, out);
    } else {
        signConsensusRun<Held>(models, count, base, n, normalize, out);
    }
}

// A gathering kernel's loop compiled with the base and without.
template <GatherWindowFn WithBase, GatherWindowFn WithoutBase>
std::size_t gatherWindowOf(const float* values, const float* base, std::size_t n, std::uint32_t low,
                           std::uint32_t high, std::uint32_t* kept, std::uint64_t& above) {
    return base != nullptr ? WithBase(values, base, n, low, high, kept, above)
                           : WithoutBase(values, base, n, low, high, kept, above);
}

// A consensus kernel compiled for 1, 2 and 3 models held in registers, and for any count.
template <SignConsensusFn One, SignConsensusFn Two, SignConsensusFn Three, SignConsensusFn Any>
void signConsensusOf(const ConsensusInput* models, std::size_t count, const float* base, std::size_t n,
                     bool normalize, float* out) {
    constexpr SignConsensusFn kHeld[] = {Any, One, Two, Three};
    kHeld[count < 4 ? count : 0](models, count, base, n, normalize, out);
}

constexpr MergeKernels kAvx2{
    gatherWindowOf<gatherWindowAvx2<true>, gatherWindowAvx2<false>>,
    signConsensusOf<signConsensusAvx2<1>, signConsensusAvx2<2>, signConsensusAvx2<3>, signConsensusAvx2<0>>};
constexpr MergeKernels kAvx512{gatherWindowOf<gatherWindowAvx512<true>, gatherWindowAvx512<false>>,
                               signConsensusOf<signConsensusAvx512<1>, signConsensusAvx512<2>,
                                               signConsensusAvx512<3>, signConsensusAvx512<0>>};

} // namespace

const MergeKernels* x86MergeKernels(InstructionSet set) {
    return set == InstructionSet::Avx512 || set == InstructionSet::Avx512Vnni ? &kAvx512 : &kAvx2;
}

} // namespace organ::detail

#endif
