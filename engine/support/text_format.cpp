#include "support/text_format.h"

#include <array>
#include <cstdio>
#include <sys/stat.h>

namespace organ {

std::string groupDigits(std::uint64_t value) {
    const std::string digits = std::to_string(value);
    std::string out;
    out.reserve(digits.size() + digits.size() / 3);
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) {
            out.push_back(' ');
        }
        out.push_back(digits[i]);
    }
    return out;
}

namespace {

// "1.24 B" / "1.13 MiB": divides by `base` until the value fits the unit.
template <std::size_t N>
std::string scaled(std::uint64_t value, double base, const std::array<const char*, N>& units) {
    double scaledValue = static_cast<double>(value);
    std::size_t unit = 0;
    while (scaledValue >= base && unit + 1 < units.size()) {
        scaledValue /= base;
        ++unit;
    }
    char buffer[32];
    if (unit == 0) {
        std::snprintf(buffer, sizeof buffer, "%llu%s", static_cast<unsigned long long>(value), units[0]);
    } else {
        std::snprintf(buffer, sizeof buffer, "%.2f%s", scaledValue, units[unit]);
    }
    return buffer;
}

} // namespace

std::string humanBytes(std::uint64_t bytes) {
    static constexpr std::array<const char*, 6> units{" B", " KiB", " MiB", " GiB", " TiB", " PiB"};
    return scaled(bytes, 1024.0, units);
}

std::string humanCount(std::uint64_t count) {
    static constexpr std::array<const char*, 5> units{"", " K", " M", " B", " T"};
    return scaled(count, 1000.0, units);
}

std::string padText(std::string text, std::size_t width, bool alignRight) {
    std::size_t points = 0;
    for (unsigned char c : text) {
        points += (c & 0xC0) != 0x80;
    }
    if (points >= width) {
        return text;
    }
    const std::string fill(width - points, ' ');
    return alignRight ? fill + text : text + fill;
}

std::string fixedDecimals(double value, int digits) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
    return buffer;
}

std::string fileLabel(std::string_view path) {
    const auto end = path.find_last_not_of('/');
    if (end == std::string_view::npos) {
        return std::string(path.empty() ? "(an empty path)" : "/");
    }
    path = path.substr(0, end + 1);
    const auto slash = path.find_last_of('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string notRegularFile(std::string_view path, unsigned mode) {
    const char* kind = S_ISDIR(mode)    ? "a folder"
                       : S_ISCHR(mode)  ? "a character device, not a regular file"
                       : S_ISBLK(mode)  ? "a block device, not a regular file"
                       : S_ISFIFO(mode) ? "a FIFO (named pipe), not a regular file"
                       : S_ISSOCK(mode) ? "a socket, not a regular file"
                                        : "not a regular file";
    // A device, or anything under /dev or /proc (/dev/stdout, a pipe), by its whole path: its last
    // component alone ("zero", "stdout", "1") says nothing.
    const bool system =
        S_ISCHR(mode) || S_ISBLK(mode) || path.starts_with("/dev/") || path.starts_with("/proc/");
    return (system ? std::string(path) : fileLabel(path)) + ": is " + kind;
}

} // namespace organ
