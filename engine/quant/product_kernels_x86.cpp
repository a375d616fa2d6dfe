// The x86 tile kernels: product_kernels_ymm.inc and product_kernels_zmm.inc compiled once per
// instruction set, each function carrying its set's target attribute, so that the rest of the
// engine stays plain x86-64 and a CPU only ever runs the kernels it has.
#include "quant/product_kernels.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include "quant/x86_intrinsics.h"

namespace organ::detail {

namespace avx2 {
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c")))
#define ORGAN_VNNI 0
#include "quant/product_kernels_ymm.inc"
#undef ORGAN_TARGET
#undef ORGAN_VNNI
} // namespace avx2

namespace avxvnni {
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define ORGAN_VNNI 1
#include "quant/product_kernels_ymm.inc"
#undef ORGAN_TARGET
#undef ORGAN_VNNI
} // namespace avxvnni

namespace avx512 {
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))
#define ORGAN_VNNI 0
#define ORGAN_ZMM 1
#include "quant/product_kernels_ymm.inc"
#include "quant/product_kernels_zmm.inc"
#undef ORGAN_TARGET
#undef ORGAN_VNNI
#undef ORGAN_ZMM
} // namespace avx512

namespace avx512vnni {
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define ORGAN_VNNI 2
#define ORGAN_ZMM 1
#include "quant/product_kernels_ymm.inc"
#include "quant/product_kernels_zmm.inc"
#undef ORGAN_TARGET
#undef ORGAN_VNNI
#undef ORGAN_ZMM
} // namespace avx512vnni

const SetKernels* x86Kernels(InstructionSet set, bool narrowHalves) {
    // In the enum's order, after portable; the sets without 512-bit F16 tiles have one table.
    static const SetKernels* const kSets[2][4] = {
        {&avx2::kKernels, &avxvnni::kKernels, &avx512::kKernels, &avx512vnni::kKernels},
        {&avx2::kKernels, &avxvnni::kKernels, &avx512::kKernelsNarrowHalves,
         &avx512vnni::kKernelsNarrowHalves}};
    return set == InstructionSet::Portable ? nullptr : kSets[narrowHalves ? 1 : 0][static_cast<int>(set) - 1];
}

} // namespace organ::detail

#else

namespace organ::detail {

const SetKernels* x86Kernels(InstructionSet, bool) {
    return nullptr;
}

} // namespace organ::detail

#endif
