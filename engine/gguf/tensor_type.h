#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace organ {

// ggml's tensor types, with the numbers GGUF stores. Gaps are types ggml removed
// (Q4_2, Q4_3, the repacked Q4_0_x_y and IQ4_NL_x_y); a file that uses them is refused.
enum class TensorType : std::uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
    Q2_0 = 42,
};

struct TensorTypeTraits {
    TensorType type;
    std::string_view name;   // as gguf-py and llama-quantize print it: "Q4_K", "IQ2_XXS"
    std::uint32_t blockSize; // elements per block
    std::uint32_t bytesPerBlock;
    bool quantized;
};

// Every type ggml knows today, in numeric order.
std::span<const TensorTypeTraits> allTensorTypes();

// Traits of a stored type number, or nullopt for an unknown or removed type.
std::optional<TensorTypeTraits> tensorTypeTraits(std::uint32_t stored);
const TensorTypeTraits& traitsOf(TensorType type);

std::string_view tensorTypeName(TensorType type);
std::optional<TensorType> tensorTypeFromName(std::string_view name);

// Bits per weight of a type: 8 * bytesPerBlock / blockSize.
double bitsPerWeight(TensorType type);

// The bytes `elements` values of `type` take as stored: whole blocks (callers check that
// `elements` is a multiple of the block size, and that the product fits).
std::uint64_t storedBytes(TensorType type, std::uint64_t elements);

} // namespace organ
