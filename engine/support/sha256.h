#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace organ {

// SHA-256 (FIPS 180-4), for the provenance a chimera records about its parents and the
// digests of organ directories; the x86 SHA extensions when the CPU has them.
class Sha256 {
public:
    Sha256();
    void update(std::span<const std::byte> bytes);
    std::array<std::uint8_t, 32> finish();
    std::string finishHex(); // finish() in lowercase hexadecimal
    static std::string hex(std::span<const std::byte> bytes);

private:
    void compress(const std::uint8_t* block);
    void compressBlocks(const std::uint8_t* data, std::size_t blocks);
    std::array<std::uint32_t, 8> m_state;
    std::array<std::uint8_t, 64> m_buffer{};
    std::size_t m_buffered = 0;
    std::uint64_t m_length = 0;
};

// The SHA-256 some bytes were promised to have (an organ directory's manifest lists one per
// tensor file), and the file as messages name it ("organs-dir/organs/blk_0_ffn_up.bin").
struct PromisedSha256 {
    std::string hex; // lowercase
    std::string file;
    // Throws FormatError naming the file unless `computedHex` is the promised digest.
    void check(const std::string& computedHex) const;
};

} // namespace organ
