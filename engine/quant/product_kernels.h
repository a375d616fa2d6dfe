#pragma once

// Shared by the quantized products' translation units: the tile kernels of each instruction set.
// A tile kernel computes `rows` weight rows × `columns` activation columns at once, each loaded
// block meeting every row or column of the tile, into out[r · columns + c]. The products' drivers
// (quant_dot.cpp, kquant_dot.cpp) cut a product into tiles, repeating the last row
// or column where the edge leaves fewer, and keep only the real ones.
//
// Every kernel does each (row, column) product's float operations in the same order as the
// portable one, so all give the same bits:
// - Q8_0 × q8_0: eight float lanes, lane l of block b adding the exact integer sum of values
//   4l … 4l + 3 times (weight scale · activation scale) by a fused multiply-add; at the end the
//   lanes added as ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
// - K-quants × q8_K: one float per product; per super-block one fused multiply-add of the exact
//   integer total with d · x.d, then, for the types with minimums, one of Σ min · sums of 16 with
//   −(dmin · x.d).
#include "quant/kquant_dot.h"
#include "quant/kquant_unpack.h"
#include "quant/quant_dot.h"
#include "support/instruction_set.h"

#include <cstddef>
#include <cstdint>

namespace organ::detail {

using Q80Block = QuantizedActivations::Block;

template <class Row, class Column>
using TileFn = void (*)(const Row* const* rows, const Column* const* columns, std::size_t blocks, float* out);

template <class Row, class Column> struct Tile {
    int rows = 1;
    int columns = 1;
    TileFn<Row, Column> fn = nullptr;
};

// `wide` for many columns (a batch of tokens), `narrow` for one (generation).
template <class Row, class Column> struct TileKernels {
    Tile<Row, Column> wide;
    Tile<Row, Column> narrow;
};

// Q8_0 rows (34-byte blocks) × q8_0 columns; `blocks` per row.
using Q80Kernels = TileKernels<std::byte, Q80Block>;
// Unpacked K-quant rows (super-blocks) × q8_K columns; `blocks` super-blocks per row.
using KQuantKernels = TileKernels<Unpacked, Q8KBlock>;

const Q80Kernels& q80Kernels(InstructionSet set);
const KQuantKernels& kQuantKernels(InstructionSet set);

// The x86 kernels (product_kernels_x86.cpp); nullptr kernels where the build has none.
const Q80Kernels* q80KernelsX86(InstructionSet set);
const KQuantKernels* kQuantKernelsX86(InstructionSet set);

template <class Kernels> const Kernels& orPortable(const Kernels* x86, const Kernels& portable) {
    return x86 != nullptr ? *x86 : portable;
}

// Cuts rows × count products into tiles of `tile`: calls run(firstRow, firstColumn, rowIndex,
// columnIndex, out) with the tile's indices (the last real one repeated past an edge), then copies
// the real results into result[r + c · stride].
template <class Row, class Column, class RowAt, class ColumnAt>
void runTiles(const Tile<Row, Column>& tile, std::size_t rows, std::size_t firstColumn, std::size_t count,
              std::size_t blocks, RowAt rowAt, ColumnAt columnAt, float* result, std::size_t stride) {
    const Row* rowPointers[16];
    const Column* columnPointers[16];
    float out[16 * 16];
    for (std::size_t r0 = 0; r0 < rows; r0 += static_cast<std::size_t>(tile.rows)) {
        for (int r = 0; r < tile.rows; ++r) {
            rowPointers[r] = rowAt(std::min(r0 + static_cast<std::size_t>(r), rows - 1));
        }
        for (std::size_t c0 = firstColumn; c0 < firstColumn + count;
             c0 += static_cast<std::size_t>(tile.columns)) {
            for (int c = 0; c < tile.columns; ++c) {
                columnPointers[c] =
                    columnAt(std::min(c0 + static_cast<std::size_t>(c), firstColumn + count - 1));
            }
            tile.fn(rowPointers, columnPointers, blocks, out);
            for (int r = 0; r < tile.rows && r0 + static_cast<std::size_t>(r) < rows; ++r) {
                for (int c = 0; c < tile.columns && c0 + static_cast<std::size_t>(c) < firstColumn + count;
                     ++c) {
                    result[r0 + static_cast<std::size_t>(r) + (c0 + static_cast<std::size_t>(c)) * stride] =
                        out[r * tile.columns + c];
                }
            }
        }
    }
}

} // namespace organ::detail
