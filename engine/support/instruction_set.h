#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace organ {

// The x86 instruction sets the engine's kernels are written for (quantized products, F16
// products, dequantization), chosen at run time: a binary built for any x86-64 runs the fastest
// kernels its CPU has. Every kernel gives the same bits as the portable one.
//   portable    plain C++ (any CPU)
//   avx2        AVX2, FMA, F16C (Haswell, every Zen)
//   avxvnni     avx2 + AVX-VNNI: 8-bit dot products in 256-bit registers (Alder Lake)
//   avx512      avx2 + AVX-512 F, BW, VL: 512-bit registers (Skylake-X)
//   avx512vnni  avx512 + AVX-512 VNNI (Ice Lake, Zen 4, Zen 5)
enum class InstructionSet { Portable, Avx2, AvxVnni, Avx512, Avx512Vnni };

std::string_view instructionSetName(InstructionSet set);

// Every instruction set the engine has kernels for, and the ones this CPU (and its operating
// system) can run, the fastest first; portable is always last.
const std::vector<InstructionSet>& knownInstructionSets();
const std::vector<InstructionSet>& supportedInstructionSets();

// The set the kernels use: the one set by useInstructionSet, else the environment variable
// ORGAN_CPU (one of the names above), else the fastest this CPU has. Throws
// std::invalid_argument, naming ORGAN_CPU and the sets this CPU runs, when it names an unknown
// set or one this CPU lacks.
InstructionSet activeInstructionSet();

// Runs the kernels of `name` from now on, in every thread (tests and benchmarks compare them);
// throws std::invalid_argument for an unknown name or a set this CPU lacks.
void useInstructionSet(std::string_view name);

// Whether this CPU runs 512-bit operations as two 256-bit halves (AMD's Zen 4, family 19h), where
// a tile that converts operands in 512-bit registers can lose to a 256-bit one.
bool cpuSplitsWideRegisters();

// "avx2, portable": the names of supportedInstructionSets().
std::string supportedInstructionSetNames();

} // namespace organ
