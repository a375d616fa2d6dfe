#pragma once

#include "gguf/tensor_type.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace organ {

// The types the engine can write from float values, as llama-quantize writes them (so a
// conversion gives the bytes llama.cpp would): F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS.
bool canQuantizeTo(TensorType type);
// Those types' names for a message: "F32, F16, …, IQ4_NL and IQ4_XS".
std::string writableTypesText();

// Whether llama-quantize writes `type` differently when given an importance matrix (all the
// block types above but Q8_0).
bool takesImportance(TensorType type);

// Encodes `blocks` whole blocks of floats into `out` as llama-quantize does without an
// importance matrix; `type` must be one canQuantizeTo accepts.
void quantizeBlocks(TensorType type, const float* in, std::size_t blocks, std::byte* out);

// Encodes `rows` rows of `rowLength` floats (a multiple of the block size) into `out`, weighing
// each column by `importance` (rowLength weights: an importance matrix's in_sum2 / counts) when
// it is not null, as llama-quantize does with --imatrix.
void quantizeRows(TensorType type, const float* in, std::size_t rows, std::size_t rowLength,
                  const float* importance, std::byte* out);

// The rows of rowLength values a thread decodes (or merges) and encodes at a time, while they are in
// its cache: about 64 Ki values, at least one row.
std::size_t rowsPerPiece(std::size_t rowLength);

// Rows [firstRow, firstRow + rows) of a tensor stored as `from` in `data` (rows of rowLength
// values) decoded and encoded as `to` into `out`, weighed by `importance` as quantizeRows does, on
// `threads` threads (0: one per core): each decodes and encodes rowsPerPiece rows at a time. The
// bytes of dequantizeRange followed by quantizeRows.
void requantizeRowsParallel(TensorType from, std::span<const std::byte> data, std::uint64_t firstRow,
                            std::size_t rows, std::size_t rowLength, TensorType to, const float* importance,
                            std::byte* out, unsigned threads);

// Float to bfloat16, rounding to nearest even; NaN stays a quiet NaN.
std::uint16_t floatToBfloat16(float value);

} // namespace organ
