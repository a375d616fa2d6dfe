#pragma once
// The x86 intrinsics, for the files that compile kernels per instruction set (each function with
// its set's target attribute). Include it inside `#if defined(__x86_64__) || defined(__i386__)`.
#include "quant/dequant_detail.h"

#include <immintrin.h>

// GCC 12's AVX-512 headers build some intrinsics (_mm512_broadcast_i64x4, _mm512_cvtepi32_ps, …)
// on a deliberately undefined register, which its own -Wuninitialized then reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__ // GCC's own warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace organ::detail {

// The half at p by the F16C conversion (exact; a signalling NaN comes out quiet, as the products it
// enters would make it anyway).
__attribute__((target("f16c"))) inline float halfAt(const std::byte* p) {
    return _cvtsh_ss(load16(p));
}

} // namespace organ::detail
