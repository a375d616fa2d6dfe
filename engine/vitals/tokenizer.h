#pragma once

#include "gguf/gguf_model.h"
#include "vitals/model_weights.h"

#include <functional>

#include <cstdint>
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
// llama.cpp does without parsing special tokens in the text. SentencePiece-style ("llama":
// scores, the ▁ space marker, byte fallback) so far.
class Tokenizer {
public:
    // Throws VitalsUnavailable for other tokenizer models, FormatError for a broken vocabulary.
    static Tokenizer fromModel(const GgufModel& model);
    static Tokenizer fromWeights(const ModelWeights& weights);

    // BOS first when the vocabulary asks for it (tokenizer.ggml.add_bos_token, true by default
    // for "llama").
    std::vector<std::int32_t> encode(std::string_view text) const;
    // The text of a token ("▁" back to a space, "<0x0A>" back to its byte); empty for control
    // tokens.
    std::string piece(std::int32_t token) const;
    std::string decode(const std::vector<std::int32_t>& tokens) const;

    std::size_t size() const { return m_tokens.size(); }
    std::int32_t bos() const { return m_bos; }
    std::int32_t eos() const { return m_eos; }

private:
    using FindKey = std::function<const MetaValue*(std::string_view key)>;
    static Tokenizer build(const std::string& label, const FindKey& find);
    std::int32_t lookup(std::string_view text) const;
    std::int32_t byteToken(unsigned char byte) const;
    void appendPiece(std::string_view symbol, std::vector<std::int32_t>& out) const;

    std::vector<std::string> m_tokens;
    std::vector<float> m_scores;
    std::vector<std::int32_t> m_types;
    std::unordered_map<std::string, std::int32_t> m_ids;
    std::int32_t m_bytes[256];
    std::int32_t m_bos = -1;
    std::int32_t m_eos = -1;
    bool m_addBos = true;
    bool m_addSpacePrefix = true;
};

} // namespace organ
