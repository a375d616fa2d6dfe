#include "merge/dare_mask.h"

namespace organ {

std::uint64_t splitMix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::uint64_t fnv1a64(std::string_view bytes) {
    std::uint64_t hash = 0xCBF29CE484222325ull;
    for (const char c : bytes) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001B3ull;
    }
    return hash;
}

DareMask::DareMask(std::uint64_t seed, std::string_view tensor, std::uint64_t model)
    : m_key(splitMix(seed ^ splitMix(fnv1a64(tensor)) ^ splitMix(model + 1))) {}

} // namespace organ
