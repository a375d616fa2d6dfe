#include "vitals/tokenizer.h"

#include "support/errors.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/unicode_classes.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <queue>

namespace organ {
namespace {

constexpr std::string_view kSpaceMarker = "▁"; // U+2581, SentencePiece's space
constexpr std::int32_t kControl = 3;           // tokenizer.ggml.token_type
constexpr std::int32_t kUserDefined = 4;
constexpr std::int32_t kByte = 6;

// GPT-2's byte alphabet: the printable bytes stand for themselves, the others for the code
// points from U+0100 on, in byte order; byte-level BPE tokens are spelt in it.
struct ByteAlphabet {
    std::string spelling[256];
    std::unordered_map<char32_t, unsigned char> byteOf;
    ByteAlphabet() {
        char32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const char32_t c = printable ? static_cast<char32_t>(b) : next++;
            appendUtf8(spelling[b], c);
            byteOf.emplace(c, static_cast<unsigned char>(b));
        }
    }
};

const ByteAlphabet& byteAlphabet() {
    static const ByteAlphabet alphabet;
    return alphabet;
}

// The text cut at the user-defined tokens: each piece is text (token -1) or one such token.
struct Fragment {
    std::string_view text;
    std::int32_t token = -1;
};

// The length of the character a byte starts, read from its high four bits as llama.cpp reads
// them (so a stray 0xF8-0xFF byte takes the next three with it, as there).
std::size_t utf8Length(unsigned char lead) {
    constexpr std::size_t byHighBits[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return byHighBits[lead >> 4];
}

// Tokens llama.cpp treats as control whatever their type says (end of text, turn or
// generation, fill-in-the-middle markers): never found in the text.
bool looksLikeControl(std::string_view text) {
    static constexpr std::string_view kNames[] = {"</s>",
                                                  "<EOT>",
                                                  "<MID>",
                                                  "<PAD>",
                                                  "<PRE>",
                                                  "<REPO>",
                                                  "<SUF>",
                                                  "<end_of_turn>",
                                                  "<end_of_utterance>",
                                                  "<eos>",
                                                  "<fim-middle>",
                                                  "<fim-pad>",
                                                  "<fim-prefix>",
                                                  "<fim-repo>",
                                                  "<fim-suffix>",
                                                  "<fim_middle>",
                                                  "<fim_pad>",
                                                  "<fim_prefix>",
                                                  "<fim_suffix>",
                                                  "<reponame>",
                                                  "<turn|>",
                                                  "<|calls|>",
                                                  "<|call|>",
                                                  "<|channel|>",
                                                  "<|code_middle|>",
                                                  "<|code_prefix|>",
                                                  "<|code_suffix|>",
                                                  "<|constrain|>",
                                                  "<|end_of_text|>",
                                                  "<|endoftext|>",
                                                  "<|end|>",
                                                  "<|eom_id|>",
                                                  "<|eot_id|>",
                                                  "<|file_sep|>",
                                                  "<|fim_middle|>",
                                                  "<|fim_pad|>",
                                                  "<|fim_prefix|>",
                                                  "<|fim_repo|>",
                                                  "<|fim_suffix|>",
                                                  "<|flush|>",
                                                  "<|im_end|>",
                                                  "<|message|>",
                                                  "<|middle|>",
                                                  "<|prefix|>",
                                                  "<|repo_name|>",
                                                  "<|return|>",
                                                  "<|start|>",
                                                  "<|suffix|>",
                                                  "<|tool_response>",
                                                  "<｜end▁of▁sentence｜>",
                                                  "<｜fim▁begin｜>",
                                                  "<｜fim▁end｜>",
                                                  "<｜fim▁hole｜>",
                                                  "[EOS]",
                                                  "[EOT]",
                                                  "[PAD]",
                                                  "_<EOT>",
                                                  "▁<MID>",
                                                  "▁<PRE>",
                                                  "▁<SUF>"};
    return std::find(std::begin(kNames), std::end(kNames), text) != std::end(kNames);
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

// The characters of a text as symbols linked in a chain, ready to merge.
std::vector<Symbol> charactersOf(std::string_view text) {
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
    return symbols;
}

using BigramQueue = std::priority_queue<Bigram, std::vector<Bigram>, Later>;

// Merges the best pair in the queue into its left symbol, again and again, offering the new
// neighbours to `tryPair`; pairs a merge made stale are skipped.
template <typename TryPair>
void mergeAll(std::vector<Symbol>& symbols, BigramQueue& queue, const TryPair& tryPair) {
    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& left = symbols[static_cast<std::size_t>(b.left)];
        Symbol& right = symbols[static_cast<std::size_t>(b.right)];
        if (left.length == 0 || right.length == 0 || left.length + right.length != b.length ||
            left.next != b.right) {
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
}
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
    if (*name != "llama" && *name != "gpt2") {
        throw VitalsUnavailable(label + ": vital signs are not available for the '" + escapeText(*name) +
                                "' tokenizer (only SentencePiece-style 'llama' and byte-level BPE 'gpt2')");
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
    if (*name == "gpt2") {
        t.m_bytePairs = true;
        const MetaValue* pre = find("tokenizer.ggml.pre");
        const std::string preName(pre ? pre->asString().value_or(std::string_view()) : std::string_view());
        const auto kind = preTokenizerNamed(preName);
        if (!kind) {
            throw VitalsUnavailable(label + ": vital signs are not available for the '" +
                                    escapeText(preName) + "' pre-tokenizer (tokenizer.ggml.pre)");
        }
        t.m_pre = *kind;
        const MetaValue* merges = find("tokenizer.ggml.merges");
        if (merges == nullptr || !merges->isArray()) {
            throw FormatError(label + ": a BPE vocabulary needs tokenizer.ggml.merges");
        }
        std::int32_t rank = 0;
        merges->forEachElement([&](const MetaValue& e) {
            const auto merge = e.asString();
            const std::size_t space = merge ? merge->find(' ', 1) : std::string::npos;
            if (space == std::string::npos) {
                throw FormatError(label + ": tokenizer.ggml.merges holds an entry that is not two tokens");
            }
            t.m_ranks.emplace(*merge, rank++); // the first of duplicates
            return true;
        });
    }
    for (std::size_t i = 0; i < t.m_tokens.size(); ++i) {
        if (t.m_types[i] == kUserDefined && !t.m_tokens[i].empty() && !looksLikeControl(t.m_tokens[i])) {
            t.m_userDefined.push_back(static_cast<std::int32_t>(i));
        }
    }
    std::stable_sort(t.m_userDefined.begin(), t.m_userDefined.end(), [&t](std::int32_t a, std::int32_t b) {
        return t.m_tokens[static_cast<std::size_t>(a)].size() >
               t.m_tokens[static_cast<std::size_t>(b)].size();
    });
    // Phi-3's own tokens swallow the spaces after them (llama.cpp knows the model by name).
    if (const MetaValue* modelName = find("general.name")) {
        std::string lower(modelName->asString().value_or(std::string_view()));
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        t.m_stripAfterUserDefined =
            lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos;
    }
    t.m_bos = idKey(find, "tokenizer.ggml.bos_token_id", t.m_tokens.size());
    t.m_eos = idKey(find, "tokenizer.ggml.eos_token_id", t.m_tokens.size());
    const bool bosByDefault = !t.m_bytePairs || t.m_pre == PreTokenizer::Llama3;
    t.m_addBos = boolKey(find, "tokenizer.ggml.add_bos_token").value_or(bosByDefault) && t.m_bos >= 0;
    t.m_addSpacePrefix = boolKey(find, "tokenizer.ggml.add_space_prefix").value_or(!t.m_bytePairs);
    return t;
}

std::optional<std::int32_t> Tokenizer::leadingBos() const {
    return m_addBos ? std::optional<std::int32_t>(m_bos) : std::nullopt;
}

std::int32_t Tokenizer::lookup(std::string_view text) const {
    const auto it = m_ids.find(std::string(text));
    return it == m_ids.end() ? -1 : it->second;
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view raw) const {
    std::vector<std::int32_t> out;
    if (m_addBos) {
        out.push_back(m_bos);
    }
    // User-defined tokens are found whole first, the longest first.
    std::vector<Fragment> fragments;
    if (!raw.empty()) {
        fragments.push_back({raw, -1});
    }
    for (const std::int32_t id : m_userDefined) {
        const std::string& token = m_tokens[static_cast<std::size_t>(id)];
        std::vector<Fragment> cut;
        for (const Fragment& f : fragments) {
            if (f.token >= 0) {
                cut.push_back(f);
                continue;
            }
            std::string_view rest = f.text;
            for (std::size_t at = rest.find(token); at != std::string_view::npos; at = rest.find(token)) {
                if (at > 0) {
                    cut.push_back({rest.substr(0, at), -1});
                }
                cut.push_back({rest.substr(at, token.size()), id});
                rest.remove_prefix(at + token.size());
                while (m_stripAfterUserDefined && !rest.empty() &&
                       std::isspace(static_cast<unsigned char>(rest.front()))) {
                    rest.remove_prefix(1);
                }
            }
            if (!rest.empty()) {
                cut.push_back({rest, -1});
            }
        }
        fragments = std::move(cut);
    }
    bool afterToken = true; // SentencePiece puts a space before text that starts or follows a token
    for (const Fragment& f : fragments) {
        if (f.token >= 0) {
            out.push_back(f.token);
            afterToken = true;
        } else if (m_bytePairs) {
            encodeBytePairs(f.text, out);
        } else {
            std::string text = m_addSpacePrefix && afterToken ? std::string(kSpaceMarker) : std::string();
            for (const char c : f.text) {
                if (c == ' ') {
                    text += kSpaceMarker;
                } else {
                    text += c;
                }
            }
            encodeSentencePiece(text, out);
            afterToken = false;
        }
    }
    return out;
}

// Spaces already ▁.
void Tokenizer::encodeSentencePiece(std::string_view text, std::vector<std::int32_t>& out) const {
    std::vector<Symbol> symbols = charactersOf(text);
    // Merge the best-scoring adjacent pair that is a token, again and again; remember how each
    // merged text was made so that a text that is no token is split back into its parts.
    BigramQueue queue;
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
    mergeAll(symbols, queue, tryPair);
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
            const std::int32_t token = m_bytes[static_cast<unsigned char>(c)];
            if (token >= 0) {
                out.push_back(token);
            }
        }
    };
    for (int i = 0; i != -1; i = symbols[static_cast<std::size_t>(i)].next) {
        emit(symbols[static_cast<std::size_t>(i)]);
    }
}

void Tokenizer::encodeBytePairs(std::string_view raw, std::vector<std::int32_t>& out) const {
    const ByteAlphabet& alphabet = byteAlphabet();
    for (const std::string& word : preTokenize(m_pre, raw)) {
        std::string spelt;
        for (const char c : word) {
            spelt += alphabet.spelling[static_cast<unsigned char>(c)];
        }
        encodeWord(spelt, out);
    }
}

// One word in the byte alphabet: its characters merged pair by pair, the lowest-ranked merge
// first (the leftmost on a tie), then looked up; a piece that is no token falls to its bytes.
void Tokenizer::encodeWord(const std::string& word, std::vector<std::int32_t>& out) const {
    if (takesWholeWords(m_pre)) {
        if (const std::int32_t whole = lookup(word); whole >= 0) {
            out.push_back(whole);
            return;
        }
    }
    std::vector<Symbol> symbols = charactersOf(word);
    // Lower rank first: the score is the negated rank.
    BigramQueue queue;
    auto tryPair = [&](int left, int right) {
        if (left < 0 || right < 0) {
            return;
        }
        const Symbol& l = symbols[static_cast<std::size_t>(left)];
        const Symbol& r = symbols[static_cast<std::size_t>(right)];
        std::string key(word, l.begin, l.length);
        key += ' ';
        key.append(word, r.begin, r.length);
        const auto rank = m_ranks.find(key);
        if (rank != m_ranks.end()) {
            queue.push({left, right, -static_cast<float>(rank->second), l.length + r.length});
        }
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) {
        tryPair(i - 1, i);
    }
    mergeAll(symbols, queue, tryPair);
    for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[static_cast<std::size_t>(i)].next) {
        const Symbol& s = symbols[static_cast<std::size_t>(i)];
        const std::string_view piece(word.data() + s.begin, s.length);
        if (const std::int32_t token = lookup(piece); token >= 0) {
            out.push_back(token);
            continue;
        }
        for (const char c : piece) {
            if (const std::int32_t token = lookup(std::string_view(&c, 1)); token >= 0) {
                out.push_back(token);
            }
        }
    }
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
    if (type == kUserDefined) {
        return text;
    }
    if (type == kByte && text.size() == 6 && text.starts_with("<0x") && text[5] == '>') {
        const auto hex = [](char c) {
            return c >= '0' && c <= '9'   ? c - '0'
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : -1;
        };
        const int high = hex(text[3]);
        const int low = hex(text[4]);
        if (high >= 0 && low >= 0) {
            return std::string(1, static_cast<char>(high * 16 + low));
        }
    }
    std::string out;
    if (m_bytePairs) {
        // Back from GPT-2's byte alphabet; a character outside it is kept as it is.
        const ByteAlphabet& alphabet = byteAlphabet();
        for (const char32_t c : codePointsOf(text)) {
            const auto byte = alphabet.byteOf.find(c);
            if (byte != alphabet.byteOf.end()) {
                out += static_cast<char>(byte->second);
            } else {
                appendUtf8(out, c);
            }
        }
        return out;
    }
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

std::string Tokenizer::kind() const {
    return m_bytePairs ? "gpt2 (" + std::string(preTokenizerName(m_pre)) + ")" : "llama";
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& tokens) const {
    std::string out;
    for (const std::int32_t t : tokens) {
        out += piece(t);
    }
    return out;
}

} // namespace organ
