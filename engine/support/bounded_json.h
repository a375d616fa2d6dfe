#pragma once

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
// `maxValues` it stops with FormatError("LABEL: more than N values, more than WHAT holds").
// Not JSON: FormatError("LABEL: not JSON: …").
nlohmann::json parseBoundedJson(std::string_view text, std::uint64_t maxValues, const std::string& label,
                                const std::string& what);

// The values of a document as parseBoundedJson counts them.
std::uint64_t jsonValueCount(const nlohmann::ordered_json& document);

} // namespace organ
