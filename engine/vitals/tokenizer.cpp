#include "vitals/tokenizer.h"

#include "support/errors.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <queue>

namespace organ {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81"; // U+2581, SentencePiece's space
constexpr std::int32_t kControl = 3;                      // tokenizer.ggml.token_type
constexpr std::int32_t kByte = 6;

std::size_t utf8Length(unsigned char lead) {
    return lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 1;
}

using FindKey = std::function<const MetaValue*(std::string_view key)>;

std::optional<bool> boolKey(const FindKey& find, std::string_view key) {
    const MetaValue* v = find(key);
    return v ? v->asBool() : std::nullopt;
}

std::int32_t idKey(const FindKey& find, std::string_view key, std::size_t size) {
    const MetaValue* v = find(key);
    const auto id = v ? v->asUInt() : std::nullopt;
    return id && *id < size ? static_cast<std::int32_t>(*id) : -1;
}

// One piece of text while merging: a span of the input, linked to its neighbours.
struct Symbol {
    std::size_t begin = 0;
    std::size_t length = 0;
    int prev = -1;
    int next = -1;
};

struct Bigram {
    int left = 0;
    int right = 0;
    float score = 0;
    std::size_t length = 0;
};

// Higher score first; on a tie, the leftmost pair.
struct Later {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

} // namespace

Tokenizer Tokenizer::fromModel(const GgufModel& model) {
    return build(fileLabel(model.path()), [&model](std::string_view key) { return model.find(key); });
}

Tokenizer Tokenizer::fromWeights(const ModelWeights& weights) {
    return build(weights.label(), [&weights](std::string_view key) { return weights.find(key); });
}

Tokenizer Tokenizer::build(const std::string& label, const FindKey& find) {
    const MetaValue* kind = find("tokenizer.ggml.model");
    const auto name = kind ? kind->asString() : std::nullopt;
    if (!name) {
        throw VitalsUnavailable(label + ": vital signs need a vocabulary (tokenizer.ggml.model is missing)");
    }
    if (*name != "llama") {
        throw VitalsUnavailable(label + ": vital signs are not available for the '" + escapeText(*name) +
                                "' tokenizer yet (only SentencePiece-style 'llama')");
    }
    const MetaValue* tokens = find("tokenizer.ggml.tokens");
    const MetaValue* scores = find("tokenizer.ggml.scores");
    if (tokens == nullptr || !tokens->isArray()) {
        throw FormatError(label + ": tokenizer.ggml.tokens is missing or not an array");
    }
    Tokenizer t;
    tokens->forEachElement([&](const MetaValue& e) {
        const auto text = e.asString();
        if (!text) {
            throw FormatError(label + ": tokenizer.ggml.tokens holds a value that is not a string");
        }
        t.m_tokens.emplace_back(*text);
        return true;
    });
    t.m_scores.assign(t.m_tokens.size(), 0.0f);
    if (scores != nullptr && scores->isArray()) {
        std::size_t i = 0;
        scores->forEachElement([&](const MetaValue& e) {
            if (i < t.m_scores.size()) {
                t.m_scores[i++] = static_cast<float>(e.asFloat().value_or(0.0));
            }
            return i < t.m_scores.size();
        });
    }
    t.m_types.assign(t.m_tokens.size(), 1);
    if (const MetaValue* types = find("tokenizer.ggml.token_type"); types != nullptr && types->isArray()) {
        std::size_t i = 0;
        types->forEachElement([&](const MetaValue& e) {
            if (i < t.m_types.size()) {
                t.m_types[i++] = static_cast<std::int32_t>(e.asInt().value_or(1));
            }
            return i < t.m_types.size();
        });
    }
    for (std::size_t i = 0; i < t.m_tokens.size(); ++i) {
        t.m_ids.emplace(t.m_tokens[i], static_cast<std::int32_t>(i)); // the first of duplicates
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        t.m_bytes[b] = t.lookup(name);
    }
    t.m_bos = idKey(find, "tokenizer.ggml.bos_token_id", t.m_tokens.size());
    t.m_eos = idKey(find, "tokenizer.ggml.eos_token_id", t.m_tokens.size());
    t.m_addBos = boolKey(find, "tokenizer.ggml.add_bos_token").value_or(true) && t.m_bos >= 0;
    t.m_addSpacePrefix = boolKey(find, "tokenizer.ggml.add_space_prefix").value_or(true);
    return t;
}

std::int32_t Tokenizer::lookup(std::string_view text) const {
    const auto it = m_ids.find(std::string(text));
    return it == m_ids.end() ? -1 : it->second;
}

std::int32_t Tokenizer::byteToken(unsigned char byte) const {
    return m_bytes[byte];
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view raw) const {
    std::vector<std::int32_t> out;
    if (m_addBos) {
        out.push_back(m_bos);
    }
    if (raw.empty()) {
        return out;
    }
    // Spaces become ▁, with one in front of the text.
    std::string text = m_addSpacePrefix ? std::string(kSpaceMarker) : std::string();
    for (const char c : raw) {
        if (c == ' ') {
            text += kSpaceMarker;
        } else {
            text += c;
        }
    }
    std::vector<Symbol> symbols;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t n = std::min(utf8Length(static_cast<unsigned char>(text[at])), text.size() - at);
        Symbol s;
        s.begin = at;
        s.length = n;
        s.prev = static_cast<int>(symbols.size()) - 1;
        at += n;
        s.next = at == text.size() ? -1 : static_cast<int>(symbols.size()) + 1;
        symbols.push_back(s);
    }
    // Merge the best-scoring adjacent pair that is a token, again and again; remember how each
    // merged text was made so that a text that is no token is split back into its parts.
    std::priority_queue<Bigram, std::vector<Bigram>, Later> queue;
    std::map<std::string, std::pair<int, int>, std::less<>> madeOf;
    auto tryPair = [&](int left, int right) {
        if (left < 0 || right < 0) {
            return;
        }
        const std::string_view pair(text.data() + symbols[left].begin,
                                    symbols[left].length + symbols[right].length);
        const std::int32_t token = lookup(pair);
        if (token < 0) {
            return;
        }
        queue.push({left, right, m_scores[static_cast<std::size_t>(token)], pair.size()});
        madeOf[std::string(pair)] = {left, right};
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) {
        tryPair(i - 1, i);
    }
    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& left = symbols[static_cast<std::size_t>(b.left)];
        Symbol& right = symbols[static_cast<std::size_t>(b.right)];
        if (left.length == 0 || right.length == 0 || left.length + right.length != b.length) {
            continue; // one side merged meanwhile
        }
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) {
            symbols[static_cast<std::size_t>(right.next)].prev = b.left;
        }
        tryPair(left.prev, b.left);
        tryPair(b.left, left.next);
    }
    const std::function<void(const Symbol&)> emit = [&](const Symbol& s) {
        const std::string_view piece(text.data() + s.begin, s.length);
        if (const std::int32_t token = lookup(piece); token >= 0) {
            out.push_back(token);
            return;
        }
        if (const auto it = madeOf.find(piece); it != madeOf.end()) {
            emit(symbols[static_cast<std::size_t>(it->second.first)]);
            emit(symbols[static_cast<std::size_t>(it->second.second)]);
            return;
        }
        for (const char c : piece) {
            const std::int32_t token = byteToken(static_cast<unsigned char>(c));
            if (token >= 0) {
                out.push_back(token);
            }
        }
    };
    for (int i = 0; i != -1; i = symbols[static_cast<std::size_t>(i)].next) {
        emit(symbols[static_cast<std::size_t>(i)]);
    }
    return out;
}

std::string Tokenizer::piece(std::int32_t token) const {
    if (token < 0 || static_cast<std::size_t>(token) >= m_tokens.size()) {
        return {};
    }
    const std::string& text = m_tokens[static_cast<std::size_t>(token)];
    const std::int32_t type = m_types[static_cast<std::size_t>(token)];
    if (type == kControl) {
        return {};
    }
    if (type == kByte && text.size() == 6 && text.starts_with("<0x")) {
        return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
    }
    std::string out;
    for (std::size_t at = 0; at < text.size();) {
        if (std::string_view(text).substr(at).starts_with(kSpaceMarker)) {
            out += ' ';
            at += kSpaceMarker.size();
        } else {
            out += text[at++];
        }
    }
    return out;
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& tokens) const {
    std::string out;
    for (const std::int32_t t : tokens) {
        out += piece(t);
    }
    return out;
}

} // namespace organ
