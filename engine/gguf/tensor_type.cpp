#include "gguf/tensor_type.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace organ {
namespace {

// Block sizes and bytes per block from ggml's block structs (ggml-common.h).
constexpr std::array kTypes{
    TensorTypeTraits{TensorType::F32, "F32", 1, 4, false},
    TensorTypeTraits{TensorType::F16, "F16", 1, 2, false},
    TensorTypeTraits{TensorType::Q4_0, "Q4_0", 32, 18, true},
    TensorTypeTraits{TensorType::Q4_1, "Q4_1", 32, 20, true},
    TensorTypeTraits{TensorType::Q5_0, "Q5_0", 32, 22, true},
    TensorTypeTraits{TensorType::Q5_1, "Q5_1", 32, 24, true},
    TensorTypeTraits{TensorType::Q8_0, "Q8_0", 32, 34, true},
    TensorTypeTraits{TensorType::Q8_1, "Q8_1", 32, 36, true},
    TensorTypeTraits{TensorType::Q2_K, "Q2_K", 256, 84, true},
    TensorTypeTraits{TensorType::Q3_K, "Q3_K", 256, 110, true},
    TensorTypeTraits{TensorType::Q4_K, "Q4_K", 256, 144, true},
    TensorTypeTraits{TensorType::Q5_K, "Q5_K", 256, 176, true},
    TensorTypeTraits{TensorType::Q6_K, "Q6_K", 256, 210, true},
    TensorTypeTraits{TensorType::Q8_K, "Q8_K", 256, 292, true},
    TensorTypeTraits{TensorType::IQ2_XXS, "IQ2_XXS", 256, 66, true},
    TensorTypeTraits{TensorType::IQ2_XS, "IQ2_XS", 256, 74, true},
    TensorTypeTraits{TensorType::IQ3_XXS, "IQ3_XXS", 256, 98, true},
    TensorTypeTraits{TensorType::IQ1_S, "IQ1_S", 256, 50, true},
    TensorTypeTraits{TensorType::IQ4_NL, "IQ4_NL", 32, 18, true},
    TensorTypeTraits{TensorType::IQ3_S, "IQ3_S", 256, 110, true},
    TensorTypeTraits{TensorType::IQ2_S, "IQ2_S", 256, 82, true},
    TensorTypeTraits{TensorType::IQ4_XS, "IQ4_XS", 256, 136, true},
    TensorTypeTraits{TensorType::I8, "I8", 1, 1, false},
    TensorTypeTraits{TensorType::I16, "I16", 1, 2, false},
    TensorTypeTraits{TensorType::I32, "I32", 1, 4, false},
    TensorTypeTraits{TensorType::I64, "I64", 1, 8, false},
    TensorTypeTraits{TensorType::F64, "F64", 1, 8, false},
    TensorTypeTraits{TensorType::IQ1_M, "IQ1_M", 256, 56, true},
    TensorTypeTraits{TensorType::BF16, "BF16", 1, 2, false},
    TensorTypeTraits{TensorType::TQ1_0, "TQ1_0", 256, 54, true},
    TensorTypeTraits{TensorType::TQ2_0, "TQ2_0", 256, 66, true},
    TensorTypeTraits{TensorType::MXFP4, "MXFP4", 32, 17, true},
    TensorTypeTraits{TensorType::NVFP4, "NVFP4", 64, 36, true},
    TensorTypeTraits{TensorType::Q1_0, "Q1_0", 128, 18, true},
    TensorTypeTraits{TensorType::Q2_0, "Q2_0", 64, 18, true},
};

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::toupper(static_cast<unsigned char>(x)) ==
                      std::toupper(static_cast<unsigned char>(y));
           });
}

} // namespace

std::span<const TensorTypeTraits> allTensorTypes() {
    return kTypes;
}

std::optional<TensorTypeTraits> tensorTypeTraits(std::uint32_t stored) {
    for (const auto& traits : kTypes) {
        if (static_cast<std::uint32_t>(traits.type) == stored) {
            return traits;
        }
    }
    return std::nullopt;
}

const TensorTypeTraits& traitsOf(TensorType type) {
    for (const auto& traits : kTypes) {
        if (traits.type == type) {
            return traits;
        }
    }
    return kTypes.front();
}

std::string_view tensorTypeName(TensorType type) {
    return traitsOf(type).name;
}

std::optional<TensorType> tensorTypeFromName(std::string_view name) {
    for (const auto& traits : kTypes) {
        if (equalsIgnoringCase(traits.name, name)) {
            return traits.type;
        }
    }
    return std::nullopt;
}

std::uint64_t storedBytes(TensorType type, std::uint64_t elements) {
    const auto& traits = traitsOf(type);
    return elements / traits.blockSize * traits.bytesPerBlock;
}

double bitsPerWeight(TensorType type) {
    const auto& traits = traitsOf(type);
    return 8.0 * traits.bytesPerBlock / traits.blockSize;
}

} // namespace organ
