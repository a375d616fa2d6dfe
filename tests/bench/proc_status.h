#pragma once

#include <fstream>
#include <string>

// Memory figures of this process from /proc/self/status, in KiB ("VmRSS:", "VmHWM:").
inline long processStatusKiB(const char* field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field, 0) == 0) {
            return std::stol(line.substr(std::string(field).size()));
        }
    }
    return -1;
}

// Resets VmHWM to the current resident size (Linux 4.0 and later).
inline void resetPeakResident() {
    std::ofstream("/proc/self/clear_refs") << "5";
}

// The load average of the last minute (/proc/loadavg), printed beside times on a shared machine.
inline double loadAverage() {
    std::ifstream in("/proc/loadavg");
    double load = 0;
    in >> load;
    return load;
}
