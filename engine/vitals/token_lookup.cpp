#include "vitals/token_lookup.h"

#include "organs/manifest_values.h"
#include "support/errors.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <algorithm>

namespace organ {

std::string tokenTypeName(std::int32_t type) {
    switch (type) {
    case 1:
        return "normal";
    case 2:
        return "unknown";
    case 3:
        return "control";
    case 4:
        return "user-defined";
    case 5:
        return "unused";
    case 6:
        return "byte";
    default:
        return "type " + std::to_string(type);
    }
}

TokenRow tokenRow(const Tokenizer& tokenizer, std::int32_t id) {
    if (id < 0 || static_cast<std::size_t>(id) >= tokenizer.size()) {
        throw FormatError("token " + std::to_string(id) + " is not in the vocabulary (ids 0 to " +
                          std::to_string(tokenizer.size() - 1) + ")");
    }
    return {tokenizer.vocabularyText(id), tokenizer.piece(id), id, tokenizer.tokenType(id)};
}

std::vector<std::int32_t> tokenizeText(const Tokenizer& tokenizer, std::string_view text, bool addBos) {
    std::vector<std::int32_t> tokens = tokenizer.encode(text);
    const bool hasBos = tokenizer.addsBos() && !tokens.empty() && tokens.front() == tokenizer.bos();
    if (hasBos && !addBos) {
        tokens.erase(tokens.begin());
    } else if (!hasBos && addBos && tokenizer.bos() >= 0 &&
               static_cast<std::size_t>(tokenizer.bos()) < tokenizer.size()) {
        tokens.insert(tokens.begin(), tokenizer.bos());
    }
    return tokens;
}

std::vector<float> vocabularyScores(const GgufModel& model) {
    std::vector<float> scores;
    const MetaValue* found = model.find("tokenizer.ggml.scores");
    if (found == nullptr || !found->isArray()) {
        return scores;
    }
    scores.reserve(static_cast<std::size_t>(found->arraySize()));
    found->forEachElement([&](const MetaValue& e) {
        scores.push_back(static_cast<float>(e.asFloat().value_or(0.0)));
        return true;
    });
    return scores;
}

std::vector<std::int32_t> searchVocabulary(const Tokenizer& tokenizer, std::string_view needle,
                                           std::size_t limit) {
    std::vector<std::int32_t> out;
    for (std::size_t i = 0; i < tokenizer.size() && out.size() < limit; ++i) {
        const auto id = static_cast<std::int32_t>(i);
        if (tokenizer.vocabularyText(id).find(needle) != std::string::npos ||
            tokenizer.piece(id).find(needle) != std::string::npos) {
            out.push_back(id);
        }
    }
    return out;
}

nlohmann::json tokenRowToJson(const TokenRow& row) {
    return {{"id", row.id},
            {"type", tokenTypeName(row.type)},
            {"vocabulary", jsonText(row.vocabulary)},
            {"piece", isValidUtf8(row.piece) ? nlohmann::json(row.piece) : nlohmann::json(nullptr)},
            {"bytes", hexOf(row.piece)}};
}

std::string tokenTableText(const std::vector<TokenRow>& rows, bool numbered) {
    std::size_t width = 12;
    for (const TokenRow& r : rows) {
        width = std::max(width, escapeText(r.vocabulary).size() + 2);
    }
    std::string out = "  " + (numbered ? padText("#", 6, true) : std::string()) + padText("id", 8, true) +
                      "  " + padText("type", 14) + padText("vocabulary", width) + "text\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const TokenRow& r = rows[i];
        out += "  " + (numbered ? padText(std::to_string(i), 6, true) : std::string()) +
               padText(std::to_string(r.id), 8, true) + "  " + padText(tokenTypeName(r.type), 14) +
               padText(escapeText(r.vocabulary), width) +
               (r.piece.empty() ? "" : "\"" + escapeText(r.piece) + "\"") + "\n";
    }
    return out;
}

} // namespace organ
