#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace organ {

// Thrown by the reader, writer and anatomy code when a file is not what it claims to be.
// The message always names the file and, where one exists, the field and its byte offset.
class FormatError : public std::runtime_error {
public:
    explicit FormatError(const std::string& message) : std::runtime_error(message) {}
};

// Thrown for I/O failures (open, map, write, rename) with the file and the system's reason.
class IoError : public std::runtime_error {
public:
    explicit IoError(const std::string& message) : std::runtime_error(message) {}
};

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

// The last path component, which is how messages name a file.
std::string fileLabel(std::string_view path);

} // namespace organ
