#pragma once

#include "merge/merge_kernels.h"
#include "merge/merge_spec.h"
#include "support/job.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace organ {

// Reads elements [first, first + count) of one input tensor (storage order) as floats.
using ValueReader = std::function<void(std::uint64_t first, std::size_t count, float* out)>;

// The tensors one merged tensor is made from, all of `elements` values. The readers are called
// from several threads at once, for disjoint ranges.
struct TensorMergeInputs {
    std::uint64_t elements = 0;
    ValueReader base;                // none for a merge without a base (linear)
    std::vector<ValueReader> models; // one per merged model, in TensorMergeParams' order
    // Told, from the calling thread, that values [first, first + count) of every input have been
    // read for this pass (in order, a batch at a time): their pages can go. Optional.
    std::function<void(std::uint64_t first, std::uint64_t count)> done;
};

// One tensor merged as ../shared/specs/merge-v1.md says, streamed: the methods that need the whole
// tensor (norms, dot products, L1 norms, the magnitude cuts of ties and breadcrumbs) read the
// inputs first in prepare(), a batch at a time, keeping only sums and histograms; next() then
// gives the merged values in storage order. Memory stays at a few tens of MiB whatever the
// tensor's size.
//
// Each batch is cut into pieces of 65 536 values shared among the threads. Nothing depends on the
// number of threads: a whole-tensor sum is summed in double within each piece and the pieces'
// sums are added in index order; histograms are counts. The magnitude cuts are exact: the k-th
// largest |δ| is found by a radix selection over the bits of |δ| as a float (two passes of 65 536
// counters), and entries equal to a cut are kept in index order (ties broken by lower index: the
// index of the first tie that does not rank before the cut is found in prepare(), so that each
// value's fate depends on its key and its index alone).
class TensorMerger {
public:
    TensorMerger(TensorMergeParams params, TensorMergeInputs inputs);
    // The threads it uses (0: one per core, the default).
    void setThreads(unsigned threads);
    // The passes over the inputs that the method needs before its first value; false when stopped.
    bool prepare(const StopToken* stop = nullptr);
    // The next `count` merged values (after prepare()), continuing where the last call ended.
    void next(std::size_t count, float* out);
    // The same handed to `take` in pieces of `pieceValues` (the last may be shorter), each on the
    // thread that merged it, from that thread's buffer: what the caller does with them there (the
    // writer encodes them) reads them from the cache, where a batch written to memory and read
    // again costs twice a value's bytes in memory traffic. `first` counts from the tensor's start.
    using MergedPiece = std::function<void(std::uint64_t first, std::size_t count, const float* values)>;
    void next(std::size_t count, std::size_t pieceValues, const MergedPiece& take);
    // From the first value again (a reader that asks out of order).
    void restart();
    std::uint64_t position() const { return m_position; }

private:
    // A rank in the order of |δ| (descending; equal values by lower index first): an element
    // "ranks before" it when its rank is lower. None: no element does; All: every element does.
    struct Cut {
        enum class Kind { None, All, Key };
        Kind kind = Kind::None;
        std::uint32_t key = 0;
        std::uint64_t tiesBefore = 0; // of the elements whose key is `key`, how many rank before
        std::uint64_t tiesEnd = 0;    // the index of the first of those that does not
    };
    struct ModelState {
        float weight = 1;
        float scale = 1; // dare's rescale
        Cut from;        // kept: ranks from here (magnitude cuts) …
        Cut to;          // … to here
    };
    // A batch of every input, the task vectors replacing the models' values when asked for.
    struct Batch {
        std::vector<float> base;
        std::vector<std::vector<float>> values;
    };
    // A block of every input read by one thread: where it starts in the tensor, its length.
    struct Block {
        std::uint64_t first = 0;
        std::size_t count = 0;
        std::vector<float> base;
        std::vector<std::vector<float>> values;
        std::vector<detail::ConsensusInput> consensus; // mergeByConsensus's, per model
    };
    // Of a piece of a batch: where it starts in the tensor and in the batch, and its length.
    struct Piece {
        std::uint64_t first = 0;
        std::size_t offset = 0;
        std::size_t count = 0;
    };
    using Histogram = std::vector<std::uint64_t>;

    // Reads every batch of the inputs, each piece on one of `threads` threads, and calls
    // visit(thread, piece, batch) for it; false when stopped.
    template <typename Visit> bool scan(const StopToken* stop, bool deltas, Visit visit);
    // Calls visit(thread, piece) for each piece of [first, first + count), on several threads.
    template <typename Visit>
    void forPieces(std::uint64_t first, std::size_t count, std::size_t pieceSize, Visit visit);
    // Reads [first, first + count) into m_batch and calls visit(thread, piece) for each piece.
    template <typename Visit>
    void readBatch(std::uint64_t first, std::size_t count, bool deltas, Visit visit);
    // Reads [first, first + count) a block at a time, each piece on one thread, and calls
    // visit(thread, piece, block) for each block of each piece: what is done with a block while it
    // is in the cache.
    template <typename Visit>
    void readBlocks(std::uint64_t first, std::size_t count, bool deltas, Visit visit);
    // The same in pieces of `pieceSize`, calling finish(thread, piece) after each piece's blocks.
    template <typename Visit, typename Finish>
    void readBlocks(std::uint64_t first, std::size_t count, std::size_t pieceSize, bool deltas, Visit visit,
                    Finish finish);
    // The next `count` merged values, in pieces of `pieceSize`: each block's at
    // place(thread, piece) + its offset in the piece, finish(thread, piece) once a piece is whole.
    template <typename Place, typename Finish>
    void mergeNext(std::size_t count, std::size_t pieceSize, Place place, Finish finish);
    unsigned threadsFor(std::uint64_t values, std::size_t pieceSize) const;
    std::size_t pieceCount() const;
    bool prepareCuts(const StopToken* stop);
    // The index of the element with `skip` elements of the key before it in the piece of the
    // model's task vector that starts at `first` (read again: one piece per cut).
    std::uint64_t indexOfTie(std::size_t model, std::uint64_t first, std::uint32_t key, std::uint64_t skip);
    // Zeroes what dare drops from the model's task vector in the block.
    void sparsify(std::size_t model, Block& block);
    // The keys the model keeps at element `at`: [low, high). Lowers `end` to the element where
    // they change, if before it.
    struct Limits {
        std::uint32_t low = 0;
        std::uint32_t high = 0;
    };
    Limits limitsAt(std::size_t model, std::uint64_t at, std::uint64_t& end) const;
    // Zeroes what the magnitude cuts drop from values [first, first + count) of the model's task
    // vector, at d.
    void cut(std::size_t model, std::uint64_t first, std::size_t count, float* d) const;
    // The merged values of the block, at o.
    void combine(Block& block, float* o);
    // The same for ties and breadcrumbs_ties, from the models' values (not their task vectors).
    void mergeByConsensus(Block& block, float* o) const;

    TensorMergeParams m_params;
    TensorMergeInputs m_inputs;
    std::vector<ModelState> m_models;
    unsigned m_threads = 0;
    bool m_prepared = false;
    std::uint64_t m_position = 0;
    float m_divisor = 1;                   // linear and task arithmetic's normalize
    std::array<float, 2> m_coefficients{}; // slerp: of the base and of the model; model_stock: t, 1 − t
    Batch m_batch;
    std::vector<std::vector<float>> m_pieces; // next()'s pieces, per thread
};

// Every merged value of a tensor at once (small tensors, tests, a merge that is purified next).
std::vector<float> mergeTensorValues(const TensorMergeParams& params, const TensorMergeInputs& inputs);

// The largest |value| of `n` values as the bits of a float: ordered as the magnitudes are, and
// at least kNotFiniteBits when one is an infinity or a NaN (0 for none).
std::uint32_t largestMagnitudeBits(const float* values, std::size_t n);
inline constexpr std::uint32_t kNotFiniteBits = 0x7F800000u;

} // namespace organ
