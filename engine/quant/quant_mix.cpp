// llama-quantize's choice of a type per tensor (src/llama-quant.cpp of llama.cpp, read and
// rewritten here for the file types the engine writes). The rules count attn_v tensors and
// ffn_down layers in llama.cpp's tensor order, so that order is rebuilt first.
#include "quant/quant_mix.h"

#include "quant/quantize.h"
#include "support/errors.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <regex>

namespace organ {
namespace {

using FT = QuantFileType;

enum class Category {
    TokenEmbd,
    AttnQ,
    AttnV,
    AttnK,
    AttnQkv,
    AttnKvB,
    AttnOutput,
    FfnUp,
    FfnGate,
    FfnDown,
    Output,
    Other
};

Category categoryOf(const std::string& name) {
    const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    if (name == "output.weight") {
        return Category::Output;
    }
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
        return Category::TokenEmbd;
    }
    static constexpr std::pair<const char*, Category> kParts[] = {
        {"attn_qkv.weight", Category::AttnQkv},
        {"attn_kv_b.weight", Category::AttnKvB},
        {"attn_v.weight", Category::AttnV},
        {"attn_k.weight", Category::AttnK},
        {"attn_q.weight", Category::AttnQ},
        {"attn_output.weight", Category::AttnOutput},
        {"ffn_up", Category::FfnUp},
        {"ffn_gate", Category::FfnGate},
        {"ffn_down", Category::FfnDown},
    };
    for (const auto& [part, category] : kParts) {
        if (has(part)) {
            return category;
        }
    }
    return Category::Other;
}

bool isAttnVLike(Category c) {
    return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB;
}

// The layer sscanf("blk.%d.") reads from a name, as llama.cpp orders and counts tensors.
std::optional<int> scannedLayer(const std::string& name) {
    if (!name.starts_with("blk.")) {
        return std::nullopt;
    }
    std::size_t i = 4;
    while (i < name.size() && std::isspace(static_cast<unsigned char>(name[i]))) {
        ++i;
    }
    const bool negative = i < name.size() && name[i] == '-';
    if (i < name.size() && (name[i] == '-' || name[i] == '+')) {
        ++i;
    }
    if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) {
        return std::nullopt;
    }
    long long value = 0;
    for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) {
        value = std::min<long long>(value * 10 + (name[i] - '0'), INT32_MAX);
    }
    return static_cast<int>(negative ? -value : value);
}

// The value `table` pairs with `key`, or `otherwise`.
template <typename Key, typename Value, std::size_t N>
Value lookupOr(const std::pair<Key, Value> (&table)[N], Key key, Value otherwise) {
    for (const auto& [k, v] : table) {
        if (k == key) {
            return v;
        }
    }
    return otherwise;
}

bool useMoreBits(int layer, int layers) {
    return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

bool is70B(const MixModel& m) {
    if (m.architecture == "llama") {
        return m.layers == 80 && m.heads != m.headsKv;
    }
    return (m.layers == 80 &&
            (m.architecture == "deci" || m.architecture == "qwen2" || m.architecture == "olmo")) ||
           (m.layers == 68 && m.architecture == "jais2");
}

class Mixer {
public:
    Mixer(const MixModel& model, const QuantizeRecipe& recipe, bool hasImportance, std::size_t attnV,
          bool tied)
        : m_model(model), m_recipe(recipe), m_ftype(recipe.fileType), m_hasImportance(hasImportance),
          m_attnV(static_cast<int>(attnV)), m_tied(tied),
          m_gqa(model.headsKv == 0 ? 0 : model.heads / model.headsKv),
          m_falcon(model.architecture == "falcon") {}

    // llama_tensor_get_type_impl for the engine's file types.
    TensorType mixed(TensorType type, const MixTensor& t, Category c) {
        if (c == Category::Output || (m_tied && c == Category::TokenEmbd)) {
            if (m_recipe.outputTensorType) {
                return *m_recipe.outputTensorType;
            }
            if (m_falcon || t.ne[0] % traitsOf(type).blockSize != 0) {
                return TensorType::Q8_0;
            }
            return type != TensorType::Q8_0 ? TensorType::Q6_K : type;
        }
        if (c == Category::TokenEmbd) {
            return type;
        }
        if (isAttnVLike(c)) {
            type = attnV(type);
            ++m_iAttnV;
            return type;
        }
        if (c == Category::AttnK) {
            return m_model.experts == 8 ? TensorType::Q8_0 : type;
        }
        if (c == Category::FfnDown) {
            const auto [layer, layers] = layerInfo(m_iFfnDown, t.name);
            type = ffnDown(type, layer, layers);
            ++m_iFfnDown;
            return type;
        }
        if (c == Category::AttnOutput) {
            return attnOutput(type);
        }
        if (c == Category::FfnGate || c == Category::FfnUp) {
            int& counter = c == Category::FfnGate ? m_iFfnGate : m_iFfnUp;
            layerInfo(counter, t.name);
            ++counter;
        }
        return type;
    }

private:
    TensorType attnV(TensorType type) const {
        const bool moreBits = useMoreBits(m_iAttnV, m_attnV);
        switch (m_ftype) {
        case FT::Q2_K:
            type = m_gqa >= 4 ? TensorType::Q4_K : TensorType::Q3_K;
            break;
        case FT::Q3_K_M:
            type = m_iAttnV < 2 ? TensorType::Q5_K : TensorType::Q4_K;
            break;
        case FT::Q3_K_L:
            type = TensorType::Q5_K;
            break;
        case FT::IQ4_NL:
        case FT::IQ4_XS:
            type = m_gqa >= 4 ? TensorType::Q5_K : type;
            break;
        case FT::Q4_K_M:
        case FT::Q5_K_M:
            type = moreBits ? TensorType::Q6_K : type;
            break;
        case FT::Q4_K_S:
            type = m_iAttnV < 4 ? TensorType::Q5_K : type;
            break;
        default:
            break;
        }
        if (is70B(m_model) && (type == TensorType::Q3_K || type == TensorType::Q4_K)) {
            type = TensorType::Q5_K;
        }
        return m_model.experts == 8 ? TensorType::Q8_0 : type;
    }

    TensorType ffnDown(TensorType type, int layer, int layers) const {
        const bool moreBits = useMoreBits(layer, layers);
        if (m_ftype == FT::Q2_K) {
            return TensorType::Q3_K;
        }
        if (m_ftype == FT::Q3_K_M) {
            return layer < layers / 16     ? TensorType::Q5_K
                   : !m_falcon || moreBits ? TensorType::Q4_K
                                           : TensorType::Q3_K;
        }
        if (m_ftype == FT::Q3_K_L) {
            return m_falcon ? TensorType::Q4_K : TensorType::Q5_K;
        }
        if (m_ftype == FT::Q4_K_M) {
            if (m_falcon) {
                return layer < layers / 16 ? TensorType::Q6_K
                       : moreBits          ? TensorType::Q5_K
                                           : TensorType::Q4_K;
            }
            return moreBits ? TensorType::Q6_K : type;
        }
        if (layer < layers / 8 && (m_ftype == FT::IQ4_NL || m_ftype == FT::IQ4_XS) && !m_hasImportance) {
            return TensorType::Q5_K;
        }
        if (m_ftype == FT::Q5_K_M && moreBits) {
            return TensorType::Q6_K;
        }
        if (m_ftype == FT::Q4_K_S && !m_falcon && layer < layers / 8) {
            return TensorType::Q5_K;
        }
        if ((m_ftype == FT::Q4_0 || m_ftype == FT::Q5_0) && m_hasImportance && layer < layers / 8) {
            return m_ftype == FT::Q4_0 ? TensorType::Q4_1 : TensorType::Q5_1;
        }
        return type;
    }

    TensorType attnOutput(TensorType type) const {
        if (m_falcon) {
            return m_ftype == FT::Q3_K_L ? TensorType::Q4_K : type;
        }
        if (m_model.experts == 8) {
            constexpr FT kBumped[] = {FT::Q2_K,   FT::Q3_K_S, FT::Q3_K_M, FT::IQ4_NL,
                                      FT::Q4_K_S, FT::Q4_K_M, FT::IQ4_XS};
            return std::find(std::begin(kBumped), std::end(kBumped), m_ftype) != std::end(kBumped)
                       ? TensorType::Q5_K
                       : type;
        }
        constexpr std::pair<FT, TensorType> kBumps[] = {
            {FT::Q2_K, TensorType::Q3_K}, {FT::Q3_K_M, TensorType::Q4_K}, {FT::Q3_K_L, TensorType::Q5_K}};
        return lookupOr(kBumps, m_ftype, type);
    }

    // With experts the layer is read from the name (their tensors need not come in layer
    // order); otherwise it is the count of such tensors seen so far.
    std::pair<int, int> layerInfo(int counter, const std::string& name) const {
        const int layers = static_cast<int>(m_model.layers);
        if (std::max(1u, m_model.experts) <= 1) {
            return {counter, layers};
        }
        const std::optional<int> layer = scannedLayer(name);
        if (!layer) {
            throw FormatError("cannot tell the layer of tensor " + name + " (a model with experts)");
        }
        if (*layer < 0 || *layer >= layers) {
            throw FormatError("tensor " + name + " is in layer " + std::to_string(*layer) +
                              ", the model has " + std::to_string(layers));
        }
        return {*layer, layers};
    }

    const MixModel& m_model;
    const QuantizeRecipe& m_recipe;
    QuantFileType m_ftype;
    bool m_hasImportance;
    int m_attnV;
    bool m_tied;
    std::uint32_t m_gqa;
    bool m_falcon;
    int m_iAttnV = 0;
    int m_iFfnDown = 0;
    int m_iFfnGate = 0;
    int m_iFfnUp = 0;
};

// A type whose block does not fit the row: the one llama-quantize falls back to.
TensorType fallback(const MixTensor& t, TensorType type, std::string& note) {
    const std::uint64_t columns = t.ne[0];
    if (columns % traitsOf(type).blockSize == 0) {
        return type;
    }
    constexpr std::pair<TensorType, TensorType> kFallbacks[] = {
        {TensorType::IQ4_XS, TensorType::IQ4_NL}, {TensorType::Q2_K, TensorType::Q4_0},
        {TensorType::Q3_K, TensorType::Q4_0},     {TensorType::Q4_K, TensorType::Q5_0},
        {TensorType::Q5_K, TensorType::Q5_1},     {TensorType::Q6_K, TensorType::Q8_0}};
    TensorType to = lookupOr(kFallbacks, type, type);
    if (to == type) {
        throw FormatError("tensor " + t.name + ": rows of " + std::to_string(columns) +
                          " values do not fit " + std::string(tensorTypeName(type)) +
                          " and llama-quantize has no fallback for it");
    }
    if (columns % traitsOf(to).blockSize != 0) {
        to = TensorType::F16;
    }
    note = t.name + ": rows of " + std::to_string(columns) + " values do not fit " +
           std::string(tensorTypeName(type)) + "; " + std::string(tensorTypeName(to)) + " instead";
    return to;
}

std::uint32_t metaCount(const std::vector<MetaEntry>& metadata, const std::string& key) {
    for (const MetaEntry& e : metadata) {
        if (e.key != key) {
            continue;
        }
        if (e.value.isArray()) {
            // Per-layer counts: llama.cpp's rules read layer 0's.
            std::uint32_t first = 0;
            e.value.forEachElement([&](const MetaValue& v) {
                first =
                    static_cast<std::uint32_t>(std::min<std::uint64_t>(v.asUInt().value_or(0), UINT32_MAX));
                return false;
            });
            return first;
        }
        return static_cast<std::uint32_t>(std::min<std::uint64_t>(e.value.asUInt().value_or(0), UINT32_MAX));
    }
    return 0;
}

} // namespace

bool allowsQuantization(const MixTensor& t, const QuantizeRecipe& recipe) {
    int dims = 1;
    for (int i = kGgufMaxDims - 1; i >= 1; --i) {
        if (t.ne[static_cast<std::size_t>(i)] > 1) {
            dims = i + 1;
            break;
        }
    }
    if (dims < 2) {
        return false;
    }
    const std::string& name = t.name;
    const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    // "ends with weight", written as llama.cpp writes it: a 5-character name passes too (its
    // size − 6 wraps around to npos), and llama-quantize quantizes such a tensor.
    bool quantize = name.rfind("weight") == name.size() - 6;
    quantize = quantize && !has("_norm.weight");
    quantize = quantize && (!recipe.leaveOutputTensor || name != "output.weight");
    for (const char* excluded : {"ffn_gate_inp.weight",
                                 "altup",
                                 "laurel",
                                 "per_layer_model_proj",
                                 "ssm_conv1d",
                                 "shortconv.conv.weight",
                                 "time_mix_first.weight",
                                 "time_mix_w0.weight",
                                 "time_mix_w1.weight",
                                 "time_mix_w2.weight",
                                 "time_mix_v0.weight",
                                 "time_mix_v1.weight",
                                 "time_mix_v2.weight",
                                 "time_mix_a0.weight",
                                 "time_mix_a1.weight",
                                 "time_mix_a2.weight",
                                 "time_mix_g1.weight",
                                 "time_mix_g2.weight",
                                 "time_mix_decay_w1.weight",
                                 "time_mix_decay_w2.weight",
                                 "time_mix_lerp_fused.weight",
                                 "attn_rel_b.weight",
                                 ".position_embd",
                                 "sam.pos_embd",
                                 "sam.neck.",
                                 "sam.net_",
                                 ".rel_pos",
                                 ".patch_embd",
                                 ".patch_merger"}) {
        quantize = quantize && !has(excluded);
    }
    return quantize && name != "position_embd.weight" && name != "token_types.weight";
}

MixModel mixModelOf(const std::vector<MetaEntry>& metadata) {
    MixModel m;
    for (const MetaEntry& e : metadata) {
        if (e.key == "general.architecture") {
            m.architecture = std::string(e.value.asString().value_or(""));
        }
    }
    const std::string prefix = m.architecture + ".";
    m.layers = metaCount(metadata, prefix + "block_count");
    m.heads = metaCount(metadata, prefix + "attention.head_count");
    const bool hasKv = std::any_of(metadata.begin(), metadata.end(), [&](const MetaEntry& e) {
        return e.key == prefix + "attention.head_count_kv";
    });
    m.headsKv = hasKv ? metaCount(metadata, prefix + "attention.head_count_kv") : m.heads;
    m.experts = metaCount(metadata, prefix + "expert_count");
    return m;
}

std::vector<std::size_t> llamaTensorOrder(const std::vector<MixTensor>& tensors) {
    std::vector<std::size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const int la = scannedLayer(tensors[a].name).value_or(-1);
        const int lb = scannedLayer(tensors[b].name).value_or(-1);
        return la != lb ? la < lb : tensors[a].name < tensors[b].name;
    });
    return order;
}

std::vector<TensorChoice> chooseTensorTypes(const MixModel& model, const std::vector<MixTensor>& tensors,
                                            const QuantizeRecipe& recipe, bool hasImportance) {
    if (const auto problem = quantizeRecipeProblem(recipe)) {
        throw FormatError(*problem);
    }
    const std::vector<std::size_t> order = llamaTensorOrder(tensors);
    std::size_t attnV = 0;
    bool tied = true;
    for (const MixTensor& t : tensors) {
        const Category c = categoryOf(t.name);
        attnV += isAttnVLike(c) ? 1 : 0;
        tied = tied && c != Category::Output;
    }
    std::vector<std::pair<std::regex, TensorType>> patterns;
    for (const auto& [pattern, type] : recipe.tensorTypes) {
        std::string lower = pattern;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char ch) { return std::tolower(ch); });
        patterns.emplace_back(std::regex(lower), type);
    }
    const TensorType defaultType = defaultTensorType(recipe.fileType);
    Mixer mixer(model, recipe, hasImportance, attnV, tied);
    std::vector<TensorChoice> choices(tensors.size());
    for (std::size_t i : order) {
        const MixTensor& t = tensors[i];
        TensorChoice& choice = choices[i];
        const Category c = categoryOf(t.name);
        TensorType type = defaultType;
        if (!allowsQuantization(t, recipe)) {
            type = t.type;
        } else if (recipe.tokenEmbeddingType && c == Category::TokenEmbd) {
            type = *recipe.tokenEmbeddingType;
        } else if (recipe.outputTensorType && c == Category::Output) {
            type = *recipe.outputTensorType;
        } else if (!recipe.pure && traitsOf(defaultType).quantized) {
            const auto manual = std::find_if(patterns.begin(), patterns.end(), [&](const auto& p) {
                return std::regex_search(t.name, p.first);
            });
            type = manual != patterns.end() ? manual->second : mixer.mixed(type, t, c);
            type = fallback(t, type, choice.note);
        }
        if (t.ne[0] % traitsOf(type).blockSize != 0) {
            throw FormatError("tensor " + t.name + ": rows of " + std::to_string(t.ne[0]) +
                              " values do not fit " + std::string(tensorTypeName(type)) +
                              (recipe.pure ? " (--pure falls back to no other type)" : ""));
        }
        choice.type = type;
        choice.convert = type != t.type;
    }
    return choices;
}

} // namespace organ
