#include "support/text_safety.h"

#include <cstdint>
#include <cstdio>

namespace organ {
namespace {

// The length of the valid UTF-8 sequence at text[i] and its code point; 0 when invalid
// (overlong forms, surrogates and values past U+10FFFF are invalid, as in RFC 3629).
std::size_t decode(std::string_view text, std::size_t i, char32_t& cp) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char b0 = byte(i);
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    std::size_t length = 0;
    char32_t min = 0;
    if ((b0 & 0xE0) == 0xC0) {
        length = 2;
        cp = b0 & 0x1F;
        min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        length = 3;
        cp = b0 & 0x0F;
        min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        length = 4;
        cp = b0 & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (i + length > text.size()) {
        return 0;
    }
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    return length;
}

// Code points a terminal or a text layout would act on rather than show.
bool isControl(char32_t cp) {
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void appendHexByte(std::string& out, unsigned char b) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "\\x%02X", b);
    out += buffer;
}

nlohmann::json sanitized(const nlohmann::json& json) {
    if (json.is_string()) {
        return jsonText(json.get_ref<const std::string&>());
    }
    if (json.is_array()) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& item : json) {
            out.push_back(sanitized(item));
        }
        return out;
    }
    if (json.is_object()) {
        nlohmann::json out = nlohmann::json::object();
        for (const auto& [key, value] : json.items()) {
            out[jsonText(key)] = sanitized(value);
        }
        return out;
    }
    return json;
}

} // namespace

bool isValidUtf8(std::string_view text) {
    char32_t cp = 0;
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = decode(text, i, cp);
        if (n == 0) {
            return false;
        }
        i += n;
    }
    return true;
}

std::string escapeText(std::string_view raw) {
    std::string out;
    out.reserve(raw.size());
    char32_t cp = 0;
    for (std::size_t i = 0; i < raw.size();) {
        const std::size_t n = decode(raw, i, cp);
        if (n == 0) {
            appendHexByte(out, static_cast<unsigned char>(raw[i]));
            ++i;
            continue;
        }
        if (cp == U'\\') {
            out += "\\\\";
        } else if (cp < 0x80 && isControl(cp)) {
            appendHexByte(out, static_cast<unsigned char>(cp));
        } else if (isControl(cp)) {
            char buffer[16];
            std::snprintf(buffer, sizeof buffer, "\\u{%04X}", static_cast<unsigned>(cp));
            out += buffer;
        } else {
            out.append(raw.substr(i, n));
        }
        i += n;
    }
    return out;
}

std::string jsonText(std::string_view raw) {
    return isValidUtf8(raw) ? std::string(raw) : escapeText(raw);
}

// JSON allows DEL, C1 controls and the separators and overrides raw inside strings; written
// as \u escapes instead, the document means the same and is safe to print on a terminal.
// Such bytes only occur inside strings (JSON's own syntax is ASCII).
static std::string escapeControlsInJson(const std::string& json) {
    std::string out;
    out.reserve(json.size());
    char32_t cp = 0;
    for (std::size_t i = 0; i < json.size();) {
        const std::size_t n = decode(json, i, cp);
        if (n != 0 && cp >= 0x7F && isControl(cp)) {
            char buffer[16]; // room for any code point, though controls take 4 digits
            std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(cp));
            out += buffer;
        } else {
            out.append(json, i, n == 0 ? 1 : n);
        }
        i += n == 0 ? 1 : n;
    }
    return out;
}

std::string dumpJson(const nlohmann::json& json, int indent) {
    std::string text;
    try {
        text = json.dump(indent);
    } catch (const nlohmann::json::type_error&) {
        text = sanitized(json).dump(indent); // a string or key that is not UTF-8
    }
    return escapeControlsInJson(text);
}

} // namespace organ
