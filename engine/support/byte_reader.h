#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace organ {

// Bounds-checked little-endian reads over a mapped file. Every read checks the bytes
// that remain first, so a corrupt count or length is reported, never followed.
class ByteReader {
public:
    ByteReader(std::span<const std::byte> bytes, std::string label)
        : m_bytes(bytes), m_label(std::move(label)) {}

    std::uint64_t position() const { return m_pos; }
    std::uint64_t size() const { return m_bytes.size(); }
    std::uint64_t remaining() const { return m_bytes.size() - m_pos; }
    const std::string& label() const { return m_label; }
    std::span<const std::byte> bytes() const { return m_bytes; }
    void seek(std::uint64_t position) { m_pos = position; }

    // Fails with "FILE: WHAT at byte P: ..." unless n bytes remain.
    void require(std::uint64_t n, std::string_view what) const;

    template <typename T> T read(std::string_view what) {
        static_assert(std::is_trivially_copyable_v<T>);
        require(sizeof(T), what);
        T value;
        std::memcpy(&value, m_bytes.data() + m_pos, sizeof(T));
        m_pos += sizeof(T);
        return value;
    }

    // A count or length: 32 bits in GGUF v1, 64 bits since v2.
    std::uint64_t readLength(unsigned width, std::string_view what) {
        return width == 4 ? read<std::uint32_t>(what) : read<std::uint64_t>(what);
    }

    // A length-prefixed string; the length is checked against the bytes that remain.
    std::string_view readString(unsigned width, std::string_view what);

    void skip(std::uint64_t n, std::string_view what) {
        require(n, what);
        m_pos += n;
    }

    [[noreturn]] void fail(std::uint64_t at, std::string_view what, std::string_view problem) const;

private:
    std::span<const std::byte> m_bytes;
    std::string m_label;
    std::uint64_t m_pos = 0;
};

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

} // namespace organ
