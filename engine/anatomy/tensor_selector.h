#pragma once

#include "anatomy/anatomy.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace organ {

// Which tensors an operation touches, in anatomy's words: every condition that is set must hold.
struct TensorSelector {
    std::vector<std::string> names; // exact tensor names
    std::optional<System> system;
    std::vector<std::string> roles;
    std::optional<std::uint32_t> firstLayer; // inclusive layer range; tensors outside layers
    std::optional<std::uint32_t> lastLayer;  // never match a range
    bool matches(const std::string& name, const TensorAnatomy& anatomy) const;
    bool isEmpty() const;
};

} // namespace organ
