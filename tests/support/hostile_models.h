#pragma once

#include "gguf/gguf_writer.h"

#include <string>

namespace organ::testing {

// Bytes a terminal would obey and bytes that are not UTF-8, as they appear in the names and
// values of the hostile model.
inline const std::string kHostileName = "l\xff\xfe"
                                        "a\x1b]0;owned\x07\x1b[2J";
inline const std::string kHostileKey = "evil.key\x1b[31m\x9b";
inline const std::string kHostileValue = "bad \xc3\x28 value\nwith a newline\x1b[H";
inline const std::string kHostileTensor = "evil\x1b[2J\xff.weight";

// A small llama model (1 block, embedding 8) that llama.cpp loads and that grafts, whose
// general.name, one metadata key and value and three tokens carry control characters and
// invalid UTF-8. With `hostileTensor`, it also has a tensor named so (which llama.cpp does
// not load: the model is then invalid). `seed` varies the weights.
GgufWriteSpec hostileModelSpec(std::uint8_t seed = 1, bool hostileTensor = true);

} // namespace organ::testing
