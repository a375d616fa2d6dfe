#include "avxvnni_as_evex.h"

#include <bit>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include "quant/x86_intrinsics.h"

#include <cstring>

namespace organ::detail::avxvnniAsEvex {
// ORGAN_VNNI 2 picks the EVEX forms of the two VNNI instructions; without ORGAN_ZMM the file
// makes the 256-bit table the AVX-VNNI set has (ORGAN_VNNI 1 differs only in those two forms).
#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))
#define ORGAN_VNNI 2
#include "quant/product_kernels_ymm.inc"
#undef ORGAN_TARGET
#undef ORGAN_VNNI
} // namespace organ::detail::avxvnniAsEvex

namespace organ::test {

const detail::SetKernels* avxVnniKernelsAsEvex() {
    const bool runs = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512vnni");
    return runs ? &detail::avxvnniAsEvex::kKernels : nullptr;
}

} // namespace organ::test

#else

namespace organ::test {

const detail::SetKernels* avxVnniKernelsAsEvex() {
    return nullptr;
}

} // namespace organ::test

#endif

namespace organ::test {

QString firstBitDifference(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size()) {
        return QStringLiteral("%1 values, the portable kernels %2").arg(got.size()).arg(want.size());
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i])) {
            return QStringLiteral("[%1]: %2, the portable kernels %3").arg(i).arg(got[i]).arg(want[i]);
        }
    }
    return {};
}

} // namespace organ::test
