#include "vitals/pre_tokenizer.h"

#include "vitals/unicode_classes.h"

#include <array>
#include <functional>

namespace organ {
namespace {

// A cut of the text into pieces: the lengths, in code points, one after another.
using Cut = std::vector<std::size_t>;

// One piece at a time: [begin, end) of the code points; `take` returns the end of the next
// word starting at `at` (always past `at`).
using Rule = std::function<std::size_t(const std::u32string& text, std::size_t at, std::size_t end)>;

Cut apply(const std::u32string& text, const Cut& cut, const Rule& rule) {
    Cut out;
    out.reserve(cut.size());
    std::size_t begin = 0;
    for (const std::size_t length : cut) {
        const std::size_t end = begin + length;
        for (std::size_t at = begin; at < end;) {
            const std::size_t next = rule(text, at, end);
            out.push_back(next - at);
            at = next;
        }
        begin = end;
    }
    return out;
}

struct Piece {
    const std::u32string& text;
    std::size_t end;
    // Out of the piece reads as a class of its own, neither letter, number, space nor other.
    bool inside(std::size_t i) const { return i < end; }
    bool letter(std::size_t i) const { return inside(i) && charClass(text[i]) == CharClass::Letter; }
    bool number(std::size_t i) const { return inside(i) && charClass(text[i]) == CharClass::Number; }
    bool space(std::size_t i) const { return inside(i) && isWhitespace(text[i]); }
    bool other(std::size_t i) const { return inside(i) && !letter(i) && !number(i) && !space(i); }
    bool newline(std::size_t i) const { return inside(i) && (text[i] == '\r' || text[i] == '\n'); }
};

char32_t lower(char32_t c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

// 's 't 'm 'd 're 've 'll at `at`: the end of the contraction, or `at` when there is none.
std::size_t contraction(const Piece& p, std::size_t at, bool caseBlind) {
    if (p.text[at] != '\'' || !p.inside(at + 1)) {
        return at;
    }
    auto fold = [&](std::size_t i) { return caseBlind ? lower(p.text[i]) : p.text[i]; };
    const char32_t a = fold(at + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        return at + 2;
    }
    if (p.inside(at + 2)) {
        const char32_t b = fold(at + 2);
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
            return at + 3;
        }
    }
    return at;
}

// \s+(?!\S) then \s+: a run of spaces gives up its last one to the word that follows it.
std::size_t spaces(const Piece& p, std::size_t at) {
    std::size_t n = 0;
    while (p.space(at + n)) {
        ++n;
    }
    if (n > 1 && p.inside(at + n)) {
        return at + n - 1;
    }
    return at + (n > 0 ? n : 1); // no pattern matches: the code point alone
}

std::size_t gpt2Word(const std::u32string& text, std::size_t at, std::size_t end) {
    const Piece p{text, end};
    if (const std::size_t c = contraction(p, at, false); c != at) {
        return c;
    }
    const std::size_t from = text[at] == ' ' ? at + 1 : at; // the optional leading space
    using Test = bool (Piece::*)(std::size_t) const;
    for (const Test test : std::array<Test, 3>{&Piece::letter, &Piece::number, &Piece::other}) {
        if ((p.*test)(from)) {
            std::size_t i = from;
            while ((p.*test)(i)) {
                ++i;
            }
            return i;
        }
    }
    return spaces(p, at);
}

std::size_t llama3Word(const std::u32string& text, std::size_t at, std::size_t end, std::size_t maxDigits) {
    const Piece p{text, end};
    if (const std::size_t c = contraction(p, at, true); c != at) {
        return c;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!p.newline(at) && !p.number(at) && (p.letter(at) || p.letter(at + 1))) {
        std::size_t i = at + 1;
        while (p.letter(i)) {
            ++i;
        }
        return i;
    }
    // \p{N}{1,maxDigits}
    if (p.number(at)) {
        std::size_t i = at;
        while (p.number(i) && i - at < maxDigits) {
            ++i;
        }
        return i;
    }
    // ?[^\s\p{L}\p{N}]+[\r\n]*
    const std::size_t from = text[at] == ' ' ? at + 1 : at;
    if (p.other(from)) {
        std::size_t i = from;
        while (p.other(i)) {
            ++i;
        }
        while (p.newline(i)) {
            ++i;
        }
        return i;
    }
    // \s*[\r\n]+: up to the last newline of the run of spaces
    std::size_t lastNewline = at;
    for (std::size_t i = at; p.space(i); ++i) {
        if (p.newline(i)) {
            lastNewline = i + 1;
        }
    }
    if (lastNewline != at) {
        return lastNewline;
    }
    return spaces(p, at);
}

// A run of code points passing `test`, or the stretch up to the next such run.
Rule runs(std::function<bool(char32_t)> test, std::size_t maxRun) {
    return [test = std::move(test), maxRun](const std::u32string& text, std::size_t at, std::size_t end) {
        std::size_t i = at;
        if (test(text[at])) {
            while (i < end && i - at < maxRun && test(text[i])) {
                ++i;
            }
            return i;
        }
        while (i < end && !test(text[i])) {
            ++i;
        }
        return i;
    };
}

// [0-9][0-9][0-9]: groups of three ASCII digits; fewer left over stay with the text around them.
std::size_t digitTriples(const std::u32string& text, std::size_t at, std::size_t end) {
    auto digit = [&](std::size_t i) { return i < end && text[i] >= '0' && text[i] <= '9'; };
    auto tripleAt = [&](std::size_t i) { return digit(i) && digit(i + 1) && digit(i + 2); };
    if (tripleAt(at)) {
        return at + 3;
    }
    std::size_t i = at + 1;
    while (i < end && !tripleAt(i)) {
        // A triple is looked for only where the last one could not start.
        ++i;
    }
    return i;
}

// [\p{P}$+<=>^~|`]+ (Falcon) or without the backtick (the default chain): on ASCII every
// punctuation and symbol character but the ones left out, elsewhere Unicode punctuation.
bool punctuationRun(char32_t c, bool backtick) {
    if (c < 0x80) {
        const bool ascii = (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
                           (c >= 0x7B && c <= 0x7E);
        return ascii && (backtick || c != '`');
    }
    return charClass(c) == CharClass::Punctuation;
}

} // namespace

std::optional<PreTokenizer> preTokenizerNamed(std::string_view name) {
    for (const std::string_view n :
         {"gpt-2", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de",
          "gigachat", "mellum", "trillion", "granite-docling", "a.x-4.0"}) {
        if (name == n) {
            return PreTokenizer::Gpt2;
        }
    }
    for (const std::string_view n : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                                     "midm-2.0", "lfm2", "dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}) {
        if (name == n) {
            return PreTokenizer::Llama3;
        }
    }
    for (const std::string_view n : {"qwen2", "deepseek-r1-qwen", "stablelm2", "hunyuan", "kormo"}) {
        if (name == n) {
            return PreTokenizer::Qwen2;
        }
    }
    for (const std::string_view n :
         {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}) {
        if (name == n) {
            return PreTokenizer::StarCoder;
        }
    }
    if (name == "falcon") {
        return PreTokenizer::Falcon;
    }
    if (name == "default" || name.empty()) {
        return PreTokenizer::Default;
    }
    return std::nullopt;
}

std::string_view preTokenizerName(PreTokenizer kind) {
    switch (kind) {
    case PreTokenizer::Gpt2:
        return "gpt-2";
    case PreTokenizer::Llama3:
        return "llama3";
    case PreTokenizer::Qwen2:
        return "qwen2";
    case PreTokenizer::StarCoder:
        return "starcoder";
    case PreTokenizer::Falcon:
        return "falcon";
    case PreTokenizer::Default:
        return "default";
    }
    return "default";
}

bool takesWholeWords(PreTokenizer kind) {
    return kind == PreTokenizer::Llama3;
}

std::vector<std::string> preTokenize(PreTokenizer kind, std::string_view utf8) {
    const std::u32string text = codePointsOf(utf8);
    if (text.empty()) {
        return {};
    }
    const Rule gpt2 = gpt2Word;
    const auto isNumber = [](char32_t c) { return charClass(c) == CharClass::Number; };
    std::vector<Rule> chain;
    switch (kind) {
    case PreTokenizer::Gpt2:
        chain = {gpt2};
        break;
    case PreTokenizer::Llama3:
    case PreTokenizer::Qwen2: {
        const std::size_t digits = kind == PreTokenizer::Llama3 ? 3 : 1;
        chain = {[digits](const std::u32string& t, std::size_t at, std::size_t end) {
            return llama3Word(t, at, end, digits);
        }};
        break;
    }
    case PreTokenizer::StarCoder:
        chain = {runs(isNumber, 1), gpt2};
        break;
    case PreTokenizer::Falcon:
        chain = {runs([](char32_t c) { return punctuationRun(c, true); }, SIZE_MAX), gpt2, digitTriples};
        break;
    case PreTokenizer::Default:
        chain = {runs([](char32_t c) { return punctuationRun(c, false); }, SIZE_MAX), gpt2,
                 runs(isNumber, SIZE_MAX), digitTriples};
        break;
    }
    Cut cut{text.size()};
    for (const Rule& rule : chain) {
        cut = apply(text, cut, rule);
    }
    std::vector<std::string> words;
    words.reserve(cut.size());
    std::size_t at = 0;
    for (const std::size_t length : cut) {
        words.push_back(utf8Of(std::u32string_view(text).substr(at, length)));
        at += length;
    }
    return words;
}

} // namespace organ
