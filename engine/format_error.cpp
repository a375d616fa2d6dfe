#include "format_error.h"

#include <array>
#include <cstdio>

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

std::string humanBytes(std::uint64_t bytes) {
    static constexpr std::array<const char*, 6> units{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < units.size()) {
        value /= 1024.0;
        ++unit;
    }
    char buffer[32];
    if (unit == 0) {
        std::snprintf(buffer, sizeof buffer, "%llu B", static_cast<unsigned long long>(bytes));
    } else {
        std::snprintf(buffer, sizeof buffer, "%.2f %s", value, units[unit]);
    }
    return buffer;
}

std::string humanCount(std::uint64_t count) {
    static constexpr std::array<const char*, 5> units{"", " K", " M", " B", " T"};
    double value = static_cast<double>(count);
    std::size_t unit = 0;
    while (value >= 1000.0 && unit + 1 < units.size()) {
        value /= 1000.0;
        ++unit;
    }
    char buffer[32];
    if (unit == 0) {
        std::snprintf(buffer, sizeof buffer, "%llu", static_cast<unsigned long long>(count));
    } else {
        std::snprintf(buffer, sizeof buffer, "%.2f%s", value, units[unit]);
    }
    return buffer;
}

std::string fileLabel(std::string_view path) {
    const auto slash = path.find_last_of('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

} // namespace organ
