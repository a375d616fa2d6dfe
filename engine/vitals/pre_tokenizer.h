#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// How a byte-level BPE vocabulary cuts text into words before merging (tokenizer.ggml.pre),
// following the patterns of the tokenizers these vocabularies come from, as llama.cpp applies
// them: a chain of patterns, each cutting the pieces the one before left.
enum class PreTokenizer {
    Gpt2,      // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
    Llama3,    // case-blind contractions, [^\r\n\p{L}\p{N}]?\p{L}+, \p{N}{1,3}, newlines kept apart
    Qwen2,     // Llama 3's pattern with one digit per word
    StarCoder, // each digit alone, then GPT-2's pattern
    Falcon,    // runs of punctuation, GPT-2's pattern, then three-digit groups
    Default,   // a BPE vocabulary that names no pre-tokenizer: Falcon's chain with \p{N}+
};

// The pre-tokenizer a tokenizer.ggml.pre value names; nullopt for one not supported.
std::optional<PreTokenizer> preTokenizerNamed(std::string_view name);
// The name it is reported by.
std::string_view preTokenizerName(PreTokenizer kind);
// For a llama-3-style vocabulary a word that is itself a token is taken whole, merges unused.
bool takesWholeWords(PreTokenizer kind);

// The words of a text (UTF-8; invalid bytes read as U+FFFD), in order, joining back to the text.
std::vector<std::string> preTokenize(PreTokenizer kind, std::string_view text);

} // namespace organ
