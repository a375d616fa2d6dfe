#include "model_validation.h"

#include "anatomy.h"

#include <algorithm>
#include <map>
#include <set>

namespace organ {
namespace {

// A block requirement: one of the options (each a set of tensor names without "blk.N.")
// must be present in full.
using Option = std::vector<std::string_view>;
using Requirement = std::vector<Option>;

struct ArchitectureRules {
    std::string_view architecture;
    std::vector<std::string_view> global;
    std::vector<Requirement> block;      // every block
    std::vector<Requirement> denseBlock; // blocks below leading_dense_block_count, else
    std::vector<Requirement> moeBlock;   // the rest (empty: every block takes `block` only)
};

const Requirement kNorms = {{"attn_norm.weight"}};
const Requirement kFfnNorm = {{"ffn_norm.weight"}};
const Requirement kQkv = {{"attn_q.weight", "attn_k.weight", "attn_v.weight"}, {"attn_qkv.weight"}};
const Requirement kOut = {{"attn_output.weight"}};
const Requirement kFfnOrMoe = {
    {"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"},
    {"ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"},
    {"ffn_gate_inp.weight", "ffn_gate_up_exps.weight", "ffn_down_exps.weight"}};
const Requirement kFfn = {{"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}};
const Requirement kQkvBias = {{"attn_q.bias", "attn_k.bias", "attn_v.bias"}};
const Requirement kMoe = {
    {"ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"}};
const Requirement kSharedExpert = {{"ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight"}};

// The table: what each architecture's loader requires.
const std::vector<ArchitectureRules>& rulesTable() {
    static const std::vector<ArchitectureRules> table = {
        {"llama",
         {"token_embd.weight", "output_norm.weight"},
         {kNorms, {{"attn_q.weight", "attn_k.weight", "attn_v.weight"}}, kOut, kFfnNorm, kFfnOrMoe},
         {},
         {}},
        {"mistral",
         {"token_embd.weight", "output_norm.weight"},
         {kNorms, kQkv, kOut, kFfnNorm, kFfnOrMoe},
         {},
         {}},
        {"qwen2",
         {"token_embd.weight", "output_norm.weight"},
         {kNorms, kQkv, kQkvBias, kOut, kFfnNorm, kFfn},
         {},
         {}},
        {"qwen3",
         {"token_embd.weight", "output_norm.weight"},
         {kNorms, kQkv, {{"attn_q_norm.weight", "attn_k_norm.weight"}}, kOut, kFfnNorm, kFfn},
         {},
         {}},
        {"qwen2moe",
         {"token_embd.weight", "output_norm.weight"},
         {kNorms, kQkv, kQkvBias, kOut, kFfnNorm, kMoe, kSharedExpert, {{"ffn_gate_inp_shexp.weight"}}},
         {},
         {}},
        {"qwen3moe",
         {"token_embd.weight", "output_norm.weight"},
         {kNorms, kQkv, {{"attn_q_norm.weight", "attn_k_norm.weight"}}, kOut, kFfnNorm, kMoe},
         {},
         {}},
        {"gemma", {"token_embd.weight", "output_norm.weight"}, {kNorms, kQkv, kOut, kFfnNorm, kFfn}, {}, {}},
        {"gemma2",
         {"token_embd.weight", "output_norm.weight"},
         {kNorms, kQkv, kOut, {{"post_attention_norm.weight"}}, kFfnNorm, kFfn, {{"post_ffw_norm.weight"}}},
         {},
         {}},
        {"gemma3",
         {"token_embd.weight", "output_norm.weight"},
         {kNorms,
          kQkv,
          {{"attn_q_norm.weight", "attn_k_norm.weight"}},
          kOut,
          {{"post_attention_norm.weight"}},
          kFfnNorm,
          kFfn,
          {{"post_ffw_norm.weight"}}},
         {},
         {}},
        {"phi3",
         {"token_embd.weight", "output_norm.weight", "output.weight"},
         {kNorms, kQkv, kOut, kFfnNorm, {{"ffn_up.weight", "ffn_down.weight"}}},
         {},
         {}},
        {"deepseek2",
         {"token_embd.weight", "output_norm.weight"},
         {kNorms,
          {{"attn_q_a.weight", "attn_q_a_norm.weight", "attn_q_b.weight"}, {"attn_q.weight"}},
          {{"attn_kv_a_mqa.weight", "attn_kv_a_norm.weight"}},
          {{"attn_k_b.weight", "attn_v_b.weight"}, {"attn_kv_b.weight"}},
          kOut,
          kFfnNorm},
         {kFfn},
         {kMoe, kSharedExpert}},
    };
    return table;
}

class Validator {
public:
    explicit Validator(const GgufModel& model) : m_model(model) {}

    std::vector<Finding> run() {
        m_arch = m_model.architecture();
        if (m_arch.empty()) {
            error("the key general.architecture is missing");
            return std::move(m_findings);
        }
        const MetaValue* type = m_model.find("general.type");
        const bool adapter = type != nullptr && type->asString() && *type->asString() == "adapter";
        collectLayers();
        if (!adapter && !m_model.tensors().empty()) {
            checkBlocks();
            checkRequiredTensors();
        }
        checkShapes();
        for (std::size_t i = 0; i < m_model.tensors().size(); ++i) {
            if (classifyTensor(m_model.tensors()[i].name).system == System::Other &&
                m_model.tensors()[i].name.rfind("rope_", 0) != 0) {
                warning("unknown", "tensor of unknown kind: " + m_model.tensors()[i].name,
                        {m_model.tensors()[i].name});
            }
        }
        for (const auto& [kind, count] : m_suppressed) {
            m_findings.push_back(
                {m_suppressedSeverity[kind],
                 "… and " + std::to_string(count) + " more finding(s) like the above (" + kind + ")",
                 {},
                 -1});
        }
        return std::move(m_findings);
    }

private:
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
    void error(std::string message) { error("other", std::move(message)); }
    void warning(const std::string& kind, std::string message, std::vector<std::string> tensors = {}) {
        add(Finding::Severity::Warning, kind, std::move(message), std::move(tensors));
    }
    void warning(std::string message) { warning("other", std::move(message)); }

    void collectLayers() {
        for (const auto& t : m_model.tensors()) {
            if (const auto parsed = parseLayerName(t.name)) {
                m_layers[parsed->layer].insert(std::string(parsed->rest));
            }
        }
    }

    void checkBlocks() {
        const auto blocks = m_model.archValue("block_count");
        if (!blocks) {
            error("the key " + m_arch + ".block_count is missing");
            return;
        }
        m_blocks = *blocks;
        // Missing blocks as runs between the blocks that exist: the work follows the tensors
        // present, never the number the file declares.
        std::uint64_t next = 0;
        auto missing = [&](std::uint64_t first, std::uint64_t last) {
            const std::string which = first == last
                                          ? "block " + std::to_string(first)
                                          : "blocks " + std::to_string(first) + "–" + std::to_string(last);
            error("missing-blocks", which + (first == last ? " has" : " have") + " no tensors (" + m_arch +
                                        ".block_count is " + std::to_string(m_blocks) + ")");
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
                    orphans.push_back("blk." + std::to_string(layer) + "." + n);
                }
                error("orphans",
                      "orphan tensors: block " + std::to_string(layer) + " is beyond " + m_arch +
                          ".block_count (" + std::to_string(m_blocks) + ")",
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

    void require(const Requirement& requirement, std::uint32_t layer) {
        const auto& have = m_layers[layer];
        for (const Option& option : requirement) {
            if (std::all_of(option.begin(), option.end(),
                            [&](std::string_view n) { return have.count(std::string(n)); })) {
                return;
            }
        }
        std::string wanted;
        for (const Option& option : requirement) {
            std::string missing;
            for (std::string_view n : option) {
                if (have.count(std::string(n)) == 0) {
                    missing += (missing.empty() ? "" : ", ") + std::string(n);
                }
            }
            wanted += (wanted.empty() ? "" : " or ") + missing;
        }
        error("lacks", "block " + std::to_string(layer) + " lacks " + wanted);
    }

    void checkRequiredTensors() {
        const auto& table = rulesTable();
        const auto rules =
            std::find_if(table.begin(), table.end(), [&](const auto& r) { return r.architecture == m_arch; });
        if (rules == table.end()) {
            warning("no tensor rules for architecture '" + m_arch + "': only blocks and shapes were checked");
            return;
        }
        for (std::string_view name : rules->global) {
            if (m_model.findTensor(name) == nullptr) {
                error("the model lacks " + std::string(name));
            }
        }
        const std::uint64_t dense = m_model.archValue("leading_dense_block_count").value_or(0);
        for (const std::uint32_t b : presentBlocks()) {
            for (const auto& r : rules->block) {
                require(r, b);
            }
            for (const auto& r :
                 (b < dense || rules->moeBlock.empty()) ? rules->denseBlock : rules->moeBlock) {
                require(r, b);
            }
        }
    }

    // Expected shapes from the hyperparameters, where the keys exist and the tensor does.
    void checkShapes() {
        const auto embd = m_model.archValue("embedding_length");
        if (!embd) {
            return;
        }
        const MetaValue* tokens = m_model.find("tokenizer.ggml.tokens");
        const auto vocab = tokens != nullptr ? std::optional<std::uint64_t>(tokens->arraySize())
                                             : m_model.archValue("vocab_size");
        const auto heads = m_model.archValue("attention.head_count");
        const auto kvHeads = m_model.archValue("attention.head_count_kv").value_or(heads.value_or(0));
        const std::uint64_t keyLength =
            m_model.archValue("attention.key_length").value_or(heads && *heads ? *embd / *heads : 0);
        const std::uint64_t valueLength = m_model.archValue("attention.value_length").value_or(keyLength);
        const auto ff = m_model.archValue("feed_forward_length");
        const auto experts = m_model.archValue("expert_count");
        const auto expertFf = m_model.archValue("expert_feed_forward_length");
        auto expect = [&](const std::string& name, std::vector<std::uint64_t> shape, const std::string& why) {
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
                      name + ": shape " + t->shapeText() + ", expected " + wanted.shapeText() + " from " +
                          why,
                      {name});
            }
        };
        const std::string e = std::to_string(*embd);
        if (vocab) {
            expect("token_embd.weight", {*embd, *vocab},
                   "embedding_length " + e + " and " + std::to_string(*vocab) + " tokens");
            expect("output.weight", {*embd, *vocab},
                   "embedding_length " + e + " and " + std::to_string(*vocab) + " tokens");
        }
        expect("output_norm.weight", {*embd}, "embedding_length " + e);
        const bool mla = m_arch == "deepseek2";
        for (const std::uint32_t b : presentBlocks()) {
            auto n = [b](const char* suffix) { return "blk." + std::to_string(b) + "." + suffix; };
            expect(n("attn_norm.weight"), {*embd}, "embedding_length " + e);
            expect(n("ffn_norm.weight"), {*embd}, "embedding_length " + e);
            if (heads && *heads != 0 && !mla) {
                const std::string why = "embedding_length " + e + ", head_count " + std::to_string(*heads) +
                                        ", head_count_kv " + std::to_string(kvHeads) + ", head size " +
                                        std::to_string(keyLength);
                expect(n("attn_q.weight"), {*embd, *heads * keyLength}, why);
                expect(n("attn_k.weight"), {*embd, kvHeads * keyLength}, why);
                expect(n("attn_v.weight"), {*embd, kvHeads * valueLength}, why);
                expect(n("attn_output.weight"), {*heads * valueLength, *embd}, why);
            }
            if (ff && *ff != 0) {
                const std::string why =
                    "embedding_length " + e + " and feed_forward_length " + std::to_string(*ff);
                if (m_arch != "phi3") {
                    expect(n("ffn_up.weight"), {*embd, *ff}, why);
                }
                expect(n("ffn_gate.weight"), {*embd, *ff}, why);
                expect(n("ffn_down.weight"), {*ff, *embd}, why);
            }
            if (experts && expertFf) {
                const std::string why = "embedding_length " + e + ", expert_count " +
                                        std::to_string(*experts) + ", expert_feed_forward_length " +
                                        std::to_string(*expertFf);
                expect(n("ffn_gate_inp.weight"), {*embd, *experts}, why);
                expect(n("ffn_gate_exps.weight"), {*embd, *expertFf, *experts}, why);
                expect(n("ffn_up_exps.weight"), {*embd, *expertFf, *experts}, why);
                expect(n("ffn_down_exps.weight"), {*expertFf, *embd, *experts}, why);
            }
        }
    }

    const GgufModel& m_model;
    std::string m_arch;
    std::map<std::uint32_t, std::set<std::string>> m_layers;
    std::uint64_t m_blocks = 0;
    std::vector<Finding> m_findings;
    std::map<std::string, std::size_t> m_perKind;
    std::map<std::string, std::size_t> m_suppressed;
    std::map<std::string, Finding::Severity> m_suppressedSeverity;
};

} // namespace

std::vector<Finding> validateModel(const GgufModel& model) {
    return Validator(model).run();
}

} // namespace organ
