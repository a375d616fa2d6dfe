#include "quant/product_kernels.h"

#include <atomic>

namespace organ::detail {

namespace {
std::atomic<HalfTiles> halfTiles{HalfTiles::Auto};
} // namespace

void useHalfTiles(HalfTiles tiles) {
    halfTiles = tiles;
}

const SetKernels& kernelsOf(InstructionSet set) {
    static const SetKernels kPortable{{{1, 1, q80TilePortable}, {1, 1, q80TilePortable}},
                                      {{1, 1, kQuantTilePortable}, {1, 1, kQuantTilePortable}},
                                      {{1, 1, f16TilePortable}, {1, 1, f16TilePortable}},
                                      {{1, 1, f32TilePortable}, {1, 1, f32TilePortable}}};
    const HalfTiles tiles = halfTiles;
    const bool narrow = tiles == HalfTiles::Narrow || (tiles == HalfTiles::Auto && cpuSplitsWideRegisters());
    const SetKernels* x86 = x86Kernels(set, narrow);
    return x86 != nullptr ? *x86 : kPortable;
}

const ActivationQuantizers& activationQuantizersOf(InstructionSet set) {
    static const ActivationQuantizers kPortable{quantizeQ80Portable, quantizeQ8K, halvesPortable};
    const ActivationQuantizers* x86 = set != InstructionSet::Portable ? activationQuantizersX86() : nullptr;
    return x86 != nullptr ? *x86 : kPortable;
}

} // namespace organ::detail
