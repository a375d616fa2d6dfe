#pragma once

// Shared by the quantized products' translation units: the tile kernels of each instruction set.
// A tile kernel computes `rows` weight rows × `columns` activation columns at once, each loaded
// block meeting every row or column of the tile, into out[r · columns + c]. The products' drivers
// (quant_dot.cpp, kquant_dot.cpp, f16_dot.cpp) cut a product into tiles, repeating the last row
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
// - F16 × F16 and F32 × F32: eight float lanes, lane l adding weight · activation of values l,
//   l + 8, … by fused multiply-adds, then the lanes added as Q8_0's. F16 columns are
//   HalfActivations' halves: a column's block b at column + 16 b.
#include "quant/kquant_dot.h"
#include "quant/kquant_unpack.h"
#include "quant/quant_dot.h"
#include "support/instruction_set.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace organ::detail {

using Q80Block = QuantizedActivations::Block;

template <class Row, class Column>
using TileFn = void (*)(const Row* const* rows, const Column* const* columns, std::size_t blocks, float* out);

template <class Row, class Column> struct Tile {
    int rows = 1;
    int columns = 1;
    TileFn<Row, Column> fn = nullptr;
    // Whether fn reads F16 columns a pair at a time: columns[2p] is then HalfActivations::pair of
    // columns 2p and 2p + 1 (and columns[2p + 1] unused).
    bool pairedColumns = false;
};

// `wide` for many columns (a batch of tokens), `narrow` for one (generation). `edges`, where a set
// has them: narrower tiles of the wide tile's rows, reading columns as it does, for the columns a
// batch leaves after its whole wide tiles (the narrowest that holds them takes them).
template <class Row, class Column> struct TileKernels {
    Tile<Row, Column> wide;
    Tile<Row, Column> narrow;
    Tile<Row, Column> edges[5] = {};
};

// Q8_0 rows (34-byte blocks) × q8_0 columns; `blocks` per row.
using Q80Kernels = TileKernels<std::byte, Q80Block>;
// Unpacked K-quant rows (super-blocks) × q8_K columns; `blocks` super-blocks per row.
using KQuantKernels = TileKernels<Unpacked, Q8KBlock>;
// F16 rows × F16 columns (HalfActivations); `blocks` of 8 values per row.
using F16Kernels = TileKernels<std::uint16_t, std::uint16_t>;
// F32 rows × F32 columns, the same way.
using F32Kernels = TileKernels<float, float>;

struct SetKernels {
    Q80Kernels q80;
    KQuantKernels kQuant;
    F16Kernels f16;
    F32Kernels f32;
};

// The F16 tiles of a batch of tokens on the AVX-512 sets: the 512-bit tile (4 × 12), or the 256-bit
// one (4 × 3) that CPUs splitting 512-bit operations run faster (cpuSplitsWideRegisters; AMD Zen 4:
// 51.5-54.4 against 45.0-47.1 G multiply-adds a second and core). Both give the same bits; Auto
// takes the CPU's, tests name one.
enum class HalfTiles { Auto, Wide, Narrow };
void useHalfTiles(HalfTiles tiles);

// The kernels of `set` (product_kernels.cpp).
const SetKernels& kernelsOf(InstructionSet set);

// The portable kernels, one product a tile (quant_dot.cpp, kquant_dot.cpp, f16_dot.cpp).
void q80TilePortable(const std::byte* const* rows, const Q80Block* const* columns, std::size_t blocks,
                     float* out);
void kQuantTilePortable(const Unpacked* const* rows, const Q8KBlock* const* columns, std::size_t blocks,
                        float* out);
void f16TilePortable(const std::uint16_t* const* rows, const std::uint16_t* const* columns,
                     std::size_t blocks, float* out);
void f32TilePortable(const float* const* rows, const float* const* columns, std::size_t blocks, float* out);

// The x86 kernels of `set` (product_kernels_x86.cpp), with the 256-bit F16 tiles where
// `narrowHalves`; nullptr for portable or where the build has none.
const SetKernels* x86Kernels(InstructionSet set, bool narrowHalves);

// Activations prepared for the products: `blocks` q8_0 blocks of 32 floats each; `count` floats (a
// multiple of 256) as q8_K super-blocks; `count` columns of `size` floats (a multiple of 8) rounded
// to F16 in HalfActivations' layout.
struct ActivationQuantizers {
    void (*q80)(const float* x, std::size_t blocks, Q80Block* out);
    void (*q8K)(const float* x, std::size_t count, Q8KBlock* out);
    void (*halves)(const float* x, std::size_t size, std::size_t count, std::uint16_t* out);
};

// The quantizers of `set` (product_kernels.cpp): the AVX2 ones on every SIMD set, all giving the
// portable ones' bits.
const ActivationQuantizers& activationQuantizersOf(InstructionSet set);
void quantizeQ80Portable(const float* x, std::size_t blocks, Q80Block* out);
void halvesPortable(const float* x, std::size_t size, std::size_t count, std::uint16_t* out);
// The AVX2 quantizers (activation_quant_x86.cpp); nullptr where the build has none.
const ActivationQuantizers* activationQuantizersX86();

// The bytes of one block of a column: q8_0 and q8_K blocks as they are, 8 values of a dense one.
template <class Column>
constexpr std::size_t kColumnBlockBytes = std::is_same_v<Column, float> ||
                                                  std::is_same_v<Column, std::uint16_t>
                                              ? 8 * sizeof(Column)
                                              : sizeof(Column);

// How many of `count` columns the wide tiles take (from the first), the rest going to narrow ones:
// all of them when the last, partial tile would hold at least two columns and a quarter of its
// columns (it repeats the last column into the others, cheaper than narrow tiles that read every
// row again for each column), else whole tiles only. One column (generation) is always narrow.
inline std::size_t wideTileColumns(std::size_t count, int tileColumns) {
    const auto wide = static_cast<std::size_t>(tileColumns);
    const std::size_t left = count % wide;
    return left >= 2 && 4 * left >= wide ? count : count / wide * wide;
}

// Cuts rows × count products into tiles of `tile`: calls tile.fn with the tile's rows and columns
// (the last real one repeated past an edge), then stores the real results at result[r + c · stride].
// Rows are taken 64 at a time, and those 64 meet the columns a run of at most 192 KiB at a time, so
// that the run stays in the core's cache while every row meets it: 512 columns of an FFN's 8192
// activations (4.7 MB in q8_0, 16 MB in F32) would otherwise come from the shared cache or memory
// for every tile of rows.
template <class Row, class Column, class RowAt, class ColumnAt>
void runTiles(const Tile<Row, Column>& tile, std::size_t rows, std::size_t firstColumn, std::size_t count,
              std::size_t blocks, RowAt rowAt, ColumnAt columnAt, float* result, std::size_t stride) {
    constexpr std::size_t kChunk = 64; // a multiple of every tile's rows
    constexpr std::size_t kRunBytes = 192 << 10;
    const auto tileRows = static_cast<std::size_t>(tile.rows);
    const auto tileColumns = static_cast<std::size_t>(tile.columns);
    const std::size_t columnBytes = std::max<std::size_t>(1, blocks * kColumnBlockBytes<Column>);
    const std::size_t run = std::max<std::size_t>(1, kRunBytes / columnBytes / tileColumns) * tileColumns;
    const Row* rowPointers[16];
    const Column* columnPointers[16];
    float out[16 * 16];
    for (std::size_t chunk = 0; chunk < rows; chunk += kChunk) {
        const std::size_t chunkEnd = std::min(rows, chunk + kChunk);
        for (std::size_t first = 0; first < count; first += run) {
            const std::size_t last = std::min(count, first + run);
            for (std::size_t r0 = chunk; r0 < chunkEnd; r0 += tileRows) {
                for (std::size_t r = 0; r < tileRows; ++r) {
                    rowPointers[r] = rowAt(std::min(r0 + r, rows - 1));
                }
                const std::size_t realRows = std::min(tileRows, chunkEnd - r0);
                for (std::size_t c0 = first; c0 < last; c0 += tileColumns) {
                    for (std::size_t c = 0; c < tileColumns; ++c) {
                        columnPointers[c] = columnAt(firstColumn + std::min(c0 + c, count - 1));
                    }
                    tile.fn(rowPointers, columnPointers, blocks, out);
                    const std::size_t realColumns = std::min(tileColumns, count - c0);
                    for (std::size_t c = 0; c < realColumns; ++c) {
                        float* column = result + r0 + (firstColumn + c0 + c) * stride;
                        for (std::size_t r = 0; r < realRows; ++r) {
                            column[r] = out[r * tileColumns + c];
                        }
                    }
                }
            }
        }
    }
}

// rows × count products of rows of `blocks` blocks: whole wide tiles (their pointers from wideAt),
// then the columns left by the narrowest edge tile that holds them (from wideAt too) when there is
// one and more than one column; else the columns wideTileColumns gives by the wide tile and the rest
// by the narrow one (from narrowAt).
template <class Row, class Column, class RowAt, class WideAt, class NarrowAt>
void runProduct(const TileKernels<Row, Column>& kernels, std::size_t rows, std::size_t count,
                std::size_t blocks, RowAt rowAt, WideAt wideAt, NarrowAt narrowAt, float* out,
                std::size_t outStride) {
    const auto wide = static_cast<std::size_t>(kernels.wide.columns);
    const std::size_t whole = count / wide * wide;
    const Tile<Row, Column>* edge = nullptr;
    for (const Tile<Row, Column>& e : kernels.edges) {
        if (e.fn != nullptr && static_cast<std::size_t>(e.columns) >= count - whole &&
            (edge == nullptr || e.columns < edge->columns)) {
            edge = &e;
        }
    }
    if (count > 1 && whole < count && edge != nullptr) {
        runTiles(kernels.wide, rows, 0, whole, blocks, rowAt, wideAt, out, outStride);
        runTiles(*edge, rows, whole, count - whole, blocks, rowAt, wideAt, out, outStride);
        return;
    }
    const std::size_t tiled = wideTileColumns(count, kernels.wide.columns);
    runTiles(kernels.wide, rows, 0, tiled, blocks, rowAt, wideAt, out, outStride);
    runTiles(kernels.narrow, rows, tiled, count - tiled, blocks, rowAt, narrowAt, out, outStride);
}

} // namespace organ::detail
