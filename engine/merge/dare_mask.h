#pragma once

#include <cstdint>
#include <string_view>

namespace organ {

// DARE's Bernoulli masks, drawn from a counter-based generator so that the same seed gives the same
// mask on any machine, in any order, on any number of threads (docs/merging.md, "DARE's masks"):
//
//   mix(z)   = SplitMix64's output function: z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
//              z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31   (mod 2⁶⁴)
//   key      = mix(seed ^ mix(fnv1a64(tensor name)) ^ mix(model + 1))
//   u(i)     = (mix(key + (i + 1) · 0x9E3779B97F4A7C15) >> 11) · 2⁻⁵³      (in [0, 1))
//   keep(i)  = u(i) < density
//
// `model` counts the merged models from 0 in the configuration's order; `i` is the element's index
// in storage order; fnv1a64 is FNV-1a over the name's bytes (offset 0xCBF29CE484222325, prime
// 0x100000001B3).
std::uint64_t splitMix(std::uint64_t z);
std::uint64_t fnv1a64(std::string_view bytes);

class DareMask {
public:
    DareMask(std::uint64_t seed, std::string_view tensor, std::uint64_t model);
    // u(i): a uniform draw in [0, 1), exactly representable as a double.
    double uniform(std::uint64_t index) const {
        return static_cast<double>(splitMix(m_key + (index + 1) * kGolden) >> 11) * 0x1.0p-53;
    }
    bool keeps(std::uint64_t index, double density) const { return uniform(index) < density; }

private:
    static constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;
    std::uint64_t m_key;
};

} // namespace organ
