#pragma once

// The searches for a block's scale (and minimum) that the writers of quantize_kquants.cpp,
// quantize_iq4.cpp and quantize.cpp share. They follow ggml-quants.c step by step, float
// operation by float operation, so that a tensor written here has the bytes llama-quantize
// writes: a different order of additions would pick another scale now and then.
#include <bit>
#include <cstdint>

namespace organ::detail {

// Round to nearest, ties to even, for |v| < 2^22, by adding 1.5·2^23 and reading the mantissa
// (ggml's nearest_int: larger values give the same wrong but deterministic integer here).
inline int nearestInt(float v) {
    const float shifted = v + 12582912.0f;
    return static_cast<int>(std::bit_cast<std::uint32_t>(shifted) & 0x007FFFFFu) - 0x00400000;
}

// Blocks whose largest magnitude is below this are all zero (GROUP_MAX_EPS).
inline constexpr float kGroupMaxEps = 1e-15f;

// Symmetric levels -nmax … nmax-1 for n values, chosen to minimise Σ w (x − s·l)² with
// w = weights[i], or x² when weights is null; the scale is tried around -nmax/max in 19
// steps (make_qx_quants, rmse_type 1). L gets l + nmax; returns s.
float fitSymmetric(int n, int nmax, const float* x, std::int8_t* L, const float* weights);

// Q3_K without an importance matrix: levels -nmax … nmax-1 weighted by x², refined by moving
// one level at a time (make_q3_quants with rmse). L gets l + nmax; returns the scale.
float fitSymmetricRefined(int n, int nmax, const float* x, std::int8_t* L);

// Levels 0 … nmax with a minimum: x ≈ s·l − m, minimising Σ w·err (err = |e| when useMad, e²
// otherwise), the scale tried over nstep + 1 steps (make_qkx2_quants / make_qkx3_quants, which
// agree when weights are given). `theMin` gets m (≥ 0); `scratch` holds n levels.
float fitWithMin(int n, int nmax, const float* x, const float* weights, std::uint8_t* L, float* theMin,
                 std::uint8_t* scratch, float rmin, float rdelta, int nstep, bool useMad);

// Non-negative levels 0 … nmax for non-negative values (the scales and minimums of a super
// block), weighted by `weights` (make_qp_quants).
float fitPositive(int n, int nmax, const float* x, std::uint8_t* L, const float* weights);

} // namespace organ::detail
