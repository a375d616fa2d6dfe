#pragma once

#include <stdexcept>
#include <string>

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

} // namespace organ
