// K-quants: super-blocks of 256 elements with per-sub-block scales (ggml's Q2_K … Q8_K).
#include "quant/dequant_detail.h"

namespace organ::detail {
namespace {

// Q2_K: scales[16] (4-bit scale, 4-bit min), qs[64], half d, half dmin.
void decodeQ2_K(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 84) {
        const std::uint8_t* scales = bytes(src);
        const std::uint8_t* q = bytes(src + 16);
        const float d = loadHalf(src + 80);
        const float dmin = loadHalf(src + 82);
        int is = 0;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part) {
                    const std::uint8_t sc = scales[is++];
                    const float dl = d * (sc & 0xF);
                    const float ml = dmin * (sc >> 4);
                    for (int l = 0; l < 16; ++l) {
                        *out++ = dl * ((q[l + 16 * part] >> shift) & 3) - ml;
                    }
                }
            }
        }
    }
}

// Q3_K: hmask[32], qs[64], scales[12] (sixteen 6-bit signed scales), half d.
void decodeQ3_K(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 110) {
        const std::uint8_t* hmask = bytes(src);
        const std::uint8_t* q = bytes(src + 32);
        const std::uint8_t* packed = bytes(src + 96);
        const float d = loadHalf(src + 108);
        int scales[16];
        q3KScales(packed, scales);
        int is = 0;
        std::uint8_t m = 1;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int part = 0; part < 2; ++part) {
                    const float dl = d * scales[is++];
                    for (int l = 0; l < 16; ++l) {
                        const int k = l + 16 * part;
                        const int value = ((q[k] >> shift) & 3) - ((hmask[k] & m) != 0 ? 0 : 4);
                        *out++ = dl * value;
                    }
                }
            }
        }
    }
}

// Q4_K and Q5_K: half d, half dmin, scales[12] (eight 6-bit scales and mins), for Q5_K
// qh[32] holding the fifth bits (two bit planes per 64 elements), then qs[128].
template <bool kFifthBit> void decodeQ4orQ5_K(const std::byte* src, std::size_t blocks, float* out) {
    constexpr std::size_t kBlockBytes = kFifthBit ? 176 : 144;
    constexpr std::size_t kQuants = kFifthBit ? 48 : 16;
    for (std::size_t b = 0; b < blocks; ++b, src += kBlockBytes) {
        const float d = loadHalf(src);
        const float dmin = loadHalf(src + 2);
        const std::uint8_t* scales = bytes(src + 4);
        const std::uint8_t* qh = bytes(src + 16);
        const std::uint8_t* q = bytes(src + kQuants);
        std::uint8_t u1 = 1;
        std::uint8_t u2 = 2;
        for (int j = 0; j < 8; j += 2, q += 32, u1 <<= 2, u2 <<= 2) {
            int sc = 0;
            int mn = 0;
            scaleMin(j, scales, sc, mn);
            const float d1 = d * sc;
            const float m1 = dmin * mn;
            scaleMin(j + 1, scales, sc, mn);
            const float d2 = d * sc;
            const float m2 = dmin * mn;
            for (int l = 0; l < 32; ++l) {
                const int high = kFifthBit && (qh[l] & u1) != 0 ? 16 : 0;
                *out++ = d1 * ((q[l] & 0xF) + high) - m1;
            }
            for (int l = 0; l < 32; ++l) {
                const int high = kFifthBit && (qh[l] & u2) != 0 ? 16 : 0;
                *out++ = d2 * ((q[l] >> 4) + high) - m2;
            }
        }
    }
}

// Q6_K: ql[128], qh[64], scales[16] (signed), half d.
void decodeQ6_K(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 210) {
        const std::uint8_t* ql = bytes(src);
        const std::uint8_t* qh = bytes(src + 128);
        const auto* sc = reinterpret_cast<const std::int8_t*>(src + 192);
        const float d = loadHalf(src + 208);
        for (int half = 0; half < 2; ++half, out += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                out[l] = d * sc[is] * q1;
                out[l + 32] = d * sc[is + 2] * q2;
                out[l + 64] = d * sc[is + 4] * q3;
                out[l + 96] = d * sc[is + 6] * q4;
            }
        }
    }
}

// Q8_K: float d, qs[256], bsums[16] (sums of groups of 16, not needed for values).
void decodeQ8_K(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 292) {
        float d;
        std::memcpy(&d, src, 4);
        const auto* q = reinterpret_cast<const std::int8_t*>(src + 4);
        for (int j = 0; j < 256; ++j) {
            *out++ = d * q[j];
        }
    }
}

} // namespace

DecodeFn kQuantDecoder(TensorType type) {
    switch (type) {
    case TensorType::Q2_K:
        return decodeQ2_K;
    case TensorType::Q3_K:
        return decodeQ3_K;
    case TensorType::Q4_K:
        return decodeQ4orQ5_K<false>;
    case TensorType::Q5_K:
        return decodeQ4orQ5_K<true>;
    case TensorType::Q6_K:
        return decodeQ6_K;
    case TensorType::Q8_K:
        return decodeQ8_K;
    default:
        return nullptr;
    }
}

} // namespace organ::detail
