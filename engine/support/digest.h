#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace organ {

// A fast 64-bit digest (not cryptographic): the writer compares what it wrote with the
// re-opened file, and the measurement cache names its entries with it.
class Digest {
public:
    // Equal byte sequences give equal digests however they are split into chunks.
    void update(std::span<const std::byte> bytes) {
        std::size_t i = 0;
        for (; m_tailBytes != 0 && i < bytes.size(); ++i) {
            feed(bytes[i]);
        }
        for (; i + 8 <= bytes.size(); i += 8) {
            std::uint64_t word;
            std::memcpy(&word, bytes.data() + i, 8);
            mix(word);
        }
        for (; i < bytes.size(); ++i) {
            feed(bytes[i]);
        }
    }
    void update(std::string_view text) { update(std::as_bytes(std::span(text.data(), text.size()))); }
    template <typename T> void updateValue(const T& value) {
        update(std::as_bytes(std::span<const T, 1>(&value, 1)));
    }
    std::uint64_t value() const {
        std::uint64_t h = m_state ^ (m_tail * 0x9E3779B97F4A7C15ull) ^ m_tailBytes;
        h ^= h >> 33;
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 33;
        return h;
    }

private:
    void feed(std::byte b) {
        m_tail |= static_cast<std::uint64_t>(b) << (8 * m_tailBytes);
        if (++m_tailBytes == 8) {
            mix(m_tail);
            m_tail = 0;
            m_tailBytes = 0;
        }
    }
    void mix(std::uint64_t word) {
        m_state ^= word * 0x87C37B91114253D5ull;
        m_state = (m_state << 31) | (m_state >> 33);
        m_state *= 0x4CF5AD432745937Full;
    }
    std::uint64_t m_state = 0x243F6A8885A308D3ull;
    std::uint64_t m_tail = 0;
    unsigned m_tailBytes = 0;
};

} // namespace organ
