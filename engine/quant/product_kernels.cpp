#include "quant/product_kernels.h"

namespace organ::detail {

const SetKernels& kernelsOf(InstructionSet set) {
    static const SetKernels kPortable{{{1, 1, q80TilePortable}, {1, 1, q80TilePortable}},
                                      {{1, 1, kQuantTilePortable}, {1, 1, kQuantTilePortable}},
                                      {{1, 1, f16TilePortable}, {1, 1, f16TilePortable}},
                                      {{1, 1, f32TilePortable}, {1, 1, f32TilePortable}}};
    const SetKernels* x86 = x86Kernels(set);
    return x86 != nullptr ? *x86 : kPortable;
}

const ActivationQuantizers& activationQuantizersOf(InstructionSet set) {
    static const ActivationQuantizers kPortable{quantizeQ80Portable, quantizeQ8K, halvesPortable};
    const ActivationQuantizers* x86 = set != InstructionSet::Portable ? activationQuantizersX86() : nullptr;
    return x86 != nullptr ? *x86 : kPortable;
}

} // namespace organ::detail
