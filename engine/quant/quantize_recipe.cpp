// llama-quantize's file types and options, by name as it takes them.
#include "quant/quantize_recipe.h"

#include "quant/quantize.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace organ {
namespace {

using FT = QuantFileType;

// Each file type's name, the type most of its tensors take and llama.cpp's number for it, in the
// order llama-quantize lists them.
struct FileTypeFacts {
    QuantFileType type;
    std::string_view name;
    TensorType tensorType;
    std::uint32_t llamaNumber;
};
constexpr FileTypeFacts kFileTypes[] = {
    {FT::Q2_K, "Q2_K", TensorType::Q2_K, 10},       {FT::Q3_K_S, "Q3_K_S", TensorType::Q3_K, 11},
    {FT::Q3_K_M, "Q3_K_M", TensorType::Q3_K, 12},   {FT::Q3_K_L, "Q3_K_L", TensorType::Q3_K, 13},
    {FT::Q4_K_S, "Q4_K_S", TensorType::Q4_K, 14},   {FT::Q4_K_M, "Q4_K_M", TensorType::Q4_K, 15},
    {FT::Q5_K_S, "Q5_K_S", TensorType::Q5_K, 16},   {FT::Q5_K_M, "Q5_K_M", TensorType::Q5_K, 17},
    {FT::Q6_K, "Q6_K", TensorType::Q6_K, 18},       {FT::Q8_0, "Q8_0", TensorType::Q8_0, 7},
    {FT::Q4_0, "Q4_0", TensorType::Q4_0, 2},        {FT::Q4_1, "Q4_1", TensorType::Q4_1, 3},
    {FT::Q5_0, "Q5_0", TensorType::Q5_0, 8},        {FT::Q5_1, "Q5_1", TensorType::Q5_1, 9},
    {FT::IQ4_NL, "IQ4_NL", TensorType::IQ4_NL, 25}, {FT::IQ4_XS, "IQ4_XS", TensorType::IQ4_XS, 30},
    {FT::F16, "F16", TensorType::F16, 1},           {FT::BF16, "BF16", TensorType::BF16, 32},
    {FT::F32, "F32", TensorType::F32, 0},
};

constexpr bool inEnumOrder() {
    for (std::size_t i = 0; i < std::size(kFileTypes); ++i) {
        if (static_cast<std::size_t>(kFileTypes[i].type) != i) {
            return false;
        }
    }
    return true;
}
static_assert(inEnumOrder(), "kFileTypes is indexed by QuantFileType");

const FileTypeFacts& factsOf(QuantFileType type) {
    return kFileTypes[static_cast<std::size_t>(type)];
}

std::string upper(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
    return out;
}

} // namespace

std::span<const QuantFileType> allQuantFileTypes() {
    static constexpr QuantFileType kAll[] = {FT::Q2_K,   FT::Q3_K_S, FT::Q3_K_M, FT::Q3_K_L, FT::Q4_K_S,
                                             FT::Q4_K_M, FT::Q5_K_S, FT::Q5_K_M, FT::Q6_K,   FT::Q8_0,
                                             FT::Q4_0,   FT::Q4_1,   FT::Q5_0,   FT::Q5_1,   FT::IQ4_NL,
                                             FT::IQ4_XS, FT::F16,    FT::BF16,   FT::F32};
    return kAll;
}

std::string_view quantFileTypeName(QuantFileType type) {
    return factsOf(type).name;
}

std::optional<QuantFileType> quantFileTypeFromName(std::string_view name) {
    const std::string wanted = upper(name);
    for (const auto& f : kFileTypes) {
        if (f.name == wanted) {
            return f.type;
        }
    }
    if (wanted == "Q3_K") {
        return FT::Q3_K_M;
    }
    if (wanted == "Q4_K") {
        return FT::Q4_K_M;
    }
    if (wanted == "Q5_K") {
        return FT::Q5_K_M;
    }
    return std::nullopt;
}

TensorType defaultTensorType(QuantFileType type) {
    return factsOf(type).tensorType;
}

std::uint32_t llamaFileTypeNumber(QuantFileType type) {
    return factsOf(type).llamaNumber;
}

std::optional<TensorType> tensorTypeFromAnyCase(std::string_view name) {
    return tensorTypeFromName(upper(name));
}

bool parseTensorTypeOption(std::string_view text, std::pair<std::string, TensorType>& out) {
    // The pattern ends at the first '=', as llama-quantize reads the option.
    const auto eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
        return false;
    }
    const auto type = tensorTypeFromAnyCase(text.substr(eq + 1));
    if (!type) {
        return false;
    }
    out = {std::string(text.substr(0, eq)), *type};
    return true;
}

std::optional<std::string> quantizeRecipeProblem(const QuantizeRecipe& recipe) {
    const auto writable = [](TensorType t, const std::string& what) -> std::optional<std::string> {
        if (canQuantizeTo(t)) {
            return std::nullopt;
        }
        return what + ": the engine does not write " + std::string(tensorTypeName(t)) + " (it writes " +
               writableTypesText() + ")";
    };
    if (static_cast<std::size_t>(recipe.fileType) >= std::size(kFileTypes)) {
        return std::string("unknown file type");
    }
    for (const auto& [pattern, type] : recipe.tensorTypes) {
        if (pattern.empty() || pattern.size() > 256) {
            return "tensor type pattern '" + pattern + "': 1 to 256 characters";
        }
        try {
            std::regex compiled(pattern);
        } catch (const std::regex_error& error) {
            return "tensor type pattern '" + pattern + "' is not a regular expression (" + error.what() + ")";
        }
        if (auto problem = writable(type, "tensor type " + pattern)) {
            return problem;
        }
    }
    if (recipe.outputTensorType) {
        if (auto problem = writable(*recipe.outputTensorType, "output tensor type")) {
            return problem;
        }
    }
    if (recipe.tokenEmbeddingType) {
        if (auto problem = writable(*recipe.tokenEmbeddingType, "token embedding type")) {
            return problem;
        }
    }
    return std::nullopt;
}

} // namespace organ
