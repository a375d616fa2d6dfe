#include "support/base64.h"

#include <array>
#include <cstdint>

namespace organ {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> decodingTable() {
    std::array<std::int8_t, 256> table{};
    for (auto& v : table) {
        v = -1;
    }
    for (int i = 0; i < 64; ++i) {
        table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
    }
    return table;
}

} // namespace

std::string toBase64(std::span<const std::byte> bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    auto at = [&](std::size_t k) { return static_cast<std::uint32_t>(bytes[k]); };
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
        for (int shift : {18, 12, 6, 0}) {
            out += kAlphabet[(v >> shift) & 63];
        }
    }
    const std::size_t rest = bytes.size() - i;
    if (rest != 0) {
        const std::uint32_t v = at(i) << 16 | (rest == 2 ? at(i + 1) << 8 : 0);
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::vector<std::byte>> fromBase64(std::string_view text) {
    static constexpr auto table = decodingTable();
    if (text.size() % 4 != 0) {
        return std::nullopt;
    }
    std::vector<std::byte> out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        const int padding = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
        if (padding == 1 && text[i + 3] != '=') {
            return std::nullopt;
        }
        std::uint32_t v = 0;
        for (int k = 0; k < 4 - padding; ++k) {
            const std::int8_t d = table[static_cast<unsigned char>(text[i + k])];
            if (d < 0) {
                return std::nullopt;
            }
            v |= static_cast<std::uint32_t>(d) << (18 - 6 * k);
        }
        if ((padding == 1 && (v & 0xFF) != 0) || (padding == 2 && (v & 0xFFFF) != 0)) {
            return std::nullopt;
        }
        out.push_back(static_cast<std::byte>(v >> 16));
        if (padding < 2) {
            out.push_back(static_cast<std::byte>(v >> 8));
        }
        if (padding < 1) {
            out.push_back(static_cast<std::byte>(v));
        }
    }
    return out;
}

} // namespace organ
