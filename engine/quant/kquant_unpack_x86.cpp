// The levels of Q4_K and Q6_K super-blocks unpacked 32 bytes at a time (AVX2): one column of
// activations (generation) meets each row once, so unpacking is then much of the work.
#include "quant/kquant_unpack.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace organ::detail {
namespace {

#define ORGAN_TARGET __attribute__((target("avx2")))

ORGAN_TARGET inline __m256i load256(const std::byte* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

ORGAN_TARGET inline void store256(std::uint8_t* p, __m256i v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(p), v);
}

// qs[128] from byte 16: 32 bytes give 32 levels in their low nibbles, then 32 in their high ones.
ORGAN_TARGET void unpackQ4KAvx2(const std::byte* src, Unpacked& u) {
    q4KFactors(src, u);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    for (int k = 0; k < 4; ++k) {
        const __m256i v = load256(src + 16 + 32 * k);
        store256(u.q + 64 * k, _mm256_and_si256(v, nibble));
        store256(u.q + 64 * k + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
    }
}

// Per half of 128 levels: ql[64] and qh[32]; run t of 32 takes nibble t / 2 of ql[32 · (t % 2) …]
// and bits 2t, 2t + 1 of qh as its bits 4 and 5.
ORGAN_TARGET void unpackQ6KAvx2(const std::byte* src, Unpacked& u) {
    q6KFactors(src, u);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i high = _mm256_set1_epi8(0x30);
    for (int half = 0; half < 2; ++half) {
        const __m256i a = load256(src + 64 * half);
        const __m256i b = load256(src + 64 * half + 32);
        const __m256i h = load256(src + 128 + 32 * half);
        std::uint8_t* out = u.q + 128 * half;
        store256(out, _mm256_or_si256(_mm256_and_si256(a, nibble),
                                      _mm256_and_si256(_mm256_slli_epi16(h, 4), high)));
        store256(out + 32, _mm256_or_si256(_mm256_and_si256(b, nibble),
                                           _mm256_and_si256(_mm256_slli_epi16(h, 2), high)));
        store256(out + 64, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), nibble),
                                           _mm256_and_si256(h, high)));
        store256(out + 96, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), nibble),
                                           _mm256_and_si256(_mm256_srli_epi16(h, 2), high)));
    }
}

#undef ORGAN_TARGET

} // namespace

UnpackFn superBlockUnpackerX86(TensorType type) {
    if (type == TensorType::Q4_K) {
        return unpackQ4KAvx2;
    }
    return type == TensorType::Q6_K ? unpackQ6KAvx2 : nullptr;
}

} // namespace organ::detail

#else

namespace organ::detail {

UnpackFn superBlockUnpackerX86(TensorType) {
    return nullptr;
}

} // namespace organ::detail

#endif
