#pragma once

// Shared by the writers' translation units: one block's encoder per type, as ggml-quants.c
// encodes it, with or without an importance matrix.
#include <cstddef>

namespace organ::detail {

// K-quants: one super-block of 256 values. `importance`: the importance matrix's 256 weights
// of these columns, or null (llama-quantize's path without one, which differs in more than the
// weights: other step counts, other fits).
void encodeQ2_K(const float* x, const float* importance, std::byte* out);
void encodeQ3_K(const float* x, const float* importance, std::byte* out);
void encodeQ4_K(const float* x, const float* importance, std::byte* out);
void encodeQ5_K(const float* x, const float* importance, std::byte* out);
void encodeQ6_K(const float* x, const float* importance, std::byte* out);

// IQ4_NL: one block of 32; IQ4_XS: one super-block of 256.
void encodeIQ4_NL(const float* x, const float* importance, std::byte* out);
void encodeIQ4_XS(const float* x, const float* importance, std::byte* out);

#if defined(__x86_64__) || defined(__i386__)
// Blocks of Q8_0, and `count` values as F16 or BF16, written with AVX2 (quantize_x86.cpp): the
// portable encoders' bytes.
void quantizeQ8_0Avx2(const float* x, std::size_t blocks, std::byte* out);
void encodeF16Avx2(const float* x, std::size_t count, std::byte* out);
void encodeBF16Avx2(const float* x, std::size_t count, std::byte* out);
#endif

} // namespace organ::detail
