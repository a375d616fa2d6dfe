#pragma once

#include "gguf/meta_value.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace organ {

// Bytes as lowercase hexadecimal, and back (nullopt for anything but pairs of hex digits).
std::string hexOf(std::string_view bytes);
std::optional<std::string> bytesOfHex(std::string_view hex);

// A metadata entry as an organ manifest stores it ({"key", "type", "value"}; arrays with
// "element_type"; strings that are not UTF-8 as {"hex"}; non-finite floats as {"bits"}), and
// back, exactly. Reading throws FormatError naming `where`.
nlohmann::ordered_json metaValueToManifest(const std::string& key, const MetaValue& value);
MetaValue metaValueFromManifest(const nlohmann::json& entry, const std::string& where);

} // namespace organ
