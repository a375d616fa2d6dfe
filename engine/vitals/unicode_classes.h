#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace organ {

// What the pre-tokenizers' patterns ask of a code point: \p{L}, \p{N}, \p{P} and \s.
enum class CharClass : std::uint8_t { Other, Letter, Number, Punctuation };

struct CharRange {
    char32_t first;
    char32_t last;
    CharClass kind;
};

CharClass charClass(char32_t c);
// Unicode's White_Space property (tab to carriage return, space, NEL, NBSP, the typographic
// spaces, the line and paragraph separators, ideographic space).
bool isWhitespace(char32_t c);

// The code points of UTF-8 text; a byte that starts no valid sequence becomes U+FFFD, as in
// llama.cpp's tokenizer.
std::u32string codePointsOf(std::string_view utf8);
void appendUtf8(std::string& out, char32_t c);
std::string utf8Of(std::u32string_view text);

namespace unicode_data {
extern const CharRange kRanges[];
extern const std::size_t kRangeCount;
} // namespace unicode_data

} // namespace organ
