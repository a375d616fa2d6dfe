#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace organ {

// A fast 64-bit digest (not cryptographic) mixed in `Lanes` lanes: word k of the bytes (8 bytes
// each) goes to lane k mod Lanes, and the lanes are folded together at the end. With more than one
// lane their multiplications overlap, so long inputs go faster; one lane is the original digest,
// whose values name the measurement cache's entries.
template <std::size_t Lanes> class DigestOf {
public:
    // Equal byte sequences give equal digests however they are split into chunks.
    void update(std::span<const std::byte> bytes) {
        std::size_t i = 0;
        for (; m_tailBytes != 0 && i < bytes.size(); ++i) {
            feed(bytes[i]);
        }
        for (; m_words % Lanes != 0 && i + 8 <= bytes.size(); i += 8) {
            mixNext(wordAt(bytes, i));
        }
        for (; i + 8 * Lanes <= bytes.size(); i += 8 * Lanes) {
            for (std::size_t lane = 0; lane < Lanes; ++lane) {
                mix(m_lanes[lane], wordAt(bytes, i + 8 * lane));
            }
            m_words += Lanes;
        }
        for (; i + 8 <= bytes.size(); i += 8) {
            mixNext(wordAt(bytes, i));
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
        std::uint64_t h = m_lanes[0];
        if constexpr (Lanes > 1) {
            h = m_words;
            for (const std::uint64_t lane : m_lanes) {
                mix(h, lane);
            }
        }
        h ^= (m_tail * 0x9E3779B97F4A7C15ull) ^ m_tailBytes;
        h ^= h >> 33;
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 33;
        return h;
    }

private:
    static std::uint64_t wordAt(std::span<const std::byte> bytes, std::size_t at) {
        std::uint64_t word;
        std::memcpy(&word, bytes.data() + at, 8);
        return word;
    }
    static void mix(std::uint64_t& state, std::uint64_t word) {
        state ^= word * 0x87C37B91114253D5ull;
        state = (state << 31) | (state >> 33);
        state *= 0x4CF5AD432745937Full;
    }
    void mixNext(std::uint64_t word) {
        mix(m_lanes[m_words % Lanes], word);
        ++m_words;
    }
    void feed(std::byte b) {
        m_tail |= static_cast<std::uint64_t>(b) << (8 * m_tailBytes);
        if (++m_tailBytes == 8) {
            mixNext(m_tail);
            m_tail = 0;
            m_tailBytes = 0;
        }
    }
    static constexpr std::array<std::uint64_t, Lanes> initialLanes() {
        // π's digits, as the one-lane digest always started; each lane its own.
        constexpr std::uint64_t kDigits[] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull,
                                             0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull};
        std::array<std::uint64_t, Lanes> lanes{};
        for (std::size_t lane = 0; lane < Lanes; ++lane) {
            lanes[lane] = kDigits[lane % 4] + lane / 4;
        }
        return lanes;
    }
    std::array<std::uint64_t, Lanes> m_lanes = initialLanes();
    std::uint64_t m_words = 0;
    std::uint64_t m_tail = 0;
    unsigned m_tailBytes = 0;
};

// The measurement cache names its entries with the one-lane digest (changing it would name them
// anew); the writer compares what it wrote with what it reads back by the four-lane one.
using Digest = DigestOf<1>;
using StripedDigest = DigestOf<4>;

} // namespace organ
