#include "organs/manifest_values.h"

#include "support/errors.h"
#include "support/text_safety.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

namespace organ {

std::string hexOf(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        out += digits[static_cast<unsigned char>(c) >> 4];
        out += digits[static_cast<unsigned char>(c) & 0xF];
    }
    return out;
}

std::optional<std::string> bytesOfHex(std::string_view hex) {
    if (hex.size() % 2 != 0) {
        return std::nullopt;
    }
    auto digit = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
    };
    std::string out;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        const int high = digit(hex[i]);
        const int low = digit(hex[i + 1]);
        if (high < 0 || low < 0) {
            return std::nullopt;
        }
        out += static_cast<char>(high * 16 + low);
    }
    return out;
}

namespace {

std::string typeName(ValueType type) {
    return std::string(valueTypeName(type));
}

std::optional<ValueType> typeFromName(std::string_view name) {
    for (std::uint32_t t = 0; t <= static_cast<std::uint32_t>(ValueType::F64); ++t) {
        if (valueTypeName(static_cast<ValueType>(t)) == name) {
            return static_cast<ValueType>(t);
        }
    }
    return std::nullopt;
}

// A value without its type: numbers, booleans, strings (or {"hex"}), {"bits"} for non-finite
// floats, and for arrays {"element_type", "value": [...]}.
nlohmann::ordered_json bareValue(const MetaValue& v) {
    switch (v.type()) {
    case ValueType::U8:
    case ValueType::U16:
    case ValueType::U32:
    case ValueType::U64:
        return *v.asUInt();
    case ValueType::I8:
    case ValueType::I16:
    case ValueType::I32:
    case ValueType::I64:
        return *v.asInt();
    case ValueType::F32:
    case ValueType::F64: {
        const double d = *v.asFloat();
        if (std::isfinite(d)) {
            return d;
        }
        const auto payload = v.payload();
        std::string raw(reinterpret_cast<const char*>(payload.data()), payload.size());
        std::reverse(raw.begin(), raw.end()); // little-endian bytes → the bits, most significant first
        return nlohmann::ordered_json{{"bits", hexOf(raw)}};
    }
    case ValueType::Bool:
        return *v.asBool();
    case ValueType::String: {
        const std::string_view s = *v.asString();
        if (isValidUtf8(s)) {
            return std::string(s);
        }
        return nlohmann::ordered_json{{"hex", hexOf(s)}};
    }
    case ValueType::Array: {
        nlohmann::ordered_json items = nlohmann::ordered_json::array();
        v.forEachElement([&](const MetaValue& e) {
            items.push_back(bareValue(e));
            return true;
        });
        return nlohmann::ordered_json{{"element_type", typeName(v.elementType())},
                                      {"value", std::move(items)}};
    }
    }
    return nullptr;
}

template <typename T> void appendLe(std::vector<std::byte>& out, T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
}

// Where a value sits, for messages: made only when one is needed (an array of ten million
// values must not make ten million strings).
using Where = std::function<std::string()>;

// Appends a value as GGUF v3 encodes it (without its type tag): the bytes of a number, a string's
// length and bytes, an array's element type, count and elements. Arrays are encoded in place,
// never as one MetaValue per element.
void appendBare(ValueType type, const nlohmann::json& j, std::vector<std::byte>& out, const Where& where) {
    auto bad = [&](const std::string& what) { return FormatError(where() + ": " + what); };
    auto unsignedValue = [&](std::uint64_t max) {
        if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<std::int64_t>() >= 0)) {
            throw bad("expected a non-negative integer");
        }
        const auto u = j.get<std::uint64_t>();
        if (u > max) {
            throw bad("out of range for " + typeName(type));
        }
        return u;
    };
    auto signedValue = [&](std::int64_t min, std::int64_t max) {
        if (!j.is_number_integer() ||
            (j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t(max))) {
            throw bad("expected an integer");
        }
        const auto i = j.get<std::int64_t>();
        if (i < min || i > max) {
            throw bad("out of range for " + typeName(type));
        }
        return i;
    };
    // A non-finite float is stored as {"bits": hex}, most significant byte first.
    auto floatBits = [&](std::size_t bytes) -> std::optional<std::string> {
        if (!j.is_object() || !j.contains("bits") || !j["bits"].is_string()) {
            return std::nullopt;
        }
        auto raw = bytesOfHex(j["bits"].get<std::string>());
        if (!raw || raw->size() != bytes) {
            throw bad("bits must be " + std::to_string(bytes * 2) + " hexadecimal digits");
        }
        std::reverse(raw->begin(), raw->end());
        return raw;
    };
    auto number = [&] {
        if (!j.is_number()) {
            throw bad("expected a number");
        }
        return j.get<double>();
    };
    switch (type) {
    case ValueType::U8:
        return appendLe(out, static_cast<std::uint8_t>(unsignedValue(UINT8_MAX)));
    case ValueType::U16:
        return appendLe(out, static_cast<std::uint16_t>(unsignedValue(UINT16_MAX)));
    case ValueType::U32:
        return appendLe(out, static_cast<std::uint32_t>(unsignedValue(UINT32_MAX)));
    case ValueType::U64:
        return appendLe(out, unsignedValue(UINT64_MAX));
    case ValueType::I8:
        return appendLe(out, static_cast<std::int8_t>(signedValue(INT8_MIN, INT8_MAX)));
    case ValueType::I16:
        return appendLe(out, static_cast<std::int16_t>(signedValue(INT16_MIN, INT16_MAX)));
    case ValueType::I32:
        return appendLe(out, static_cast<std::int32_t>(signedValue(INT32_MIN, INT32_MAX)));
    case ValueType::I64:
        return appendLe(out, signedValue(INT64_MIN, INT64_MAX));
    case ValueType::F32:
        if (const auto raw = floatBits(4)) {
            out.insert(out.end(), reinterpret_cast<const std::byte*>(raw->data()),
                       reinterpret_cast<const std::byte*>(raw->data()) + 4);
            return;
        }
        return appendLe(out, static_cast<float>(number()));
    case ValueType::F64:
        if (const auto raw = floatBits(8)) {
            out.insert(out.end(), reinterpret_cast<const std::byte*>(raw->data()),
                       reinterpret_cast<const std::byte*>(raw->data()) + 8);
            return;
        }
        return appendLe(out, number());
    case ValueType::Bool:
        if (!j.is_boolean()) {
            throw bad("expected true or false");
        }
        return appendLe(out, static_cast<std::uint8_t>(j.get<bool>() ? 1 : 0));
    case ValueType::String: {
        std::optional<std::string> hex;
        const std::string* text = j.is_string() ? &j.get_ref<const std::string&>() : nullptr;
        if (text == nullptr && j.is_object() && j.contains("hex") && j["hex"].is_string()) {
            hex = bytesOfHex(j["hex"].get<std::string>());
            text = hex ? &*hex : nullptr;
        }
        if (text == nullptr) {
            throw bad("expected a string or {\"hex\": …}");
        }
        appendLe<std::uint64_t>(out, text->size());
        out.insert(out.end(), reinterpret_cast<const std::byte*>(text->data()),
                   reinterpret_cast<const std::byte*>(text->data()) + text->size());
        return;
    }
    case ValueType::Array: {
        if (!j.is_object() || !j.contains("element_type") || !j["element_type"].is_string() ||
            !j.contains("value") || !j["value"].is_array()) {
            throw bad("an array needs \"element_type\" and a \"value\" list");
        }
        const auto element = typeFromName(j["element_type"].get<std::string>());
        if (!element) {
            throw bad("unknown element type '" + j["element_type"].get<std::string>() + "'");
        }
        const auto& items = j["value"];
        appendLe<std::uint32_t>(out, static_cast<std::uint32_t>(*element));
        appendLe<std::uint64_t>(out, items.size());
        const std::size_t fixed = fixedValueSize(*element);
        out.reserve(out.size() + items.size() * (fixed != 0 ? fixed : 8));
        for (std::size_t i = 0; i < items.size(); ++i) {
            appendBare(*element, items[i], out,
                       [&where, i] { return where() + "[" + std::to_string(i) + "]"; });
        }
        return;
    }
    }
    throw bad("unknown type");
}

MetaValue parseBare(ValueType type, const nlohmann::json& j, const std::string& where) {
    auto bytes = std::make_shared<std::vector<std::byte>>();
    appendBare(type, j, *bytes, [&where] { return where; });
    bytes->shrink_to_fit();
    const std::span<const std::byte> payload(bytes->data(), bytes->size());
    return MetaValue(type, payload, 8, std::move(bytes));
}

} // namespace

nlohmann::ordered_json metaValueToManifest(const std::string& key, const MetaValue& value) {
    nlohmann::ordered_json entry;
    entry["key"] =
        isValidUtf8(key) ? nlohmann::ordered_json(key) : nlohmann::ordered_json{{"hex", hexOf(key)}};
    if (value.isArray()) {
        entry["type"] = "array";
        entry["element_type"] = typeName(value.elementType());
        entry["value"] = std::move(bareValue(value)["value"]);
        return entry;
    }
    entry["type"] = typeName(value.type());
    entry["value"] = bareValue(value);
    return entry;
}

MetaValue metaValueFromManifest(const nlohmann::json& entry, const std::string& where) {
    if (!entry.is_object() || !entry.contains("type") || !entry["type"].is_string()) {
        throw FormatError(where + ": needs a \"type\"");
    }
    const std::string name = entry["type"].get<std::string>();
    if (name == "array") {
        return parseBare(ValueType::Array, entry, where);
    }
    const auto type = typeFromName(name);
    if (!type || *type == ValueType::Array || !entry.contains("value")) {
        throw FormatError(where + ": unknown type '" + name + "' or no \"value\"");
    }
    return parseBare(*type, entry["value"], where);
}

} // namespace organ
