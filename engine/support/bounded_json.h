#pragma once

#include "support/errors.h"
#include "support/rooted_files.h"
#include "support/safe_files.h"
#include "support/text_format.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace organ {

// JSON read from files that may be hostile (manifests, shard and fleet reports): its parsed form
// costs some 16 bytes and more a value, so a file's size alone does not bound what reading it
// takes ("[0,0,0,…]" is 2 bytes a value). These count the values as they are parsed and stop
// past a limit.

// Parses `text`, counting every number, string, boolean, null, object and array; past
// `maxValues` it stops with FormatError("LABEL: more than N values, more than WHAT holds"), and
// so it does past kMaxJsonDepth levels of nesting and at a key given twice in one object. Not
// JSON: FormatError("LABEL: not JSON: …").
inline constexpr int kMaxJsonDepth = 64;
nlohmann::json parseBoundedJson(std::string_view text, std::uint64_t maxValues, const std::string& label,
                                const std::string& what);

// The values of a document as parseBoundedJson counts them.
std::uint64_t jsonValueCount(const nlohmann::ordered_json& document);

// What reading a JSON file may cost: its bytes, and its values counted while it is parsed (a
// parsed value costs some 50 bytes: 80 MB of small numbers took 1.6 GB and more).
struct JsonLimits {
    std::uint64_t bytes = 0;
    std::uint64_t values = 0;
};

// The JSON file at `path` ("a fleet report": `what`), read within `limits` and given to `parse`,
// which throws naming what is wrong; every error names the file. Throws IoError or FormatError.
template <typename Parse>
auto readBoundedJson(const RootedPath& path, JsonLimits limits, const std::string& what, Parse parse) {
    const std::string label = fileLabel(path.path);
    const nlohmann::json document =
        parseBoundedJson(readSmallFile(path, limits.bytes), limits.values, label, what);
    try {
        return parse(document);
    } catch (const std::exception& error) {
        throw FormatError(label + ": " + error.what());
    }
}

} // namespace organ
