#include "support/instruction_set.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define ORGAN_X86 1
#endif

namespace organ {
namespace {

struct Named {
    InstructionSet set;
    std::string_view name;
};

// The fastest first.
constexpr Named kSets[] = {
    {InstructionSet::Avx512Vnni, "avx512vnni"}, {InstructionSet::Avx512, "avx512"},
    {InstructionSet::AvxVnni, "avxvnni"},       {InstructionSet::Avx2, "avx2"},
    {InstructionSet::Portable, "portable"},
};

#ifdef ORGAN_X86
// CPUID says what the CPU has; XGETBV says which registers the operating system saves on a
// context switch (a CPU with AVX-512 under a kernel that does not save the zmm registers cannot
// use them).
bool cpuRuns(InstructionSet set) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0) {
        return false;
    }
    const bool fma = (c >> 12) & 1;
    const bool osxsave = (c >> 27) & 1;
    const bool f16c = (c >> 29) & 1;
    if (!osxsave || !fma || !f16c) {
        return false;
    }
    std::uint32_t xcr0Low = 0, xcr0High = 0;
    __asm__("xgetbv" : "=a"(xcr0Low), "=d"(xcr0High) : "c"(0));
    const bool osYmm = (xcr0Low & 0x6) == 0x6;
    const bool osZmm = (xcr0Low & 0xE6) == 0xE6;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) {
        return false;
    }
    const bool avx2 = osYmm && ((b >> 5) & 1);
    const bool avx512 = avx2 && osZmm && ((b >> 16) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1); // F BW VL
    const bool avx512Vnni = avx512 && ((c >> 11) & 1);
    unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
    const bool avxVnni = avx2 && __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) != 0 && ((a1 >> 4) & 1);
    const bool runs[] = {true, avx2, avxVnni, avx512, avx512Vnni}; // in the enum's order
    return runs[static_cast<int>(set)];
}

bool splitsWideRegisters() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0, &a, &b, &c, &d) == 0) {
        return false;
    }
    char vendor[12];
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
    if (std::string_view(vendor, 12) != "AuthenticAMD" || __get_cpuid(1, &a, &b, &c, &d) == 0) {
        return false;
    }
    const unsigned family = ((a >> 8) & 0xF) + ((a >> 20) & 0xFF);
    return family == 0x19 && cpuRuns(InstructionSet::Avx512);
}
#else
bool cpuRuns(InstructionSet set) {
    return set == InstructionSet::Portable;
}

bool splitsWideRegisters() {
    return false;
}
#endif

std::optional<InstructionSet> parse(std::string_view name) {
    for (const Named& n : kSets) {
        if (n.name == name) {
            return n.set;
        }
    }
    return std::nullopt;
}

// What ORGAN_CPU asks for, checked once: the set, or the message that refuses it.
struct EnvironmentChoice {
    std::optional<InstructionSet> set;
    std::string error;
};

const EnvironmentChoice& environmentChoice() {
    static const EnvironmentChoice choice = [] {
        EnvironmentChoice c;
        const char* value = std::getenv("ORGAN_CPU");
        if (value == nullptr || *value == '\0') {
            return c;
        }
        const std::optional<InstructionSet> set = parse(value);
        const auto& supported = supportedInstructionSets();
        if (!set) {
            c.error = "ORGAN_CPU=" + std::string(value) +
                      " names no instruction set (avx512vnni, avx512, avxvnni, avx2 or portable)";
        } else if (std::find(supported.begin(), supported.end(), *set) == supported.end()) {
            c.error = "ORGAN_CPU=" + std::string(value) + ": this CPU cannot run it (it runs " +
                      supportedInstructionSetNames() + ")";
        } else {
            c.set = set;
        }
        return c;
    }();
    return choice;
}

constexpr int kNone = -1;
std::atomic<int> chosen{kNone};

} // namespace

bool cpuSplitsWideRegisters() {
    static const bool splits = splitsWideRegisters();
    return splits;
}

std::string_view instructionSetName(InstructionSet set) {
    for (const Named& n : kSets) {
        if (n.set == set) {
            return n.name;
        }
    }
    return "portable";
}

const std::vector<InstructionSet>& knownInstructionSets() {
    static const std::vector<InstructionSet> all = [] {
        std::vector<InstructionSet> v;
        for (const Named& n : kSets) {
            v.push_back(n.set);
        }
        return v;
    }();
    return all;
}

const std::vector<InstructionSet>& supportedInstructionSets() {
    static const std::vector<InstructionSet> supported = [] {
        std::vector<InstructionSet> v;
        for (const Named& n : kSets) {
            if (cpuRuns(n.set)) {
                v.push_back(n.set);
            }
        }
        return v;
    }();
    return supported;
}

std::string supportedInstructionSetNames() {
    std::string out;
    for (const InstructionSet set : supportedInstructionSets()) {
        out += (out.empty() ? "" : ", ") + std::string(instructionSetName(set));
    }
    return out;
}

InstructionSet activeInstructionSet() {
    const int set = chosen.load(std::memory_order_relaxed);
    if (set != kNone) {
        return static_cast<InstructionSet>(set);
    }
    const EnvironmentChoice& env = environmentChoice();
    if (!env.error.empty()) {
        throw std::invalid_argument(env.error);
    }
    return env.set ? *env.set : supportedInstructionSets().front();
}

void useInstructionSet(std::string_view name) {
    const std::optional<InstructionSet> set = parse(name);
    const auto& supported = supportedInstructionSets();
    if (!set) {
        throw std::invalid_argument("no instruction set '" + std::string(name) +
                                    "' (the engine has kernels for " +
                                    "avx512vnni, avx512, avxvnni, avx2 and portable)");
    }
    if (std::find(supported.begin(), supported.end(), *set) == supported.end()) {
        throw std::invalid_argument("this CPU cannot run " + std::string(name) + " (it runs " +
                                    supportedInstructionSetNames() + ")");
    }
    chosen.store(static_cast<int>(*set), std::memory_order_relaxed);
}

} // namespace organ
