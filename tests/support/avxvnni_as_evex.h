#pragma once

#include "quant/product_kernels.h"

#include <QString>
#include <vector>

namespace organ::test {

// The AVX-VNNI set's tile kernels (quant/product_kernels_ymm.inc with VNNI, the source
// product_kernels_x86.cpp builds for that set) built once more with AVX-512 VNNI's encoding of the
// same instructions on 256-bit registers (EVEX) instead of AVX-VNNI's (VEX). A CPU with AVX-512
// VNNI and no AVX-VNNI (AMD Zen 4) cannot run that set, but runs this build of its source, which
// differs from it only in how vpdpbusd and vpdpwssd are encoded: the tests hold it to the portable
// kernels' bits. Null where the CPU lacks AVX-512 VNNI or VL (the tests say so as they skip).
const detail::SetKernels* avxVnniKernelsAsEvex();

// Empty when `got` has `want`'s bits everywhere, else where the first difference is and both values.
QString firstBitDifference(const std::vector<float>& got, const std::vector<float>& want);

} // namespace organ::test
