#include "quant/kquant_unpack.h"

#include "quant/dequant_detail.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace organ::detail {

void setScales(Unpacked& u, const int* scalePer16, int bias) {
    // Whole runs of eight, which the compiler stores a vector at a time.
    for (int i = 0; i < 8; ++i) {
        const auto first = static_cast<std::int16_t>(scalePer16[2 * i]);
        const auto second = static_cast<std::int16_t>(scalePer16[2 * i + 1]);
        for (int k = 0; k < 8; ++k) {
            u.scales[i][k] = first;
            u.scales[i][8 + k] = second;
        }
    }
    for (int j = 0; j < 16; ++j) {
        u.correction[j] = static_cast<std::int16_t>(bias * scalePer16[j]);
    }
}

void q4KFactors(const std::byte* src, Unpacked& u) {
    const std::uint8_t* packed = bytes(src + 4);
    u.d = loadHalf(src);
    u.dmin = loadHalf(src + 2);
    u.hasMins = true;
    u.wideLevels = false;
    int scales[16];
    int mins[16];
    for (int sub = 0; sub < 8; ++sub) {
        scaleMin(sub, packed, scales[2 * sub], mins[2 * sub]);
        scales[2 * sub + 1] = scales[2 * sub];
        mins[2 * sub + 1] = mins[2 * sub];
    }
    setScales(u, scales, 0);
    for (int j = 0; j < 16; ++j) {
        u.correction[j] = static_cast<std::int16_t>(mins[j]);
    }
}

void q6KFactors(const std::byte* src, Unpacked& u) {
    const auto* packed = reinterpret_cast<const std::int8_t*>(src + 192);
    u.d = loadHalf(src + 208);
    u.hasMins = false;
    u.wideLevels = false;
    int scales[16];
    for (int j = 0; j < 16; ++j) {
        scales[j] = packed[j];
    }
    setScales(u, scales, 32);
}

void interleaveQ4K(const std::byte* rows, std::size_t blocks, std::byte* group) {
    for (std::size_t b = 0; b < blocks; ++b) {
        std::byte* out = group + b * kQ4KGroupBytes;
        for (std::size_t r = 0; r < kQ4KGroupRows; ++r) {
            const std::byte* src = rows + (r * blocks + b) * 144;
            std::memcpy(out + 2 * r, src, 2);
            std::memcpy(out + 16 + 2 * r, src + 2, 2);
            for (int sub = 0; sub < 8; ++sub) {
                int scale = 0;
                int min = 0;
                scaleMin(sub, bytes(src + 4), scale, min);
                out[32 + 8 * sub + r] = static_cast<std::byte>(scale);
                out[96 + 16 * (sub / 2) + 2 * r + sub % 2] = static_cast<std::byte>(min);
            }
            for (std::size_t run = 0; run < 32; ++run) {
                std::memcpy(out + 160 + 32 * run + 4 * r, src + 16 + 4 * run, 4);
            }
        }
    }
}

void interleavedQ4KDotPortable(const std::byte* group, const Q8KBlock* x, std::size_t blocks, float* out) {
    float acc[kQ4KGroupRows] = {};
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::uint8_t* g = bytes(group + b * kQ4KGroupBytes);
        for (std::size_t r = 0; r < kQ4KGroupRows; ++r) {
            std::int32_t scaled = 0;
            std::int32_t corrections = 0;
            for (int sub = 0; sub < 8; ++sub) {
                // Sub-block 2k takes the low nibbles of the runs of chunk k, 2k + 1 their high ones.
                std::int32_t sum = 0;
                for (int v = 0; v < 32; ++v) {
                    const std::uint8_t q = g[160 + 32 * (8 * (sub / 2) + v / 4) + 4 * r + v % 4];
                    sum += ((sub % 2 == 0 ? q : q >> 4) & 0xF) * std::int32_t(x[b].values[32 * sub + v]);
                }
                scaled += g[32 + 8 * sub + r] * sum;
                corrections += g[96 + 16 * (sub / 2) + 2 * r + sub % 2] *
                               (std::int32_t(x[b].sums[2 * sub]) + x[b].sums[2 * sub + 1]);
            }
            const float d = loadHalf(group + b * kQ4KGroupBytes + 2 * r);
            const float dmin = loadHalf(group + b * kQ4KGroupBytes + 16 + 2 * r);
            acc[r] = std::fma(d * x[b].d, static_cast<float>(scaled), acc[r]);
            acc[r] = std::fma(-(dmin * x[b].d), static_cast<float>(corrections), acc[r]);
        }
    }
    std::copy_n(acc, kQ4KGroupRows, out);
}

namespace {

// Q2_K: scales[16] (4-bit scale, 4-bit min), qs[64] (2 bits each), half d, half dmin. Levels
// 0-31 of each 128 are bits 0-1 of 32 bytes, 32-63 bits 2-3, …
void unpackQ2K(const std::byte* src, Unpacked& u) {
    const std::uint8_t* packed = bytes(src);
    const std::uint8_t* q = bytes(src + 16);
    u.d = loadHalf(src + 80);
    u.dmin = loadHalf(src + 82);
    u.hasMins = true;
    u.wideLevels = false;
    int scales[16];
    for (int j = 0; j < 16; ++j) {
        scales[j] = packed[j] & 0xF;
    }
    setScales(u, scales, 0);
    for (int j = 0; j < 16; ++j) {
        u.correction[j] = static_cast<std::int16_t>(packed[j] >> 4);
    }
    for (int e = 0; e < 256; ++e) {
        const int shift = 2 * ((e % 128) / 32);
        u.q[e] = static_cast<std::uint8_t>((q[32 * (e / 128) + e % 32] >> shift) & 3);
    }
}

// Q3_K: hmask[32], qs[64], scales[12], half d. A level is 2 bits of qs less 4 where its hmask
// bit is clear: −4 … 3, kept as 0 … 7.
void unpackQ3K(const std::byte* src, Unpacked& u) {
    const std::uint8_t* hmask = bytes(src);
    const std::uint8_t* q = bytes(src + 32);
    int scales[16];
    q3KScales(bytes(src + 96), scales);
    u.d = loadHalf(src + 108);
    u.hasMins = false;
    u.wideLevels = false;
    setScales(u, scales, 4);
    for (int e = 0; e < 256; ++e) {
        const int plane = e / 32; // 0 … 7: which 2 bits, in which half, and which hmask bit
        const int k = e % 32;
        const int low = (q[32 * (plane / 4) + k] >> (2 * (plane % 4))) & 3;
        u.q[e] = static_cast<std::uint8_t>(low + ((hmask[k] >> plane) & 1 ? 4 : 0));
    }
}

// Q4_K and Q5_K: half d, half dmin, scales[12] (eight 6-bit scales and mins, one pair per 32),
// for Q5_K qh[32] holding the fifth bits, then qs[128]: 64 levels per 32 bytes, low nibbles first.
template <bool kFifthBit> void unpackQ4orQ5K(const std::byte* src, Unpacked& u) {
    q4KFactors(src, u);
    const std::uint8_t* qh = bytes(src + 16);
    const std::uint8_t* q = bytes(src + (kFifthBit ? 48 : 16));
    for (int sub = 0; sub < 8; ++sub) {
        const std::uint8_t* bytesOfSub = q + 32 * (sub / 2);
        for (int l = 0; l < 32; ++l) {
            int level = sub % 2 == 0 ? bytesOfSub[l] & 0xF : bytesOfSub[l] >> 4;
            if (kFifthBit) {
                level += ((qh[l] >> sub) & 1) * 16;
            }
            u.q[32 * sub + l] = static_cast<std::uint8_t>(level);
        }
    }
}

// Q6_K: ql[128] (low nibbles), qh[64] (high 2 bits), scales[16] (signed), half d. Levels −32 … 31,
// kept as the stored 6 bits 0 … 63.
void unpackQ6K(const std::byte* src, Unpacked& u) {
    q6KFactors(src, u);
    for (int half = 0; half < 2; ++half) {
        const std::uint8_t* ql = bytes(src) + 64 * half;
        const std::uint8_t* qh = bytes(src + 128) + 32 * half;
        for (int t = 0; t < 4; ++t) { // four runs of 32: nibble (t / 2) of ql[l + 32 · (t % 2)]
            for (int l = 0; l < 32; ++l) {
                const int low = (ql[l + 32 * (t % 2)] >> (4 * (t / 2))) & 0xF;
                const int high = (qh[l] >> (2 * t)) & 3;
                u.q[128 * half + 32 * t + l] = static_cast<std::uint8_t>(low | (high << 4));
            }
        }
    }
}

// IQ4_XS: half d, u16 high scale bits, 4 bytes of low scale nibbles, qs[128]: per 32 levels 16
// bytes, low nibbles first, indexing the non-linear levels (−127 … 113, kept as 1 … 241).
void unpackIQ4XS(const std::byte* src, Unpacked& u) {
    const std::uint8_t* q = bytes(src + 8);
    u.d = loadHalf(src);
    u.hasMins = false;
    u.wideLevels = true;
    int scales[16];
    for (int sub = 0; sub < 8; ++sub) {
        scales[2 * sub] = scales[2 * sub + 1] = iq4XsScale(src, sub);
        for (int j = 0; j < 16; ++j) {
            u.q[32 * sub + j] = static_cast<std::uint8_t>(kIq4Levels[q[16 * sub + j] & 0xF] + 128);
            u.q[32 * sub + j + 16] = static_cast<std::uint8_t>(kIq4Levels[q[16 * sub + j] >> 4] + 128);
        }
    }
    setScales(u, scales, 128);
}

constexpr TypeEntry<UnpackFn> kUnpackers[] = {
    {TensorType::Q2_K, unpackQ2K},
    {TensorType::Q3_K, unpackQ3K},
    {TensorType::Q4_K, unpackQ4orQ5K<false>},
    {TensorType::Q5_K, unpackQ4orQ5K<true>},
    {TensorType::Q6_K, unpackQ6K},
    {TensorType::IQ4_XS, unpackIQ4XS},
};

} // namespace

UnpackFn superBlockUnpacker(TensorType type, InstructionSet set) {
    if (set != InstructionSet::Portable) {
        if (const UnpackFn fast = superBlockUnpackerX86(type)) {
            return fast;
        }
    }
    return entryOf(kUnpackers, type);
}

} // namespace organ::detail
