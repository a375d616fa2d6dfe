#pragma once

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

// The tensors one merged tensor is made from, all of `elements` values.
struct TensorMergeInputs {
    std::uint64_t elements = 0;
    ValueReader base;                // none for a merge without a base (linear)
    std::vector<ValueReader> models; // one per merged model, in TensorMergeParams' order
};

// One tensor merged as ../shared/specs/merge-v1.md says, streamed: the methods that need the whole
// tensor (norms, dot products, L1 norms, the magnitude cuts of ties and breadcrumbs) read the
// inputs first in prepare(), a chunk at a time, keeping only sums and histograms; next() then
// gives the merged values in storage order. Memory stays at a few MiB whatever the tensor's size.
//
// The magnitude cuts are exact: the k-th largest |δ| is found by a radix selection over the bits
// of |δ| as a float (two passes of 65 536 counters), and entries equal to a cut are kept in index
// order (ties broken by lower index), so a merge never depends on how the tensor is cut up.
class TensorMerger {
public:
    TensorMerger(TensorMergeParams params, TensorMergeInputs inputs);
    // The passes over the inputs that the method needs before its first value; false when stopped.
    bool prepare(const StopToken* stop = nullptr);
    // The next `count` merged values (after prepare()), continuing where the last call ended.
    void next(std::size_t count, float* out);
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
        std::uint64_t tiesSeen = 0;   // in next(): those met so far
    };
    struct ModelState {
        float weight = 1;
        float scale = 1; // dare's rescale
        Cut from;        // kept: ranks from here (magnitude cuts) …
        Cut to;          // … to here
    };
    using Histogram = std::vector<std::uint64_t>;

    // Reads every chunk of the inputs, and calls visit(first, count, base, models); false when stopped.
    template <typename Visit> bool scan(const StopToken* stop, Visit visit);
    void readChunk(std::uint64_t first, std::size_t count);
    void deltas(std::size_t count);
    bool prepareCuts(const StopToken* stop);
    void sparsify(std::size_t model, std::uint64_t first, std::size_t count);
    static bool ranksBefore(Cut& cut, std::uint32_t key);

    TensorMergeParams m_params;
    TensorMergeInputs m_inputs;
    std::vector<ModelState> m_models;
    bool m_prepared = false;
    std::uint64_t m_position = 0;
    float m_divisor = 1;                   // linear and task arithmetic's normalize
    std::array<float, 2> m_coefficients{}; // slerp: of the base and of the model; model_stock: t, 1 − t
    // One chunk of each input, and the task vectors.
    std::vector<float> m_base;
    std::vector<std::vector<float>> m_values;
};

// Every merged value of a tensor at once (small tensors, tests, a merge that is purified next).
std::vector<float> mergeTensorValues(const TensorMergeParams& params, const TensorMergeInputs& inputs);

} // namespace organ
