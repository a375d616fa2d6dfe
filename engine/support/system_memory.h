#pragma once

#include <cstdint>

namespace organ {

// The memory the process may still take: /proc/meminfo's MemAvailable, or less where its control
// group (v2) limits it to less; 0 where neither is known (not Linux).
std::uint64_t availableMemory();

} // namespace organ
