#pragma once

#include "vitals/tokenizer.h"

#include <nlohmann/json.hpp>

namespace organ {

// One token of a vocabulary as a person reads it: its id, its type, the vocabulary's string and
// the bytes it stands for in text (empty for control tokens; one byte for a byte-fallback token).
struct TokenRow {
    std::string vocabulary;
    std::string piece;
    std::int32_t id = 0;
    std::int32_t type = 1;
};

// "normal", "unknown", "control", "user-defined", "unused", "byte" (tokenizer.ggml.token_type), or
// "type N" for another number.
std::string tokenTypeName(std::int32_t type);

// Throws FormatError for an id outside the vocabulary.
TokenRow tokenRow(const Tokenizer& tokenizer, std::int32_t id);

// The tokens of `text`, BOS first when `addBos` whatever the vocabulary asks for (there is no BOS to
// put when it has none), never otherwise.
std::vector<std::int32_t> tokenizeText(const Tokenizer& tokenizer, std::string_view text, bool addBos);

// tokenizer.ggml.scores, a float per token; empty when the model gives none (BPE vocabularies).
std::vector<float> vocabularyScores(const GgufModel& model);

// The tokens whose vocabulary string or text contains `needle` (bytes, case as given), in id
// order, at most `limit`.
std::vector<std::int32_t> searchVocabulary(const Tokenizer& tokenizer, std::string_view needle,
                                           std::size_t limit);

// {"id", "type", "vocabulary", "piece", "bytes"}: `piece` is null where the bytes are not valid
// UTF-8 (a byte-fallback token), `bytes` their hex.
nlohmann::json tokenRowToJson(const TokenRow& row);

// A table, a token a line: its place (when `numbered`), id, type, vocabulary string and text, each
// string shown through escapeText (a byte-fallback token's byte as \xNN), the text quoted.
std::string tokenTableText(const std::vector<TokenRow>& rows, bool numbered);

} // namespace organ
