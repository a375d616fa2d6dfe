#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// RFC 4648 base64 with padding: how binary bytes (a shard's header) travel in a JSON report.
std::string toBase64(std::span<const std::byte> bytes);
// Nothing when `text` is not canonical padded base64 (wrong length, a foreign character,
// misplaced padding or non-zero bits in the last group).
std::optional<std::vector<std::byte>> fromBase64(std::string_view text);

} // namespace organ
