#include "gguf/meta_value.h"

#include "support/text_safety.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace organ {
namespace {

std::uint64_t loadLength(const std::byte* p, unsigned width) {
    if (width == 4) {
        std::uint32_t v;
        std::memcpy(&v, p, 4);
        return v;
    }
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// Size of an encoded value whose payload starts at p. The payload was validated when
// the file was opened (or was built by this class), so no bounds are checked here.
std::size_t encodedSize(ValueType type, const std::byte* p, unsigned width) {
    if (const std::size_t fixed = fixedValueSize(type); fixed != 0) {
        return fixed;
    }
    if (type == ValueType::String) {
        return width + static_cast<std::size_t>(loadLength(p, width));
    }
    std::uint32_t element;
    std::memcpy(&element, p, 4);
    const auto elementType = static_cast<ValueType>(element);
    const std::uint64_t count = loadLength(p + 4, width);
    std::size_t size = 4 + width;
    if (const std::size_t fixed = fixedValueSize(elementType); fixed != 0) {
        return size + static_cast<std::size_t>(count) * fixed;
    }
    for (std::uint64_t i = 0; i < count; ++i) {
        size += encodedSize(elementType, p + size, width);
    }
    return size;
}

template <typename T> void appendPod(std::vector<std::byte>& out, T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
}

std::string jsonNumberText(double v) {
    nlohmann::json j = v;
    return j.dump();
}

} // namespace

std::string_view valueTypeName(ValueType type) {
    static constexpr std::array<std::string_view, 13> names{
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
    const auto index = static_cast<std::size_t>(type);
    return index < names.size() ? names[index] : std::string_view("unknown");
}

bool isKnownValueType(std::uint32_t stored) {
    return stored <= static_cast<std::uint32_t>(ValueType::F64);
}

std::size_t fixedValueSize(ValueType type) {
    switch (type) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::Bool:
        return 1;
    case ValueType::U16:
    case ValueType::I16:
        return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
        return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
        return 8;
    case ValueType::String:
    case ValueType::Array:
        return 0;
    }
    return 0;
}

MetaValue::MetaValue(ValueType type, std::span<const std::byte> payload, unsigned lengthWidth,
                     std::shared_ptr<const void> owner)
    : m_type(type), m_payload(payload), m_width(lengthWidth), m_owner(std::move(owner)) {}

MetaValue MetaValue::owned(ValueType type, std::vector<std::byte> bytes) {
    auto buffer = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
    return MetaValue(type, std::span<const std::byte>(buffer->data(), buffer->size()), 8, buffer);
}

#define ORGAN_SCALAR_FACTORY(NAME, CTYPE, VTYPE)                                                             \
    MetaValue MetaValue::NAME(CTYPE v) {                                                                     \
        std::vector<std::byte> bytes;                                                                        \
        appendPod(bytes, v);                                                                                 \
        return owned(ValueType::VTYPE, std::move(bytes));                                                    \
    }
ORGAN_SCALAR_FACTORY(fromU8, std::uint8_t, U8)
ORGAN_SCALAR_FACTORY(fromI8, std::int8_t, I8)
ORGAN_SCALAR_FACTORY(fromU16, std::uint16_t, U16)
ORGAN_SCALAR_FACTORY(fromI16, std::int16_t, I16)
ORGAN_SCALAR_FACTORY(fromU32, std::uint32_t, U32)
ORGAN_SCALAR_FACTORY(fromI32, std::int32_t, I32)
ORGAN_SCALAR_FACTORY(fromU64, std::uint64_t, U64)
ORGAN_SCALAR_FACTORY(fromI64, std::int64_t, I64)
ORGAN_SCALAR_FACTORY(fromF32, float, F32)
ORGAN_SCALAR_FACTORY(fromF64, double, F64)
#undef ORGAN_SCALAR_FACTORY

MetaValue MetaValue::fromBool(bool v) {
    return owned(ValueType::Bool, {std::byte{v ? std::uint8_t{1} : std::uint8_t{0}}});
}

MetaValue MetaValue::fromString(std::string_view v) {
    std::vector<std::byte> bytes;
    bytes.reserve(8 + v.size());
    appendPod<std::uint64_t>(bytes, v.size());
    const auto* p = reinterpret_cast<const std::byte*>(v.data());
    bytes.insert(bytes.end(), p, p + v.size());
    return owned(ValueType::String, std::move(bytes));
}

MetaValue MetaValue::fromArray(ValueType elementType, const std::vector<MetaValue>& elements) {
    std::vector<std::byte> bytes;
    appendPod<std::uint32_t>(bytes, static_cast<std::uint32_t>(elementType));
    appendPod<std::uint64_t>(bytes, elements.size());
    for (const auto& element : elements) {
        element.appendEncodedV3(bytes);
    }
    return owned(ValueType::Array, std::move(bytes));
}

MetaValue MetaValue::fromStrings(const std::vector<std::string>& strings) {
    std::vector<std::byte> bytes;
    appendPod<std::uint32_t>(bytes, static_cast<std::uint32_t>(ValueType::String));
    appendPod<std::uint64_t>(bytes, strings.size());
    for (const auto& s : strings) {
        appendPod<std::uint64_t>(bytes, s.size());
        const auto* p = reinterpret_cast<const std::byte*>(s.data());
        bytes.insert(bytes.end(), p, p + s.size());
    }
    return owned(ValueType::Array, std::move(bytes));
}

MetaValue MetaValue::fromF32s(std::span<const float> values) {
    std::vector<std::byte> bytes;
    appendPod<std::uint32_t>(bytes, static_cast<std::uint32_t>(ValueType::F32));
    appendPod<std::uint64_t>(bytes, values.size());
    for (float v : values) {
        appendPod(bytes, v);
    }
    return owned(ValueType::Array, std::move(bytes));
}

MetaValue MetaValue::fromI32s(std::span<const std::int32_t> values) {
    std::vector<std::byte> bytes;
    appendPod<std::uint32_t>(bytes, static_cast<std::uint32_t>(ValueType::I32));
    appendPod<std::uint64_t>(bytes, values.size());
    for (std::int32_t v : values) {
        appendPod(bytes, v);
    }
    return owned(ValueType::Array, std::move(bytes));
}

template <typename T> T MetaValue::scalar() const {
    T v;
    std::memcpy(&v, m_payload.data(), sizeof(T));
    return v;
}

std::optional<std::int64_t> MetaValue::asInt() const {
    switch (m_type) {
    case ValueType::U8:
        return scalar<std::uint8_t>();
    case ValueType::I8:
        return scalar<std::int8_t>();
    case ValueType::U16:
        return scalar<std::uint16_t>();
    case ValueType::I16:
        return scalar<std::int16_t>();
    case ValueType::U32:
        return scalar<std::uint32_t>();
    case ValueType::I32:
        return scalar<std::int32_t>();
    case ValueType::I64:
        return scalar<std::int64_t>();
    case ValueType::U64: {
        const auto v = scalar<std::uint64_t>();
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            return std::nullopt;
        }
        return static_cast<std::int64_t>(v);
    }
    default:
        return std::nullopt;
    }
}

std::optional<std::uint64_t> MetaValue::asUInt() const {
    if (m_type == ValueType::U64) {
        return scalar<std::uint64_t>();
    }
    const auto v = asInt();
    if (!v || *v < 0) {
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(*v);
}

std::optional<double> MetaValue::asFloat() const {
    if (m_type == ValueType::F32) {
        return scalar<float>();
    }
    if (m_type == ValueType::F64) {
        return scalar<double>();
    }
    if (m_type == ValueType::U64) {
        return static_cast<double>(scalar<std::uint64_t>());
    }
    if (const auto v = asInt()) {
        return static_cast<double>(*v);
    }
    return std::nullopt;
}

std::optional<bool> MetaValue::asBool() const {
    if (m_type != ValueType::Bool) {
        return std::nullopt;
    }
    return scalar<std::uint8_t>() != 0;
}

std::optional<std::string_view> MetaValue::asString() const {
    if (m_type != ValueType::String) {
        return std::nullopt;
    }
    const std::uint64_t length = loadLength(m_payload.data(), m_width);
    return std::string_view(reinterpret_cast<const char*>(m_payload.data() + m_width),
                            static_cast<std::size_t>(length));
}

ValueType MetaValue::elementType() const {
    if (!isArray()) {
        return m_type;
    }
    return static_cast<ValueType>(scalar<std::uint32_t>());
}

std::uint64_t MetaValue::arraySize() const {
    return isArray() ? loadLength(m_payload.data() + 4, m_width) : 0;
}

void MetaValue::forEachElement(const std::function<bool(const MetaValue&)>& visit) const {
    if (!isArray()) {
        return;
    }
    const ValueType type = elementType();
    const std::uint64_t count = arraySize();
    std::size_t offset = 4 + m_width;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::size_t size = encodedSize(type, m_payload.data() + offset, m_width);
        if (!visit(MetaValue(type, m_payload.subspan(offset, size), m_width, m_owner))) {
            return;
        }
        offset += size;
    }
}

std::vector<MetaValue> MetaValue::elements(std::uint64_t limit) const {
    std::vector<MetaValue> out;
    out.reserve(static_cast<std::size_t>(std::min(limit, arraySize())));
    forEachElement([&](const MetaValue& v) {
        if (out.size() >= limit) {
            return false;
        }
        out.push_back(v);
        return true;
    });
    return out;
}

std::string MetaValue::toDisplay(std::size_t maxItems) const {
    switch (m_type) {
    case ValueType::String:
        return escapeText(*asString()); // shown to people: control bytes and invalid UTF-8 escaped
    case ValueType::Bool:
        return *asBool() ? "true" : "false";
    case ValueType::F32:
    case ValueType::F64:
        return jsonNumberText(*asFloat());
    case ValueType::U64:
        return std::to_string(scalar<std::uint64_t>());
    case ValueType::Array: {
        std::string text =
            "[" + std::to_string(arraySize()) + " × " + std::string(valueTypeName(elementType())) + "]";
        std::size_t shown = 0;
        forEachElement([&](const MetaValue& v) {
            if (shown == maxItems) {
                text += ", …";
                return false;
            }
            text += shown == 0 ? " " : ", ";
            text += v.toDisplay(maxItems);
            ++shown;
            return true;
        });
        return text;
    }
    default:
        return std::to_string(*asInt());
    }
}

nlohmann::json MetaValue::toJson(std::uint64_t maxItems) const {
    switch (m_type) {
    case ValueType::String:
        return std::string(*asString());
    case ValueType::Bool:
        return *asBool();
    case ValueType::F32:
    case ValueType::F64: {
        const double v = *asFloat();
        return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(std::to_string(v));
    }
    case ValueType::U64:
        return scalar<std::uint64_t>();
    case ValueType::Array: {
        nlohmann::json items = nlohmann::json::array();
        forEachElement([&](const MetaValue& v) {
            if (items.size() >= maxItems) {
                return false;
            }
            items.push_back(v.toJson(maxItems));
            return true;
        });
        return {{"type", valueTypeName(elementType())}, {"length", arraySize()}, {"items", std::move(items)}};
    }
    default:
        return *asInt();
    }
}

std::size_t MetaValue::encodedSizeV3() const {
    if (m_width == 8) {
        return m_payload.size();
    }
    std::vector<std::byte> scratch;
    appendEncodedV3(scratch);
    return scratch.size();
}

void MetaValue::appendEncodedV3(std::vector<std::byte>& out) const {
    if (m_width == 8 || fixedValueSize(m_type) != 0) {
        out.insert(out.end(), m_payload.begin(), m_payload.end());
        return;
    }
    if (m_type == ValueType::String) {
        const auto text = *asString();
        appendPod<std::uint64_t>(out, text.size());
        const auto* p = reinterpret_cast<const std::byte*>(text.data());
        out.insert(out.end(), p, p + text.size());
        return;
    }
    appendPod<std::uint32_t>(out, static_cast<std::uint32_t>(elementType()));
    appendPod<std::uint64_t>(out, arraySize());
    forEachElement([&](const MetaValue& v) {
        v.appendEncodedV3(out);
        return true;
    });
}

bool MetaValue::operator==(const MetaValue& other) const {
    if (m_type != other.m_type) {
        return false;
    }
    if (m_width == other.m_width) {
        return std::equal(m_payload.begin(), m_payload.end(), other.m_payload.begin(), other.m_payload.end());
    }
    std::vector<std::byte> a;
    std::vector<std::byte> b;
    appendEncodedV3(a);
    other.appendEncodedV3(b);
    return a == b;
}

} // namespace organ
