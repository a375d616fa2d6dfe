#pragma once

#include "gguf/gguf_model.h"
#include "vitals/model_weights.h"
#include "vitals/pre_tokenizer.h"

#include <functional>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace organ {

// Vital signs cannot be taken of this model (its architecture or tokenizer); the message
// names the file and what is missing. Never a wrong number instead.
class VitalsUnavailable : public std::runtime_error {
public:
    explicit VitalsUnavailable(const std::string& message) : std::runtime_error(message) {}
};

// The model's own tokenizer, from its GGUF vocabulary (tokenizer.ggml.*), tokenizing as
// llama.cpp does without parsing special tokens in the text (user-defined tokens are still
// found whole): SentencePiece-style ("llama": scores, the ▁ space marker, byte fallback) and
// byte-level BPE ("gpt2": merges by rank over GPT-2's byte alphabet, after the pre-tokenizer
// tokenizer.ggml.pre names).
class Tokenizer {
public:
    // Throws VitalsUnavailable for other tokenizer models and pre-tokenizers, FormatError for a
    // broken vocabulary.
    static Tokenizer fromModel(const GgufModel& model);
    static Tokenizer fromWeights(const ModelWeights& weights);

    // BOS first when the vocabulary asks for it (tokenizer.ggml.add_bos_token; by default true
    // for "llama" and Llama 3's BPE, false for other BPE vocabularies).
    std::vector<std::int32_t> encode(std::string_view text) const;
    // The text of a token ("▁" back to a space, "<0x0A>" back to its byte, "Ġ" back to a
    // space); empty for control tokens.
    std::string piece(std::int32_t token) const;
    std::string decode(const std::vector<std::int32_t>& tokens) const;

    std::size_t size() const { return m_tokens.size(); }
    // A token's string as the vocabulary holds it ("▁the", "<0x0A>", "Ġworld"), and its
    // tokenizer.ggml.token_type (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte;
    // 1 when the vocabulary gives none). Both for 0 ≤ token < size().
    const std::string& vocabularyText(std::int32_t token) const {
        return m_tokens.at(static_cast<std::size_t>(token));
    }
    std::int32_t tokenType(std::int32_t token) const { return m_types.at(static_cast<std::size_t>(token)); }
    // The id of a vocabulary string, -1 when it has none.
    std::int32_t lookup(std::string_view text) const;
    std::int32_t bos() const { return m_bos; }
    // Whether encode() puts BOS first.
    bool addsBos() const { return m_addBos; }
    // BOS when encode() puts it first (what each chunk of a text starts with), else none.
    std::optional<std::int32_t> leadingBos() const;
    std::int32_t eos() const { return m_eos; }
    // "llama" or "gpt2", and for BPE the pre-tokenizer ("gpt-2", "llama3", "qwen2"…).
    std::string kind() const;

private:
    using FindKey = std::function<const MetaValue*(std::string_view key)>;
    static Tokenizer build(const std::string& label, const FindKey& find);
    void encodeSentencePiece(std::string_view raw, std::vector<std::int32_t>& out) const;
    void encodeBytePairs(std::string_view raw, std::vector<std::int32_t>& out) const;
    void encodeWord(const std::string& word, std::vector<std::int32_t>& out) const;

    std::vector<std::string> m_tokens;
    std::vector<float> m_scores;
    std::vector<std::int32_t> m_types;
    std::unordered_map<std::string, std::int32_t> m_ids;
    std::int32_t m_bytes[256];
    // Byte-level BPE: the rank of each merge ("left right"), the pre-tokenizer, the tokens to
    // find whole in the text (user-defined, longest first).
    bool m_bytePairs = false;
    PreTokenizer m_pre = PreTokenizer::Default;
    std::unordered_map<std::string, std::int32_t> m_ranks;
    std::vector<std::int32_t> m_userDefined;
    bool m_stripAfterUserDefined = false;
    std::int32_t m_bos = -1;
    std::int32_t m_eos = -1;
    bool m_addBos = true;
    bool m_addSpacePrefix = true;
};

} // namespace organ
