#include "support/system_memory.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace organ {

std::uint64_t availableMemory() {
    std::uint64_t available = 0;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
        if (line.rfind("MemAvailable:", 0) == 0) {
            available = std::strtoull(line.c_str() + 13, nullptr, 10) * 1024;
            break;
        }
    }
    std::ifstream limit("/sys/fs/cgroup/memory.max");
    std::ifstream current("/sys/fs/cgroup/memory.current");
    std::uint64_t max = 0;
    std::uint64_t used = 0;
    if (limit >> max && current >> used) { // "max" (no limit) reads as no number
        available = std::min(available, max > used ? max - used : 0);
    }
    return available;
}

} // namespace organ
