#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace organ {

// "9123456789" -> "9 123 456 789": byte offsets in messages are read by people.
std::string groupDigits(std::uint64_t value);

// "1.2 GiB", "512 B": sizes in summaries.
std::string humanBytes(std::uint64_t bytes);

// "1.24 B", "260 K": parameter counts in summaries.
std::string humanCount(std::uint64_t count);

// `text` padded with spaces to `width` columns, counting UTF-8 code points so that "×" and
// "θ" line up in terminal tables; longer text is left as it is.
std::string padText(std::string text, std::size_t width, bool alignRight = false);

// "36.65": a fixed number of decimals.
std::string fixedDecimals(double value, int digits);

// The last path component, which is how messages name a file ("models/" is "models", "/" is "/", an
// empty path "(an empty path)").
std::string fileLabel(std::string_view path);

// "/dev/zero: is a character device, not a regular file": what a file that is not one is, named by
// fileLabel() but a device, or anything under /dev or /proc, by its whole path (its last component
// alone, "zero" or "stdout", says nothing).
// `mode` is stat's st_mode.
std::string notRegularFile(std::string_view path, unsigned mode);

} // namespace organ
