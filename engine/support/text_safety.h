#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace organ {

// Strings from files (model and tensor names, metadata keys and values, tokens, paths) are
// bytes, not text: they may be invalid UTF-8 or carry control characters that a terminal
// obeys (ESC sequences set its title or clear the screen). The engine keeps them raw; every
// output shows them through one of these, documented in docs/gguf.md ("Strings from files").

// For people (terminal, CSV, Markdown, the window): valid printable UTF-8 as it is; a
// backslash as \\; C0 controls and DEL as \xNN; C1 controls, line and paragraph separators and
// bidirectional overrides as \u{NNNN}; every byte of an invalid UTF-8 sequence as \xNN.
std::string escapeText(std::string_view raw);

bool isValidUtf8(std::string_view text);

// For JSON: valid UTF-8 unchanged (JSON escapes control characters itself); a string that is
// not valid UTF-8 is written in its escapeText form, so that nothing is dropped.
std::string jsonText(std::string_view raw);

// Serialises JSON that may hold raw strings from files: never throws on invalid UTF-8 (such
// strings and object keys are written as jsonText), and writes DEL, C1 controls, U+2028/2029
// and bidirectional overrides as \u escapes, so that the text is safe on a terminal and
// means the same. indent < 0: compact.
std::string dumpJson(const nlohmann::json& json, int indent = -1);

} // namespace organ
