#include "anatomy/model_validation.h"

#include "anatomy/anatomy.h"
#include "anatomy/loader_rules.h"
#include "support/align.h"
#include "support/text_format.h"

#include <algorithm>
#include <map>
#include <set>

namespace organ {
namespace {

std::string typeName(ValueType type) {
    return std::string(valueTypeName(type));
}

class Validator {
public:
    explicit Validator(const ModelFacts& model) : m_model(model) {}

    std::vector<Finding> run() {
        m_arch = m_model.architecture();
        if (m_arch.empty()) {
            error("keys", "the key general.architecture is missing");
            return finish();
        }
        m_rules = rulesFor(m_arch);
        if (m_model.version == 1) {
            error("version",
                  "GGUF version 1: llama.cpp no longer reads it (organ inspect reads it, and any organ "
                  "graft writes version 3)");
        }
        const MetaValue* type = m_model.find("general.type");
        const bool adapter = type != nullptr && type->asString() && *type->asString() == "adapter";
        checkLayout();
        if (adapter) {
            checkAdapter(); // a LoRA adapter is loaded onto its base model, not on its own
            return finish();
        }
        checkKeys();
        collectLayers();
        if (m_model.tensors.empty()) {
            warning("vocabulary",
                    "no tensors: a vocabulary file, which llama.cpp loads only for its tokenizer");
        } else {
            checkBlocks();
            checkTensors();
        }
        checkShapes();
        return finish();
    }

private:
    // What llama.cpp's adapter loader (llama_adapter_lora_init) checks of the file alone; the
    // shapes against the base model are checked when it is applied.
    void checkAdapter() {
        warning("adapter", "a LoRA adapter: llama.cpp applies it to a " + m_arch +
                               " base model (--lora), it does not load it as a model");
        const MetaValue* type = m_model.find("adapter.type");
        if (type == nullptr || !type->asString() || *type->asString() != "lora") {
            error("adapter",
                  type == nullptr
                      ? std::string("the key adapter.type is missing; llama.cpp loads only 'lora' adapters")
                  : !type->asString() ? "the key adapter.type is " + typeName(type->type()) +
                                            "; llama.cpp reads it as a string"
                                      : "adapter.type is '" + std::string(*type->asString()) +
                                            "'; llama.cpp loads only 'lora' adapters");
        }
        const MetaValue* alpha = m_model.find("adapter.lora.alpha");
        if (alpha != nullptr && alpha->type() != ValueType::F32) {
            error("adapter",
                  "the key adapter.lora.alpha is " + typeName(alpha->type()) + "; llama.cpp reads it as f32");
        }
        struct Pair {
            const TensorInfo* a = nullptr;
            const TensorInfo* b = nullptr;
        };
        std::map<std::string, Pair> pairs;
        for (const TensorInfo& t : m_model.tensors) {
            const std::string_view name = t.name;
            if (name.ends_with(".lora_a")) {
                pairs[std::string(name.substr(0, name.size() - 7))].a = &t;
            } else if (name.ends_with(".lora_b")) {
                pairs[std::string(name.substr(0, name.size() - 7))].b = &t;
            } else if (!name.ends_with("_norm.weight")) {
                error("adapter",
                      "LoRA tensor '" + t.name +
                          "' has unexpected suffix (llama.cpp reads "
                          ".lora_a, .lora_b and norms)",
                      {t.name});
            }
        }
        for (const auto& [target, pair] : pairs) {
            if (pair.a == nullptr || pair.b == nullptr) {
                error("adapter", "LoRA tensor pair for '" + target + "' is missing one component",
                      {(pair.a != nullptr ? pair.a : pair.b)->name});
            } else if (target != "token_embd.weight" && pair.a->ne[1] != pair.b->ne[0]) {
                error("adapter",
                      target + ": lora_a is " + pair.a->shapeText() + ", lora_b " + pair.b->shapeText() +
                          ": their ranks differ (llama.cpp: lora_a is not transposed)",
                      {pair.a->name, pair.b->name});
            }
        }
    }

    // At most kMaxPerKind findings of one kind are listed, then how many more there were: a
    // file that declares a million blocks gets a readable report, not a million lines.
    static constexpr std::size_t kMaxPerKind = 20;
    void add(Finding::Severity severity, const std::string& kind, std::string message,
             std::vector<std::string> tensors) {
        if (++m_perKind[kind] > kMaxPerKind) {
            ++m_suppressed[kind];
            m_suppressedSeverity[kind] = severity;
            return;
        }
        m_findings.push_back({severity, std::move(message), std::move(tensors), -1});
    }
    void error(const std::string& kind, std::string message, std::vector<std::string> tensors = {}) {
        add(Finding::Severity::Error, kind, std::move(message), std::move(tensors));
    }
    void warning(const std::string& kind, std::string message, std::vector<std::string> tensors = {}) {
        add(Finding::Severity::Warning, kind, std::move(message), std::move(tensors));
    }

    std::vector<Finding> finish() {
        for (const auto& [kind, count] : m_suppressed) {
            m_findings.push_back(
                {m_suppressedSeverity[kind],
                 "… and " + std::to_string(count) + " more finding(s) like the above (" + kind + ")",
                 {},
                 -1});
        }
        return std::move(m_findings);
    }

    std::string key(std::string_view suffix) const { return m_arch + "." + std::string(suffix); }

    // The loader's get_key: the exact type, or the file is refused.
    void checkKey(const KeyRule& rule) {
        const std::string name = key(rule.suffix);
        const MetaValue* value = m_model.find(name);
        if (value == nullptr) {
            if (rule.required) {
                error("keys", "the key " + name + " is missing (llama.cpp requires it)");
            }
            return;
        }
        if (value->type() != rule.type) {
            error("keys", "the key " + name + " is " + typeName(value->type()) + "; llama.cpp reads it as " +
                              typeName(rule.type) + " and refuses another type");
        }
    }

    // The loader's get_key_or_arr: one u32 for every block, or an array of block_count numbers.
    void checkPerLayerKey(std::string_view suffix) {
        const std::string name = key(suffix);
        const MetaValue* value = m_model.find(name);
        if (value == nullptr) {
            return;
        }
        if (!value->isArray()) {
            if (value->type() != ValueType::U32) {
                error("keys", "the key " + name + " is " + typeName(value->type()) +
                                  "; llama.cpp reads it as u32 (or an array of one value per block)");
            }
            return;
        }
        const ValueType element = value->elementType();
        if (element != ValueType::U32 && element != ValueType::I32 && element != ValueType::Bool) {
            error("keys", "the key " + name + " is an array of " + typeName(element) +
                              "; llama.cpp reads arrays of u32, i32 or bool here");
        }
        if (m_declaredBlocks && value->arraySize() != *m_declaredBlocks) {
            error("keys", "the key " + name + " has wrong array length; expected " +
                              std::to_string(*m_declaredBlocks) + ", got " +
                              std::to_string(value->arraySize()) + " (one value per block)");
        }
    }

    void checkKeys() {
        const MetaValue* blocks = m_model.find(key("block_count"));
        if (blocks != nullptr && !blocks->isArray()) {
            m_declaredBlocks = blocks->asUInt();
        }
        for (const KeyRule& rule : commonKeyRules()) {
            checkKey(rule);
        }
        if (m_rules != nullptr) {
            for (const KeyRule& rule : m_rules->keys) {
                checkKey(rule);
            }
        } else {
            warning("keys",
                    "no rules for architecture '" + m_arch + "': only keys, blocks and shapes were checked");
        }
        for (std::string_view suffix : perLayerKeySuffixes()) {
            checkPerLayerKey(suffix);
        }
        if (m_declaredBlocks && *m_declaredBlocks > kLlamaMaxLayers) {
            error("keys", key("block_count") + " is " + std::to_string(*m_declaredBlocks) +
                              "; llama.cpp allows at most " + std::to_string(kLlamaMaxLayers) + " blocks");
        }
        // deepseek2 reads q_lora_rank except for the "lite" shapes, which have no query pair.
        if (m_arch == "deepseek2" && m_model.find(key("attention.q_lora_rank")) == nullptr &&
            m_declaredBlocks) {
            const MetaValue* tokens = m_model.find("tokenizer.ggml.tokens");
            const std::uint64_t vocab = tokens != nullptr && tokens->isArray() ? tokens->arraySize() : 0;
            const bool lite = *m_declaredBlocks == 26 || *m_declaredBlocks == 27 ||
                              (*m_declaredBlocks == 48 && vocab == 128256);
            if (!lite) {
                error("keys",
                      "the key " + key("attention.q_lora_rank") +
                          " is missing (llama.cpp requires it unless the model has a DeepSeek-V2-Lite shape: "
                          "26 or 27 blocks, or 48 with 128 256 tokens)");
            }
        }
        // gemma2 and gemma3 read their sliding-window pattern as one number: an array is ignored.
        if (const MetaValue* pattern = m_model.find(key("attention.sliding_window_pattern"));
            pattern != nullptr && pattern->isArray() && (m_arch == "gemma2" || m_arch == "gemma3")) {
            warning("keys", key("attention.sliding_window_pattern") +
                                " is an array; llama.cpp reads one number for " + m_arch +
                                " and ignores the array (its default pattern applies)");
        }
        const MetaValue* tokenizer = m_model.find("tokenizer.ggml.model");
        if (tokenizer == nullptr || tokenizer->type() != ValueType::String) {
            error("keys", tokenizer == nullptr
                              ? "the key tokenizer.ggml.model is missing (llama.cpp requires it)"
                              : "the key tokenizer.ggml.model is " + typeName(tokenizer->type()) +
                                    "; llama.cpp reads a string");
            return;
        }
        const std::string_view model = *tokenizer->asString();
        const MetaValue* tokens = m_model.find("tokenizer.ggml.tokens");
        if (model != "none" && model != "no_vocab" &&
            (tokens == nullptr || !tokens->isArray() || tokens->elementType() != ValueType::String)) {
            error("keys",
                  "the key tokenizer.ggml.tokens (an array of strings) is missing (llama.cpp requires it)");
            return;
        }
        if (tokens != nullptr && tokens->isArray()) {
            checkTokenArray("tokenizer.ggml.scores", ValueType::F32, tokens->arraySize());
            checkTokenArray("tokenizer.ggml.token_type", ValueType::I32, tokens->arraySize());
        }
    }

    // llama.cpp reads the scores and token types as raw arrays of f32 and i32 indexed by token:
    // an array of strings fails its assertion, any other type is read as those bytes, and a
    // shorter array is read past its end.
    void checkTokenArray(const std::string& name, ValueType element, std::uint64_t vocab) {
        const MetaValue* value = m_model.find(name);
        if (value == nullptr) {
            return;
        }
        if (!value->isArray() || value->elementType() != element) {
            error("keys", "the key " + name + " is " +
                              (value->isArray() ? "an array of " + typeName(value->elementType())
                                                : typeName(value->type())) +
                              "; llama.cpp reads an array of " + typeName(element) + ", one per token");
        } else if (value->arraySize() < vocab) {
            error("keys", "the key " + name + " has " + std::to_string(value->arraySize()) + " entries for " +
                              std::to_string(vocab) + " tokens; llama.cpp reads one per token, past its end");
        }
    }

    void collectLayers() {
        for (const auto& t : m_model.tensors) {
            if (const auto parsed = parseLayerName(t.name)) {
                m_layers[parsed->layer].insert(std::string(parsed->rest));
            }
        }
    }

    void checkBlocks() {
        if (!m_declaredBlocks) {
            error("keys", "the key " + key("block_count") + " is missing");
            return;
        }
        m_blocks = *m_declaredBlocks;
        // Missing blocks as runs between the blocks that exist: the work follows the tensors
        // present, never the number the file declares.
        std::uint64_t next = 0;
        auto missing = [&](std::uint64_t first, std::uint64_t last) {
            const std::string which = first == last
                                          ? "block " + std::to_string(first)
                                          : "blocks " + std::to_string(first) + "–" + std::to_string(last);
            error("missing-blocks", which + (first == last ? " has" : " have") + " no tensors (" +
                                        key("block_count") + " is " + std::to_string(m_blocks) + ")");
        };
        for (const auto& [layer, names] : m_layers) {
            if (layer >= m_blocks) {
                break;
            }
            if (layer > next) {
                missing(next, layer - 1);
            }
            next = std::uint64_t(layer) + 1;
        }
        if (next < m_blocks) {
            missing(next, m_blocks - 1);
        }
        for (const auto& [layer, names] : m_layers) {
            if (layer >= m_blocks) {
                std::vector<std::string> orphans;
                for (const auto& n : names) {
                    orphans.push_back(layerTensorName(layer, n));
                }
                error("orphans",
                      "orphan tensors: block " + std::to_string(layer) + " is beyond " + key("block_count") +
                          " (" + std::to_string(m_blocks) + ")",
                      orphans);
            }
        }
    }

    // The blocks the per-block checks visit: those that exist and that block_count covers.
    std::vector<std::uint32_t> presentBlocks() const {
        std::vector<std::uint32_t> out;
        for (const auto& [layer, names] : m_layers) {
            if (layer < m_blocks) {
                out.push_back(layer);
            }
        }
        return out;
    }

    bool isExpertBlock(std::uint32_t block) const {
        switch (m_rules->layout) {
        case FeedForwardLayout::Dense:
            return false;
        case FeedForwardLayout::Experts:
            return true;
        case FeedForwardLayout::ByExpertCount:
            return m_model.archValue("expert_count").value_or(0) > 0;
        case FeedForwardLayout::LeadingDense:
            return block >= m_model.archValue("leading_dense_block_count").value_or(0);
        }
        return false;
    }

    // The tensor sets a block takes, by its feed-forward layout.
    std::vector<const BlockTensors*> blockSets(std::uint32_t block) const {
        std::vector<const BlockTensors*> sets{&m_rules->block};
        if (isExpertBlock(block)) {
            sets.push_back(&m_rules->experts);
            if (m_model.archValue("expert_shared_count").value_or(0) > 0) {
                sets.push_back(&m_rules->shared);
            }
        } else {
            sets.push_back(&m_rules->dense);
        }
        return sets;
    }

    void require(const TensorRequirement& requirement, std::uint32_t layer) {
        const auto& have = m_layers[layer];
        for (const TensorOption& option : requirement) {
            if (std::all_of(option.begin(), option.end(),
                            [&](std::string_view n) { return have.count(std::string(n)); })) {
                return;
            }
        }
        std::string wanted;
        for (const TensorOption& option : requirement) {
            std::string missing;
            for (std::string_view n : option) {
                if (have.count(std::string(n)) == 0) {
                    missing += (missing.empty() ? "" : ", ") + std::string(n);
                }
            }
            wanted += (wanted.empty() ? "" : " or ") + missing;
        }
        error("lacks", "block " + std::to_string(layer) + " lacks " + wanted +
                           (isExpertBlock(layer) && m_rules->layout != FeedForwardLayout::Dense
                                ? " (a mixture-of-experts block)"
                                : ""));
    }

    void checkTensors() {
        if (m_rules == nullptr) {
            return;
        }
        for (std::string_view name : m_rules->globalRequired) {
            if (m_model.findTensor(name) == nullptr) {
                error("lacks", "the model lacks " + std::string(name));
            }
        }
        std::map<std::uint32_t, std::set<std::string_view>> used; // per block, the names the loader takes
        for (const std::uint32_t b : presentBlocks()) {
            for (const BlockTensors* set : blockSets(b)) {
                for (const auto& r : set->required) {
                    require(r, b);
                    for (const auto& option : r) {
                        used[b].insert(option.begin(), option.end());
                    }
                }
                used[b].insert(set->optional.begin(), set->optional.end());
            }
        }
        // The loader counts the tensors it creates against those in the file.
        for (const auto& t : m_model.tensors) {
            const auto parsed = parseLayerName(t.name);
            bool known = false;
            if (parsed) {
                if (parsed->layer >= m_blocks) {
                    continue; // an orphan, reported with its block
                }
                known = used[parsed->layer].count(parsed->rest) != 0;
            } else {
                known = std::find(m_rules->globalRequired.begin(), m_rules->globalRequired.end(), t.name) !=
                            m_rules->globalRequired.end() ||
                        std::find(m_rules->globalOptional.begin(), m_rules->globalOptional.end(), t.name) !=
                            m_rules->globalOptional.end();
            }
            if (known) {
                continue;
            }
            if (m_rules->complete) {
                error("unused",
                      "llama.cpp does not load " + t.name + " for " + m_arch +
                          " and refuses a file with tensors it does not load (wrong number of tensors)",
                      {t.name});
            } else {
                warning("unused", "tensor of unknown kind for " + m_arch + ": " + t.name, {t.name});
            }
        }
    }

    // ggml reads tensor data in order, each tensor padded to the alignment, with no gaps.
    void checkLayout() {
        std::map<std::uint32_t, std::uint64_t> expected; // per file of a split set
        for (const auto& t : m_model.tensors) {
            std::uint64_t& at = expected[t.shard];
            if (t.relativeOffset != at) {
                error("layout",
                      "tensor " + t.name + " has data offset " + std::to_string(t.relativeOffset) +
                          ", ggml expects " + std::to_string(at) +
                          ": ggml (and llama.cpp) refuse data that is not laid out in "
                          "tensor order, each tensor padded to the alignment, without gaps",
                      {t.name});
                at = t.relativeOffset;
            }
            at += alignUp(t.bytes, m_model.alignment);
        }
    }

    // A per-layer number for a block: its array element, or the one value for every block.
    std::optional<std::uint64_t> layerValue(std::string_view suffix, std::uint32_t block) const {
        const MetaValue* value = m_model.find(key(suffix));
        if (value == nullptr) {
            return std::nullopt;
        }
        if (!value->isArray()) {
            return value->asUInt();
        }
        const auto elements = value->elements(std::uint64_t(block) + 1);
        return block < elements.size() && value->arraySize() == m_blocks ? elements[block].asUInt()
                                                                         : std::nullopt;
    }

    // Whether a per-layer array of the sizing keys lists different numbers for its blocks.
    bool perLayerDiffers() const {
        for (const char* suffix :
             {"feed_forward_length", "attention.head_count", "attention.head_count_kv"}) {
            const MetaValue* value = m_model.find(key(suffix));
            if (value != nullptr && value->isArray() && value->arraySize() == m_blocks) {
                const auto elements = value->elements(m_blocks);
                if (std::any_of(elements.begin(), elements.end(),
                                [&](const MetaValue& v) { return !(v == elements.front()); })) {
                    return true;
                }
            }
        }
        return false;
    }

    void expect(const std::string& name, std::vector<std::uint64_t> shape, const std::string& why) {
        const TensorInfo* t = m_model.findTensor(name);
        if (t == nullptr) {
            return;
        }
        std::array<std::uint64_t, 4> ne{1, 1, 1, 1};
        std::copy(shape.begin(), shape.end(), ne.begin());
        if (t->ne != ne) {
            TensorInfo wanted;
            wanted.nDims = static_cast<std::uint32_t>(shape.size());
            wanted.ne = ne;
            error("shape",
                  name + ": shape " + t->shapeText() + ", expected " + wanted.shapeText() + " from " + why,
                  {name});
        }
    }

    // Expected shapes from the hyperparameters (per block where they are per-layer), where the
    // keys exist and the tensor does.
    void checkShapes() {
        const auto embd = m_model.archValue("embedding_length");
        if (!embd) {
            return;
        }
        const MetaValue* tokens = m_model.find("tokenizer.ggml.tokens");
        const auto vocab = tokens != nullptr && tokens->isArray()
                               ? std::optional<std::uint64_t>(tokens->arraySize())
                               : m_model.archValue("vocab_size");
        const std::string e = std::to_string(*embd);
        if (vocab) {
            const std::string why = "embedding_length " + e + " and " + std::to_string(*vocab) + " tokens";
            expect("token_embd.weight", {*embd, *vocab}, why);
            expect("output.weight", {*embd, *vocab}, why);
        }
        expect("output_norm.weight", {*embd}, "embedding_length " + e);
        const auto experts = m_model.archValue("expert_count");
        const bool byBlockZero = m_rules != nullptr && m_rules->sizedByBlockZero;
        for (const std::uint32_t b : presentBlocks()) {
            auto n = [b](const char* suffix) { return layerTensorName(b, suffix); };
            expect(n("attn_norm.weight"), {*embd}, "embedding_length " + e);
            expect(n("ffn_norm.weight"), {*embd}, "embedding_length " + e);
            const std::uint32_t sizedBy = byBlockZero ? 0 : b;
            const std::string whose = byBlockZero && b != 0 && perLayerDiffers()
                                          ? " (block 0's values: " + m_arch + " sizes every block by them)"
                                          : " (block " + std::to_string(b) + ")";
            const auto heads = layerValue("attention.head_count", sizedBy);
            const auto kvHeads = layerValue("attention.head_count_kv", sizedBy).value_or(heads.value_or(0));
            if (heads && *heads != 0) {
                if (m_arch == "deepseek2") {
                    checkLatentAttention(b, *embd, *heads, whose);
                } else {
                    checkAttention(b, *embd, *heads, kvHeads, whose);
                }
            }
            const auto ff = layerValue("feed_forward_length", sizedBy);
            if (ff && *ff != 0) {
                const std::string why =
                    "embedding_length " + e + " and feed_forward_length " + std::to_string(*ff) + whose;
                expect(n("ffn_up.weight"), {*embd, m_arch == "phi3" ? 2 * *ff : *ff}, why);
                expect(n("ffn_gate.weight"), {*embd, *ff}, why);
                expect(n("ffn_down.weight"), {*ff, *embd}, why);
                expect(n("ffn_up.bias"), {*ff}, why);
                expect(n("ffn_gate.bias"), {*ff}, why);
                expect(n("ffn_down.bias"), {*embd}, why);
            }
            if (experts && *experts != 0) {
                checkExperts(b, *embd, *experts, ff.value_or(0));
            }
        }
    }

    // Attention with query, key and value heads (fused or not) and their biases.
    void checkAttention(std::uint32_t b, std::uint64_t embd, std::uint64_t heads, std::uint64_t kvHeads,
                        const std::string& whose) {
        auto n = [b](const char* suffix) { return layerTensorName(b, suffix); };
        const std::uint64_t keyLength = m_model.archValue("attention.key_length").value_or(embd / heads);
        const std::uint64_t valueLength = m_model.archValue("attention.value_length").value_or(keyLength);
        const std::string why = "embedding_length " + std::to_string(embd) + ", head_count " +
                                std::to_string(heads) + ", head_count_kv " + std::to_string(kvHeads) +
                                ", head size " + std::to_string(keyLength) + whose;
        const std::uint64_t q = heads * keyLength;
        const std::uint64_t k = kvHeads * keyLength;
        const std::uint64_t v = kvHeads * valueLength;
        expect(n("attn_q.weight"), {embd, q}, why);
        expect(n("attn_k.weight"), {embd, k}, why);
        expect(n("attn_v.weight"), {embd, v}, why);
        expect(n("attn_qkv.weight"), {embd, q + k + v}, why);
        expect(n("attn_output.weight"), {heads * valueLength, embd}, why);
        expect(n("attn_q.bias"), {q}, why);
        expect(n("attn_k.bias"), {k}, why);
        expect(n("attn_v.bias"), {v}, why);
        expect(n("attn_qkv.bias"), {q + k + v}, why);
        expect(n("attn_output.bias"), {embd}, why);
    }

    // DeepSeek-2's multi-head latent attention: queries through a low-rank pair (or not),
    // keys and values through one compressed projection, split per head for MLA files.
    void checkLatentAttention(std::uint32_t b, std::uint64_t embd, std::uint64_t heads,
                              const std::string& whose) {
        auto n = [b](const char* suffix) { return layerTensorName(b, suffix); };
        const auto kvRank = m_model.archValue("attention.kv_lora_rank");
        if (!kvRank) {
            return;
        }
        const std::uint64_t qRank = m_model.archValue("attention.q_lora_rank").value_or(0);
        const std::uint64_t keyMla = m_model.archValue("attention.key_length_mla").value_or(0);
        const std::uint64_t valueMla = m_model.archValue("attention.value_length_mla").value_or(0);
        const bool split = keyMla != 0 && valueMla != 0;
        const std::uint64_t key = m_model.archValue("attention.key_length").value_or(embd / heads);
        const std::uint64_t headK = split ? keyMla : key;
        const std::uint64_t headV =
            split ? valueMla : m_model.archValue("attention.value_length").value_or(embd / heads);
        const std::uint64_t rope = m_model.archValue("rope.dimension_count").value_or(key);
        if (headK <= rope) {
            if (b == presentBlocks().front()) {
                error("shape", "the query-key head size " + std::to_string(headK) + " is not above " +
                                   this->key("rope.dimension_count") + " " + std::to_string(rope) +
                                   ": llama.cpp stops (n_embd_head_qk_nope >= 1)");
            }
            return;
        }
        const std::string why = "embedding_length " + std::to_string(embd) + ", head_count " +
                                std::to_string(heads) + ", q_lora_rank " + std::to_string(qRank) +
                                ", kv_lora_rank " + std::to_string(*kvRank) + ", key/value head size " +
                                std::to_string(headK) + "/" + std::to_string(headV) + ", rope " +
                                std::to_string(rope) + whose;
        expect(n("attn_q_a.weight"), {embd, qRank}, why);
        expect(n("attn_q_a_norm.weight"), {qRank}, why);
        expect(n("attn_q_b.weight"), {qRank, heads * headK}, why);
        expect(n("attn_q.weight"), {embd, heads * headK}, why);
        expect(n("attn_kv_a_mqa.weight"), {embd, *kvRank + rope}, why);
        expect(n("attn_kv_a_norm.weight"), {*kvRank}, why);
        expect(n("attn_k_b.weight"), {headK - rope, *kvRank, heads}, why);
        expect(n("attn_v_b.weight"), {*kvRank, headV, heads}, why);
        expect(n("attn_kv_b.weight"), {*kvRank, heads * (headK - rope + headV)}, why);
        expect(n("attn_output.weight"), {heads * headV, embd}, why);
    }

    // Routed experts, their router and bias, and shared experts: deepseek2 sizes its shared
    // experts as expert_shared_count experts; qwen2moe by expert_shared_feed_forward_length
    // (or feed_forward_length).
    void checkExperts(std::uint32_t b, std::uint64_t embd, std::uint64_t experts, std::uint64_t ff) {
        auto n = [b](const char* suffix) { return layerTensorName(b, suffix); };
        const std::string e = std::to_string(embd);
        const std::uint64_t used = m_model.archValue("expert_used_count").value_or(0);
        std::optional<std::uint64_t> expertFf = m_model.archValue("expert_feed_forward_length");
        if (!expertFf && m_arch == "qwen2moe" && used != 0 && ff != 0) {
            expertFf = ff / used; // llama.cpp's default for qwen2moe
        }
        const std::string routed = "embedding_length " + e + ", expert_count " + std::to_string(experts);
        expect(n("ffn_gate_inp.weight"), {embd, experts}, routed);
        expect(n("exp_probs_b.bias"), {experts}, routed);
        if (!expertFf) {
            return;
        }
        const std::string why = routed + ", expert_feed_forward_length " + std::to_string(*expertFf);
        expect(n("ffn_gate_exps.weight"), {embd, *expertFf, experts}, why);
        expect(n("ffn_up_exps.weight"), {embd, *expertFf, experts}, why);
        expect(n("ffn_down_exps.weight"), {*expertFf, embd, experts}, why);
        std::optional<std::uint64_t> sharedFf = m_model.archValue("expert_shared_feed_forward_length");
        std::string sharedWhy = "embedding_length " + e + ", expert_shared_feed_forward_length ";
        if (m_arch == "deepseek2") {
            const std::uint64_t shared = m_model.archValue("expert_shared_count").value_or(0);
            sharedFf = *expertFf * shared;
            sharedWhy = why + ", expert_shared_count " + std::to_string(shared);
        } else if (m_arch == "qwen2moe" && !sharedFf && ff != 0) {
            sharedFf = ff;
            sharedWhy = "embedding_length " + e + ", feed_forward_length " + std::to_string(ff);
        } else if (sharedFf) {
            sharedWhy += std::to_string(*sharedFf);
        }
        if (!sharedFf || (m_arch != "deepseek2" && m_arch != "qwen2moe")) {
            return;
        }
        expect(n("ffn_gate_inp_shexp.weight"), {embd}, sharedWhy);
        expect(n("ffn_gate_shexp.weight"), {embd, *sharedFf}, sharedWhy);
        expect(n("ffn_up_shexp.weight"), {embd, *sharedFf}, sharedWhy);
        expect(n("ffn_down_shexp.weight"), {*sharedFf, embd}, sharedWhy);
    }

    const ModelFacts& m_model;
    const ArchitectureRules* m_rules = nullptr;
    std::string m_arch;
    std::optional<std::uint64_t> m_declaredBlocks;
    std::map<std::uint32_t, std::set<std::string>> m_layers;
    std::uint64_t m_blocks = 0;
    std::vector<Finding> m_findings;
    std::map<std::string, std::size_t> m_perKind;
    std::map<std::string, std::size_t> m_suppressed;
    std::map<std::string, Finding::Severity> m_suppressedSeverity;
};

} // namespace

std::vector<Finding> validateFacts(const ModelFacts& model) {
    return Validator(model).run();
}

std::vector<Finding> validateModel(const GgufModel& model) {
    return validateFacts(ModelFacts::of(model));
}

nlohmann::json validationToJson(const std::string& path, const std::vector<Finding>& findings) {
    nlohmann::json document = findingsToJson(findings);
    document["path"] = path;
    document["valid"] = document["ok"];
    return document;
}

std::optional<std::string> invalidModelRefusal(const RootedPath& written, const std::string& output,
                                               bool keepInvalid) {
    if (keepInvalid) {
        return std::nullopt;
    }
    std::vector<std::string> errors;
    for (const Finding& f : validateModel(*GgufModel::open(written))) {
        if (f.severity == Finding::Severity::Error) {
            errors.push_back(f.message);
        }
    }
    if (errors.empty()) {
        return std::nullopt;
    }
    return fileLabel(output) + ": not written: it would not load (" + std::to_string(errors.size()) +
           " validation error(s), the first: " + errors.front() + "); --keep-invalid keeps such a file";
}

} // namespace organ
