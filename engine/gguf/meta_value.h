#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace organ {

// GGUF metadata value types, with the numbers GGUF stores.
enum class ValueType : std::uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

std::string_view valueTypeName(ValueType type);
bool isKnownValueType(std::uint32_t stored);
// Bytes of a fixed-size value type; 0 for strings and arrays.
std::size_t fixedValueSize(ValueType type);

// One metadata value, kept in its encoded form: a view of the bytes in the mapped file
// (so that a 128 256-token vocabulary costs nothing to open) or a small owned buffer for
// values made in memory. Strings and array elements are decoded only when asked for.
class MetaValue {
public:
    MetaValue() = default;
    // A view of a validated encoded payload; lengthWidth is 4 for GGUF v1 and 8 after.
    MetaValue(ValueType type, std::span<const std::byte> payload, unsigned lengthWidth,
              std::shared_ptr<const void> owner);

    static MetaValue fromU8(std::uint8_t v);
    static MetaValue fromI8(std::int8_t v);
    static MetaValue fromU16(std::uint16_t v);
    static MetaValue fromI16(std::int16_t v);
    static MetaValue fromU32(std::uint32_t v);
    static MetaValue fromI32(std::int32_t v);
    static MetaValue fromU64(std::uint64_t v);
    static MetaValue fromI64(std::int64_t v);
    static MetaValue fromF32(float v);
    static MetaValue fromF64(double v);
    static MetaValue fromBool(bool v);
    static MetaValue fromString(std::string_view v);
    // Every element must have elementType (for nested arrays: be arrays).
    static MetaValue fromArray(ValueType elementType, const std::vector<MetaValue>& elements);
    static MetaValue fromStrings(const std::vector<std::string>& strings);
    static MetaValue fromF32s(std::span<const float> values);
    static MetaValue fromI32s(std::span<const std::int32_t> values);

    ValueType type() const { return m_type; }
    bool isArray() const { return m_type == ValueType::Array; }
    bool isValid() const { return m_width != 0; }

    std::optional<std::uint64_t> asUInt() const; // any integer type holding a value >= 0
    std::optional<std::int64_t> asInt() const;   // any integer type that fits in int64
    std::optional<double> asFloat() const;       // any numeric type
    std::optional<bool> asBool() const;
    std::optional<std::string_view> asString() const;

    // Arrays.
    ValueType elementType() const;
    std::uint64_t arraySize() const;
    // Calls visit(element) for elements in order until it returns false.
    void forEachElement(const std::function<bool(const MetaValue&)>& visit) const;
    std::vector<MetaValue> elements(std::uint64_t limit) const;

    // "llama", "32", "[512 × string] <unk>, <s>, </s>, …"
    std::string toDisplay(std::size_t maxItems = 8) const;
    // Scalars as JSON values; arrays as {"type", "length", "items"} with at most maxItems items.
    nlohmann::json toJson(std::uint64_t maxItems) const;

    // The value encoded as GGUF v3 (64-bit lengths), without its type tag.
    std::size_t encodedSizeV3() const;
    void appendEncodedV3(std::vector<std::byte>& out) const;
    std::span<const std::byte> payload() const { return m_payload; }
    unsigned lengthWidth() const { return m_width; }

    bool operator==(const MetaValue& other) const;

private:
    template <typename T> T scalar() const;
    static MetaValue owned(ValueType type, std::vector<std::byte> bytes);

    ValueType m_type = ValueType::U8;
    std::span<const std::byte> m_payload;
    unsigned m_width = 0;
    std::shared_ptr<const void> m_owner;
};

struct MetaEntry {
    std::string key;
    MetaValue value;
    std::uint64_t offset = 0; // byte offset of the key-value record in its file
};

} // namespace organ
