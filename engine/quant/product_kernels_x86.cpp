// The x86 tile kernels: product_kernels_ymm.inc and product_kernels_zmm.inc compiled once per
// instruction set, each function carrying its set's target attribute, so that the rest of the
// engine stays plain x86-64 and a CPU only ever runs the kernels it has.
#include "quant/product_kernels.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

// GCC 12's AVX-512 headers build some intrinsics (_mm512_broadcast_i64x4, _mm512_cvtepi32_ps,
// …) on a deliberately undefined register, which its own -Wuninitialized then reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace organ::detail {

namespace avx2 {
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c")))
#define ORGAN_VNNI 0
#include "quant/product_kernels_ymm.inc"
#undef ORGAN_UNROLL
#undef ORGAN_TARGET
#undef ORGAN_VNNI
} // namespace avx2

namespace avxvnni {
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define ORGAN_VNNI 1
#include "quant/product_kernels_ymm.inc"
#undef ORGAN_UNROLL
#undef ORGAN_TARGET
#undef ORGAN_VNNI
} // namespace avxvnni

namespace avx512 {
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))
#define ORGAN_VNNI 0
#include "quant/product_kernels_ymm.inc"
#include "quant/product_kernels_zmm.inc"
#undef ORGAN_TARGET
#undef ORGAN_VNNI
} // namespace avx512

namespace avx512vnni {
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define ORGAN_VNNI 2
#include "quant/product_kernels_ymm.inc"
#include "quant/product_kernels_zmm.inc"
#undef ORGAN_TARGET
#undef ORGAN_VNNI
} // namespace avx512vnni

// The kernels of `set` among those of each x86 set; nullptr for portable.
template <class Kernels>
const Kernels* bySet(InstructionSet set, const Kernels& avx2, const Kernels& avxVnni, const Kernels& avx512,
                     const Kernels& avx512Vnni) {
    const Kernels* const kernels[] = {nullptr, &avx2, &avxVnni, &avx512, &avx512Vnni}; // the enum's order
    return kernels[static_cast<int>(set)];
}

// Tile shapes: sixteen 256-bit registers (AVX2, AVX-VNNI) hold 4 × 2 accumulators beside their
// operands; thirty-two 512-bit ones 4 × 8 products (two to a register).
const Q80Kernels* q80KernelsX86(InstructionSet set) {
    static const Q80Kernels kAvx2{{4, 2, avx2::q80Tile<4, 2>}, {4, 1, avx2::q80Tile<4, 1>}};
    static const Q80Kernels kAvxVnni{{4, 2, avxvnni::q80Tile<4, 2>}, {4, 1, avxvnni::q80Tile<4, 1>}};
    static const Q80Kernels kAvx512{{4, 8, avx512::q80TileWide<4, 4>}, {4, 1, avx512::q80Tile<4, 1>}};
    static const Q80Kernels kAvx512Vnni{{4, 8, avx512vnni::q80TileWide<4, 4>},
                                        {4, 1, avx512vnni::q80Tile<4, 1>}};
    return bySet(set, kAvx2, kAvxVnni, kAvx512, kAvx512Vnni);
}

const KQuantKernels* kQuantKernelsX86(InstructionSet set) {
    static const KQuantKernels kAvx2{{4, 2, avx2::kQuantTile<4, 2>}, {8, 1, avx2::kQuantTile<8, 1>}};
    static const KQuantKernels kAvxVnni{{4, 2, avxvnni::kQuantTile<4, 2>}, {8, 1, avxvnni::kQuantTile<8, 1>}};
    static const KQuantKernels kAvx512{{4, 4, avx512::kQuantTileWide<4, 4>},
                                       {8, 1, avx512::kQuantTileWide<8, 1>}};
    static const KQuantKernels kAvx512Vnni{{4, 4, avx512vnni::kQuantTileWide<4, 4>},
                                           {8, 1, avx512vnni::kQuantTileWide<8, 1>}};
    return bySet(set, kAvx2, kAvxVnni, kAvx512, kAvx512Vnni);
}

} // namespace organ::detail

#else

namespace organ::detail {

const Q80Kernels* q80KernelsX86(InstructionSet) {
    return nullptr;
}

const KQuantKernels* kQuantKernelsX86(InstructionSet) {
    return nullptr;
}

} // namespace organ::detail

#endif
