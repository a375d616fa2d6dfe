#pragma once

#include "gguf/tensor_type.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace organ {

// llama-quantize's file types that the engine writes. A K-quant file type is a mix: most tensors
// take the type of its name, some more bits (see chooseTensorTypes).
enum class QuantFileType {
    Q2_K,
    Q3_K_S,
    Q3_K_M,
    Q3_K_L,
    Q4_K_S,
    Q4_K_M,
    Q5_K_S,
    Q5_K_M,
    Q6_K,
    Q8_0,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    IQ4_NL,
    IQ4_XS,
    F16,
    BF16,
    F32
};

std::span<const QuantFileType> allQuantFileTypes();
std::string_view quantFileTypeName(QuantFileType type);
// As llama-quantize takes them: any case, and Q3_K, Q4_K, Q5_K for their _M mixes.
std::optional<QuantFileType> quantFileTypeFromName(std::string_view name);
// The type most tensors of the mix take.
TensorType defaultTensorType(QuantFileType type);
// llama.cpp's number for it (llama_ftype), which general.file_type records.
std::uint32_t llamaFileTypeNumber(QuantFileType type);

// What to quantize a model to: llama-quantize's options.
struct QuantizeRecipe {
    QuantFileType fileType = QuantFileType::Q4_K_M;
    // --tensor-type REGEX=TYPE, in order: the first pattern found in a tensor's name sets its
    // type (patterns are lower-cased, as llama-quantize does).
    std::vector<std::pair<std::string, TensorType>> tensorTypes;
    std::optional<TensorType> outputTensorType;   // --output-tensor-type
    std::optional<TensorType> tokenEmbeddingType; // --token-embedding-type
    bool pure = false;                            // --pure: no mix, every tensor the default type
    bool leaveOutputTensor = false;               // --leave-output-tensor
    std::string imatrix;                          // --imatrix: a path, empty for none
};

// Why a recipe cannot be used (a pattern that is not a regular expression, a type the engine
// does not write), or nullopt.
std::optional<std::string> quantizeRecipeProblem(const QuantizeRecipe& recipe);

// A tensor type by name in any case, as llama-quantize's options take it ("q8_0").
std::optional<TensorType> tensorTypeFromAnyCase(std::string_view name);

// "REGEX=TYPE" as --tensor-type takes it; false when malformed or the type is unknown.
bool parseTensorTypeOption(std::string_view text, std::pair<std::string, TensorType>& out);

} // namespace organ
