#include "merge/tensor_merger.h"

#include "merge/dare_mask.h"
#include "merge/merge_kernels.h"
#include "support/errors.h"
#include "support/free_vector.h"
#include "support/text_format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

namespace organ {
namespace {

// Values handed to a thread at a time (256 KiB of floats per input), read in batches of 16 pieces.
constexpr std::size_t kPiece = 1u << 16;
constexpr std::size_t kBatch = 1u << 20;
// Values combined at a time: the sums of a block stay in the first-level cache.
constexpr std::size_t kBlock = 2048;
constexpr std::size_t kBins = 1u << 16;
// Threads at most in the passes before the merge, each of which keeps its own radix histograms
// (512 KiB per model and cut); the merge pass itself (a block and a piece each) uses every core.
constexpr unsigned kMaxThreads = 8;

using detail::chooseBits;
using detail::electSigns;
using detail::magnitudeKey;

// The loops over values, compiled also for wider vectors (the loader picks the clone the CPU runs):
// elementwise float operations give the same bits at any width.
#if defined(__x86_64__) && defined(__GNUC__)
#define ORGAN_VECTOR_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define ORGAN_VECTOR_CLONES
#endif

// Task vectors: the base subtracted from a model's values.
ORGAN_VECTOR_CLONES void subtractBase(float* values, const float* base, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j) {
        values[j] -= base[j];
    }
}

// The elements whose key is `key`.
ORGAN_VECTOR_CLONES std::uint64_t countKey(const float* d, std::size_t n, std::uint32_t key) {
    std::uint64_t count = 0;
    for (std::size_t j = 0; j < n; ++j) {
        count += magnitudeKey(d[j]) == key ? 1 : 0;
    }
    return count;
}

// Keeps the values whose keys are in [low, high) and zeroes the rest (inlined into the clones of
// its caller).
inline void keepKeysIn(float* d, std::size_t n, std::uint32_t low, std::uint32_t high) {
    for (std::size_t j = 0; j < n; ++j) {
        const std::uint32_t key = magnitudeKey(d[j]);
        d[j] = chooseBits((key >= low) & (key < high), d[j], 0.0f);
    }
}

// Adds to counts[index(item)] (below `bins`) for each of n items, in four interleaved tallies: a
// run of items of one index (keys of a few buckets, a quantized input's repeated levels) then waits
// on its counter's last increment once in four items, not at every one.
template <typename Item, typename Index>
void tally(const Item* items, std::size_t n, std::size_t bins, Index index, std::uint64_t* counts,
           std::vector<std::uint32_t>& tallies) {
    constexpr std::size_t kWays = 4;
    tallies.assign(kWays * bins, 0);
    std::size_t j = 0;
    for (; j + kWays <= n; j += kWays) {
        for (std::size_t way = 0; way < kWays; ++way) {
            ++tallies[way * bins + index(items[j + way])];
        }
    }
    for (; j < n; ++j) {
        ++tallies[index(items[j])];
    }
    for (std::size_t b = 0; b < bins; ++b) {
        for (std::size_t way = 0; way < kWays; ++way) {
            counts[b] += tallies[way * bins + b];
        }
    }
}

// The low 16 bits of the keys whose high 16 bits are `bucket`, in order at lows, gathered without a
// branch (a bucket holds an unpredictable share of the keys); returns how many.
std::size_t lowsInBucket(const std::uint32_t* keys, std::size_t n, std::uint32_t bucket,
                         std::uint16_t* lows) {
    std::size_t m = 0;
    for (std::size_t j = 0; j < n; ++j) {
        lows[m] = static_cast<std::uint16_t>(keys[j]);
        m += (keys[j] >> 16) == bucket ? 1 : 0;
    }
    return m;
}

// The cuts' working memory, kept from one tensor to the next: a tensor's histograms alone are
// megabytes, which the allocator gave back to the kernel in between, so every tensor paid their page
// faults and zeroing again (2 ms, most of a small tensor's merge). What a large window needs
// (megabytes of gathered keys) is given back after its tensor.
struct CutScratch {
    using Histogram = std::vector<std::uint64_t>;
    std::vector<std::vector<Histogram>> high; // per thread and model
    Histogram sum;
    std::vector<Histogram> low{1}; // the low 16 bits of the keys in a window's cut bucket
    std::vector<std::uint16_t> lows;
    std::vector<std::uint32_t> tallies;
    std::vector<std::vector<std::uint32_t>> kept; // per thread: a piece's keys in the window
};

// A set of CutScratch lent to one merger's cuts at a time, and taken back when they are found (or
// fail): two sets at most are kept for the next tensors, whichever threads prepare merges, so the
// memory kept stays a few MiB however many threads merge at once.
class ScratchLease {
public:
    ScratchLease() {
        const std::lock_guard lock(s_mutex);
        if (!s_free.empty()) {
            m_scratch = std::move(s_free.back());
            s_free.pop_back();
        }
        if (!m_scratch) {
            m_scratch = std::make_unique<CutScratch>();
        }
    }
    ~ScratchLease() {
        const std::lock_guard lock(s_mutex);
        if (s_free.size() < kKept) {
            s_free.push_back(std::move(m_scratch));
        }
    }
    ScratchLease(const ScratchLease&) = delete;
    ScratchLease& operator=(const ScratchLease&) = delete;
    CutScratch& operator*() const { return *m_scratch; }

private:
    static constexpr std::size_t kKept = 2;
    static inline std::mutex s_mutex;
    static inline std::vector<std::unique_ptr<CutScratch>> s_free;
    std::unique_ptr<CutScratch> m_scratch;
};

bool isTaskArithmetic(MergeMethod method) {
    return method == MergeMethod::TaskArithmetic || method == MergeMethod::DareLinear ||
           method == MergeMethod::Breadcrumbs;
}

bool usesTaskVectors(MergeMethod method) {
    return method != MergeMethod::Linear && method != MergeMethod::Slerp && method != MergeMethod::ModelStock;
}

// Runs work(thread) for every thread < threads: on threads − 1 new threads and this one. The first
// failure is rethrown once all have ended.
template <typename Work> void onThreads(unsigned threads, const Work& work) {
    if (threads <= 1) {
        work(0u);
        return;
    }
    std::vector<std::exception_ptr> failures(threads);
    auto guarded = [&](unsigned thread) {
        try {
            work(thread);
        } catch (...) {
            failures[thread] = std::current_exception();
        }
    };
    {
        std::vector<std::jthread> helpers;
        for (unsigned t = 1; t < threads; ++t) {
            helpers.emplace_back(guarded, t);
        }
        guarded(0u);
    }
    for (const std::exception_ptr& failure : failures) {
        if (failure) {
            std::rethrow_exception(failure);
        }
    }
}

} // namespace

TensorMerger::TensorMerger(TensorMergeParams params, TensorMergeInputs inputs)
    : m_params(std::move(params)), m_inputs(std::move(inputs)) {
    if (m_inputs.models.size() != m_params.models.size() || m_inputs.models.empty() ||
        (needsBase(m_params.method) && !m_inputs.base)) {
        throw FormatError(m_params.stream + ": the merge's inputs do not fit its parameters");
    }
    for (const ModelTensorParams& p : m_params.models) {
        ModelState state;
        state.weight = static_cast<float>(p.weight);
        m_models.push_back(state);
    }
}

void TensorMerger::setThreads(unsigned threads) {
    m_threads = threads;
}

unsigned TensorMerger::threadsFor(std::uint64_t values, std::size_t pieceSize) const {
    const unsigned cores = m_threads != 0 ? m_threads : std::max(1u, std::thread::hardware_concurrency());
    const std::uint64_t pieces = (values + pieceSize - 1) / pieceSize;
    const unsigned most = m_prepared ? cores : kMaxThreads;
    return static_cast<unsigned>(std::min<std::uint64_t>({cores, most, std::max<std::uint64_t>(pieces, 1)}));
}

std::size_t TensorMerger::pieceCount() const {
    return static_cast<std::size_t>((m_inputs.elements + kPiece - 1) / kPiece);
}

template <typename Visit>
void TensorMerger::forPieces(std::uint64_t first, std::size_t count, std::size_t pieceSize, Visit visit) {
    const std::size_t pieces = (count + pieceSize - 1) / pieceSize;
    const unsigned threads = threadsFor(count, pieceSize);
    onThreads(threads, [&](unsigned thread) {
        for (std::size_t p = thread; p < pieces; p += threads) {
            Piece piece;
            piece.offset = p * pieceSize;
            piece.first = first + piece.offset;
            piece.count = std::min(pieceSize, count - piece.offset);
            visit(thread, piece);
        }
    });
}

template <typename Visit>
void TensorMerger::readBatch(std::uint64_t first, std::size_t count, bool deltas, Visit visit) {
    const bool hasBase = static_cast<bool>(m_inputs.base);
    if (hasBase) {
        m_batch.base.resize(count);
    }
    m_batch.values.resize(m_inputs.models.size());
    for (std::vector<float>& values : m_batch.values) {
        values.resize(count);
    }
    forPieces(first, count, kPiece, [&](unsigned thread, const Piece& piece) {
        float* base = hasBase ? m_batch.base.data() + piece.offset : nullptr;
        if (hasBase) {
            m_inputs.base(piece.first, piece.count, base);
        }
        for (std::size_t i = 0; i < m_inputs.models.size(); ++i) {
            float* values = m_batch.values[i].data() + piece.offset;
            m_inputs.models[i](piece.first, piece.count, values);
            if (deltas) {
                subtractBase(values, base, piece.count);
            }
        }
        visit(thread, piece);
    });
}

template <typename Visit>
void TensorMerger::readBlocks(std::uint64_t first, std::size_t count, bool deltas, Visit visit) {
    readBlocks(first, count, kPiece, deltas, visit, [](unsigned, const Piece&) {});
}

template <typename Visit, typename Finish>
void TensorMerger::readBlocks(std::uint64_t first, std::size_t count, std::size_t pieceSize, bool deltas,
                              Visit visit, Finish finish) {
    const bool hasBase = static_cast<bool>(m_inputs.base);
    std::vector<Block> blocks(threadsFor(count, pieceSize));
    for (Block& block : blocks) {
        block.base.resize(hasBase ? kBlock : 0);
        block.values.assign(m_inputs.models.size(), std::vector<float>(kBlock));
    }
    forPieces(first, count, pieceSize, [&](unsigned thread, const Piece& piece) {
        Block& block = blocks[thread];
        for (std::size_t at = 0; at < piece.count; at += kBlock) {
            block.first = piece.first + at;
            block.count = std::min(kBlock, piece.count - at);
            if (hasBase) {
                m_inputs.base(block.first, block.count, block.base.data());
            }
            for (std::size_t i = 0; i < m_inputs.models.size(); ++i) {
                float* values = block.values[i].data();
                m_inputs.models[i](block.first, block.count, values);
                if (deltas) {
                    subtractBase(values, block.base.data(), block.count);
                }
            }
            visit(thread, piece, block);
        }
        finish(thread, piece);
    });
}

template <typename Visit> bool TensorMerger::scan(const StopToken* stop, bool deltas, Visit visit) {
    for (std::uint64_t first = 0; first < m_inputs.elements; first += kBatch) {
        if (stop != nullptr && stop->stopRequested()) {
            return false;
        }
        const auto count =
            static_cast<std::size_t>(std::min<std::uint64_t>(kBatch, m_inputs.elements - first));
        readBatch(first, count, deltas, visit);
        if (m_inputs.done) {
            m_inputs.done(first, count);
        }
    }
    return true;
}

bool TensorMerger::prepare(const StopToken* stop) {
    if (m_prepared) {
        return true;
    }
    const MergeMethod method = m_params.method;
    const std::size_t models = m_models.size();
    double weights = 0;
    for (const ModelTensorParams& p : m_params.models) {
        weights += p.weight;
    }
    if (method == MergeMethod::Linear && m_params.normalize) {
        m_divisor = static_cast<float>(weights);
    } else if (isTaskArithmetic(method) && m_params.normalize && std::abs(weights) >= 1e-8) {
        m_divisor = static_cast<float>(weights);
    }
    // Each piece's sums, added in the pieces' order once all are in.
    auto total = [](const std::vector<double>& pieces, std::size_t stride, std::size_t k) {
        double sum = 0;
        for (std::size_t at = k; at < pieces.size(); at += stride) {
            sum += pieces[at];
        }
        return sum;
    };
    if (method == MergeMethod::Slerp) {
        std::vector<double> sums(pieceCount() * 3, 0.0);
        const bool done = scan(stop, false, [&](unsigned, const Piece& piece) {
            const float* x0 = m_batch.base.data() + piece.offset;
            const float* x1 = m_batch.values[0].data() + piece.offset;
            double norm0 = 0;
            double norm1 = 0;
            double dot = 0;
            for (std::size_t j = 0; j < piece.count; ++j) {
                norm0 += double(x0[j]) * x0[j];
                norm1 += double(x1[j]) * x1[j];
                dot += double(x0[j]) * x1[j];
            }
            double* at = sums.data() + piece.first / kPiece * 3;
            at[0] = norm0;
            at[1] = norm1;
            at[2] = dot;
        });
        if (!done) {
            return false;
        }
        // A norm of at most 1e-8 leaves its vector as it is (divided by 1).
        const double norm0 = std::sqrt(total(sums, 3, 0));
        const double norm1 = std::sqrt(total(sums, 3, 1));
        const double a = norm0 > 1e-8 ? norm0 : 1.0;
        const double b = norm1 > 1e-8 ? norm1 : 1.0;
        const double d = total(sums, 3, 2) / (a * b);
        const double t = m_params.t;
        if (std::abs(d) > 0.9995) {
            m_coefficients = {static_cast<float>(1 - t), static_cast<float>(t)};
        } else {
            const double theta = std::acos(d);
            m_coefficients = {static_cast<float>(std::sin((1 - t) * theta) / std::sin(theta)),
                              static_cast<float>(std::sin(t * theta) / std::sin(theta))};
        }
    }
    if (method == MergeMethod::ModelStock) {
        const std::size_t pairs = models * models;
        std::vector<double> dots(pieceCount() * pairs, 0.0);
        const bool done = scan(stop, true, [&](unsigned, const Piece& piece) {
            double* at = dots.data() + piece.first / kPiece * pairs;
            for (std::size_t i = 0; i < models; ++i) {
                const float* u = m_batch.values[i].data() + piece.offset;
                for (std::size_t k = i; k < models; ++k) {
                    const float* v = m_batch.values[k].data() + piece.offset;
                    double sum = 0;
                    for (std::size_t j = 0; j < piece.count; ++j) {
                        sum += double(u[j]) * v[j];
                    }
                    at[i * models + k] = sum;
                }
            }
        });
        if (!done) {
            return false;
        }
        double cosines = 0;
        for (std::size_t i = 0; i < models; ++i) {
            for (std::size_t k = i + 1; k < models; ++k) {
                const double norms = std::max(std::sqrt(total(dots, pairs, i * models + i)) *
                                                  std::sqrt(total(dots, pairs, k * models + k)),
                                              1e-6);
                cosines += std::clamp(total(dots, pairs, i * models + k) / norms, -1.0, 1.0);
            }
        }
        const double c = cosines / static_cast<double>(models * (models - 1) / 2);
        const double divisor = 1 + static_cast<double>(models - 1) * c;
        const double t = static_cast<double>(models) * c / divisor;
        // (A NaN in an input makes c NaN: the merged values then say so, as for every method.)
        if (std::isfinite(c) && (std::abs(divisor) < 1e-6 || !std::isfinite(t))) {
            throw FormatError(m_params.stream +
                              ": model_stock's task vectors point in opposite directions "
                              "(their mean cosine is " +
                              fixedDecimals(c, 3) +
                              "), so t = N·c / (1 + (N − 1)·c) divides by (nearly) zero");
        }
        m_coefficients = {static_cast<float>(t), static_cast<float>(1 - t)};
    }
    if (sparsifyOf(method) == Sparsify::Bernoulli && m_params.rescale) {
        // Per piece and model: the L1 norm of δ, and of what the mask keeps.
        std::vector<double> norms(pieceCount() * models * 2, 0.0);
        const bool done = scan(stop, true, [&](unsigned, const Piece& piece) {
            double* at = norms.data() + piece.first / kPiece * models * 2;
            for (std::size_t i = 0; i < models; ++i) {
                const DareMask mask(m_params.seed, m_params.stream, i);
                const double density = m_params.models[i].density;
                const float* d = m_batch.values[i].data() + piece.offset;
                double whole = 0;
                double kept = 0;
                for (std::size_t j = 0; j < piece.count; ++j) {
                    const double magnitude = std::abs(d[j]);
                    whole += magnitude;
                    kept += mask.keeps(piece.first + j, density) ? magnitude : 0.0;
                }
                at[i * 2] = whole;
                at[i * 2 + 1] = kept;
            }
        });
        if (!done) {
            return false;
        }
        for (std::size_t i = 0; i < models; ++i) {
            const double whole = total(norms, models * 2, i * 2);
            const double kept = total(norms, models * 2, i * 2 + 1);
            if (whole >= 1e-7 && kept >= 1e-7) {
                m_models[i].scale = static_cast<float>(whole / kept);
            }
        }
    }
    const Sparsify sparsify = sparsifyOf(method);
    if ((sparsify == Sparsify::Magnitude || sparsify == Sparsify::Breadcrumbs) && !prepareCuts(stop)) {
        return false;
    }
    m_prepared = true;
    restart();
    return true;
}

bool TensorMerger::prepareCuts(const StopToken* stop) {
    const std::uint64_t n = m_inputs.elements;
    const unsigned threads = threadsFor(n, kPiece);
    const std::size_t pieces = pieceCount();
    struct Pending {
        std::size_t model = 0;
        Cut* cut = nullptr;
        std::uint64_t rank = 0;
        std::uint32_t bucket = 0;
        std::uint64_t above = 0;         // elements in buckets above `bucket`
        std::vector<Histogram> low;      // per thread, for a cut outside its window
        std::vector<std::uint64_t> ties; // per piece of the tensor: its elements at the cut's key
    };
    std::vector<Pending> pending;
    auto place = [&](std::size_t model, Cut& cut, std::uint64_t rank) {
        if (rank == 0) {
            cut.kind = Cut::Kind::None;
        } else if (rank >= n) {
            cut.kind = Cut::Kind::All;
        } else {
            cut.kind = Cut::Kind::Key;
            pending.push_back({model, &cut, rank, 0, 0, {}, {}});
        }
    };
    for (std::size_t i = 0; i < m_models.size(); ++i) {
        const ModelTensorParams& p = m_params.models[i];
        const auto keep = static_cast<std::uint64_t>(std::floor(p.density * static_cast<double>(n)));
        std::uint64_t from = 0;
        if (sparsifyOf(m_params.method) == Sparsify::Breadcrumbs) {
            // The largest ⌊gamma·n⌋ go first, fewer when both cuts would overlap.
            from =
                std::min(static_cast<std::uint64_t>(std::floor(p.gamma * static_cast<double>(n))), n - keep);
        }
        place(i, m_models[i].from, from);
        place(i, m_models[i].to, from + keep);
    }
    if (pending.empty()) {
        return true;
    }
    // Pass 1: the first batch's histogram of the high 16 bits of |δ| foretells each cut's bucket;
    // from then on the keys in a window of buckets around it are kept and those above it counted.
    // When the cut falls in its window (nearly always: the values' spread is much the same from
    // batch to batch), it is found among the kept keys, without a second pass over the inputs.
    const ScratchLease lease;
    CutScratch& scratch = *lease;
    std::vector<std::vector<Histogram>>& high = scratch.high;
    high.resize(std::max<std::size_t>(high.size(), threads));
    for (unsigned t = 0; t < threads; ++t) {
        high[t].resize(m_models.size());
    }
    auto clearHistograms = [&](const std::vector<Pending*>& cuts) {
        for (unsigned t = 0; t < threads; ++t) {
            for (Histogram& histogram : high[t]) {
                histogram.clear();
            }
            for (const Pending* p : cuts) {
                high[t][p->model].assign(kBins, 0);
            }
        }
    };
    std::vector<Pending*> all;
    for (Pending& p : pending) {
        all.push_back(&p);
    }
    clearHistograms(all);
    auto summed = [&](std::size_t model) -> const Histogram& {
        Histogram& sum = scratch.sum;
        sum.assign(kBins, 0);
        for (unsigned t = 0; t < threads; ++t) {
            const Histogram& counters = high[t][model];
            for (std::size_t b = 0; b < counters.size(); ++b) {
                sum[b] += counters[b];
            }
        }
        return sum;
    };
    // The bucket holding the element of the given rank (descending), and the elements above it.
    auto bucketOf = [](const Histogram& sum, std::uint64_t rank, std::uint64_t& above) {
        above = 0;
        for (std::size_t b = kBins; b-- > 0;) {
            if (above + sum[b] > rank) {
                return static_cast<std::uint32_t>(b);
            }
            above += sum[b];
        }
        return std::uint32_t{0};
    };
    // Where the keys kept from a piece are: in its thread's list, from `begin` to `end`.
    struct Span {
        unsigned thread = 0;
        std::size_t begin = 0;
        std::size_t end = 0;
    };
    struct Window {
        std::uint32_t low = 1; // empty until the first batch is counted
        std::uint32_t high = 0;
        bool overflowed = false;
        std::vector<std::vector<std::uint32_t>> keys; // per thread
        std::vector<std::uint64_t> above;             // per thread: the keys above the window
        std::vector<Span> spans;                      // per piece of the tensor
    };
    std::vector<Window> windows(pending.size());
    for (Window& w : windows) {
        w.keys.resize(threads);
        w.above.resize(threads);
        w.spans.resize(pieces);
    }
    // The keys of the cut's window in values (less base, unless null) of the given piece, `starts`
    // at its first.
    const detail::GatherWindowFn gatherWindow = detail::mergeKernels().gatherWindow;
    scratch.kept.resize(std::max<std::size_t>(scratch.kept.size(), threads));
    for (unsigned t = 0; t < threads; ++t) {
        scratch.kept[t].resize(kPiece + 16);
    }
    auto keep = [&](unsigned thread, std::size_t piece, bool starts, std::size_t k, const float* values,
                    const float* base, std::size_t count) {
        Window& w = windows[k];
        if (w.overflowed || w.low > w.high) {
            return;
        }
        std::uint32_t* kept = scratch.kept[thread].data();
        const std::size_t m = gatherWindow(values, base, count, w.low, w.high, kept, w.above[thread]);
        std::vector<std::uint32_t>& keys = w.keys[thread];
        Span& span = w.spans[piece];
        if (starts) {
            span = {thread, keys.size(), keys.size()};
        }
        keys.insert(keys.end(), kept, kept + m);
        span.end = keys.size();
    };
    auto count = [&](unsigned thread, const Piece& piece) {
        for (std::size_t i = 0; i < m_models.size(); ++i) {
            Histogram& histogram = high[thread][i];
            if (!histogram.empty()) {
                const float* d = m_batch.values[i].data() + piece.offset;
                for (std::size_t j = 0; j < piece.count; ++j) {
                    ++histogram[magnitudeKey(d[j]) >> 16];
                }
            }
        }
    };
    // Kept keys at most per cut (4 bytes each); past it the cut takes the passes after the first.
    constexpr std::size_t kMaxKept = std::size_t{1} << 23;
    for (std::uint64_t first = 0; first < n; first += kBatch) {
        if (stop != nullptr && stop->stopRequested()) {
            return false;
        }
        const auto c = static_cast<std::size_t>(std::min<std::uint64_t>(kBatch, n - first));
        if (first == 0) {
            readBatch(first, c, true, count);
            for (std::size_t k = 0; k < pending.size(); ++k) {
                const Histogram& sum = summed(pending[k].model);
                // The rank foreseen in this batch, and a margin of 1/256 of the batch and four
                // standard deviations of a sampled rank either side (none when the batch is the tensor).
                const double share = static_cast<double>(c) / static_cast<double>(n);
                const double rank = static_cast<double>(pending[k].rank) * share;
                const double margin =
                    c == n ? 0.0 : static_cast<double>(c) / 256 + 4 * std::sqrt(rank * (1 - share) + 1);
                std::uint64_t above = 0;
                windows[k].high =
                    bucketOf(sum, static_cast<std::uint64_t>(std::max(0.0, rank - margin)), above);
                windows[k].low = bucketOf(sum, static_cast<std::uint64_t>(rank + margin), above);
            }
            forPieces(first, c, kPiece, [&](unsigned thread, const Piece& piece) {
                for (std::size_t k = 0; k < pending.size(); ++k) {
                    const float* d = m_batch.values[pending[k].model].data() + piece.offset;
                    keep(thread, piece.first / kPiece, true, k, d, nullptr, piece.count);
                }
            });
        } else {
            // A block at a time while it is in the cache, the base subtracted as the keys are taken.
            readBlocks(first, c, false, [&](unsigned thread, const Piece& piece, const Block& block) {
                for (std::size_t k = 0; k < pending.size(); ++k) {
                    keep(thread, piece.first / kPiece, block.first == piece.first, k,
                         block.values[pending[k].model].data(), block.base.data(), block.count);
                }
            });
        }
        for (Window& w : windows) {
            std::size_t kept = 0;
            for (const std::vector<std::uint32_t>& keys : w.keys) {
                kept += keys.size();
            }
            if (kept > kMaxKept) {
                w.overflowed = true;
                w.keys.assign(threads, {});
            }
        }
        if (m_inputs.done) {
            m_inputs.done(first, c);
        }
    }
    // The cut's key from the low 16 bits of its bucket's keys, counted in `lows`.
    auto settle = [&](Pending& p, const std::vector<Histogram>& lows) {
        std::uint64_t above = p.above;
        for (std::size_t b = kBins; b-- > 0;) {
            std::uint64_t inBucket = 0;
            for (const Histogram& low : lows) {
                inBucket += low[b];
            }
            if (above + inBucket > p.rank) {
                p.cut->key = (p.bucket << 16) | static_cast<std::uint32_t>(b);
                p.cut->tiesBefore = p.rank - above;
                return;
            }
            above += inBucket;
        }
    };
    std::vector<Pending*> unresolved;
    for (std::size_t k = 0; k < pending.size(); ++k) {
        Pending& p = pending[k];
        Window& w = windows[k];
        std::uint64_t above = 0;
        for (const std::uint64_t a : w.above) {
            above += a;
        }
        std::size_t kept = 0;
        for (const std::vector<std::uint32_t>& keys : w.keys) {
            kept += keys.size();
        }
        if (!w.overflowed && w.low <= w.high && above <= p.rank && p.rank < above + kept) {
            // The kept keys' histogram, the keys above the window counted in the bucket above it
            // (a key's high 16 bits are at most 0x7FFF).
            Histogram& sum = scratch.sum;
            sum.assign(kBins, 0);
            const std::uint32_t low = w.low;
            for (const std::vector<std::uint32_t>& keys : w.keys) {
                tally(
                    keys.data(), keys.size(), w.high - low + 1,
                    [low](std::uint32_t key) { return (key >> 16) - low; }, sum.data() + low,
                    scratch.tallies);
            }
            sum[w.high + 1] += above;
            p.bucket = bucketOf(sum, p.rank, p.above);
            std::vector<std::uint16_t>& lows = scratch.lows;
            lows.resize(kept);
            std::size_t inBucket = 0;
            for (const std::vector<std::uint32_t>& keys : w.keys) {
                inBucket += lowsInBucket(keys.data(), keys.size(), p.bucket, lows.data() + inBucket);
            }
            scratch.low[0].assign(kBins, 0);
            tally(
                lows.data(), inBucket, kBins, [](std::uint16_t key) { return key; }, scratch.low[0].data(),
                scratch.tallies);
            settle(p, scratch.low);
            if (lows.capacity() > kPiece) {
                freeVector(lows); // a large window's keys are not kept for the next tensor
            }
            // The ties at the cut in each piece, from the piece's kept keys.
            p.ties.resize(pieces);
            for (std::size_t g = 0; g < pieces; ++g) {
                const Span& span = w.spans[g];
                const std::uint32_t* keys = w.keys[span.thread].data();
                p.ties[g] =
                    static_cast<std::uint64_t>(std::count(keys + span.begin, keys + span.end, p.cut->key));
            }
        } else {
            p.low.assign(threads, Histogram(kBins, 0));
            unresolved.push_back(&p);
        }
        w.keys.clear();
        w.spans.clear();
    }
    // The cuts outside their windows take three more passes: the histograms of the high 16 bits
    // (the bucket), of the low 16 bits of the keys in the bucket, gathered first without a branch
    // (a bucket holds an unpredictable few percent of a piece), and each piece's ties at the cut.
    if (!unresolved.empty()) {
        clearHistograms(unresolved);
        if (!scan(stop, true, count)) {
            return false;
        }
        for (Pending* p : unresolved) {
            p->bucket = bucketOf(summed(p->model), p->rank, p->above);
        }
        std::vector<std::vector<std::uint16_t>> gathered(threads, std::vector<std::uint16_t>(kPiece));
        const bool refined = scan(stop, true, [&](unsigned thread, const Piece& piece) {
            std::uint16_t* lows = gathered[thread].data();
            for (Pending* p : unresolved) {
                const float* d = m_batch.values[p->model].data() + piece.offset;
                std::size_t m = 0;
                for (std::size_t j = 0; j < piece.count; ++j) {
                    const std::uint32_t key = magnitudeKey(d[j]);
                    lows[m] = static_cast<std::uint16_t>(key);
                    m += (key >> 16) == p->bucket ? 1 : 0;
                }
                Histogram& low = p->low[thread];
                for (std::size_t k = 0; k < m; ++k) {
                    ++low[lows[k]];
                }
            }
        });
        if (!refined) {
            return false;
        }
        for (Pending* p : unresolved) {
            settle(*p, p->low);
            p->ties.resize(pieces);
        }
        const bool counted = scan(stop, true, [&](unsigned, const Piece& piece) {
            for (Pending* p : unresolved) {
                p->ties[piece.first / kPiece] =
                    countKey(m_batch.values[p->model].data() + piece.offset, piece.count, p->cut->key);
            }
        });
        if (!counted) {
            return false;
        }
    }
    // The first tie that does not rank before the cut lies in the piece where the ties counted
    // from the first piece pass tiesBefore (there is one: the element of the cut's rank is a tie).
    for (Pending& p : pending) {
        std::uint64_t seen = 0;
        for (std::size_t g = 0; g < pieces; ++g) {
            if (seen + p.ties[g] > p.cut->tiesBefore) {
                p.cut->tiesEnd = indexOfTie(p.model, g * kPiece, p.cut->key, p.cut->tiesBefore - seen);
                break;
            }
            seen += p.ties[g];
        }
    }
    return true;
}

std::uint64_t TensorMerger::indexOfTie(std::size_t model, std::uint64_t first, std::uint32_t key,
                                       std::uint64_t skip) {
    const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(kPiece, m_inputs.elements - first));
    std::vector<float> base(count);
    std::vector<float> d(count);
    m_inputs.base(first, count, base.data());
    m_inputs.models[model](first, count, d.data());
    subtractBase(d.data(), base.data(), count);
    for (std::size_t j = 0; j < count; ++j) {
        if (magnitudeKey(d[j]) == key && skip-- == 0) {
            return first + j;
        }
    }
    throw FormatError(m_params.stream + ": the merge's inputs changed while they were read");
}

ORGAN_VECTOR_CLONES void TensorMerger::sparsify(std::size_t model, Block& block) {
    if (sparsifyOf(m_params.method) != Sparsify::Bernoulli) {
        return;
    }
    float* d = block.values[model].data();
    const DareMask mask(m_params.seed, m_params.stream, model);
    const double density = m_params.models[model].density;
    const float scale = m_models[model].scale;
    for (std::size_t j = 0; j < block.count; ++j) {
        d[j] = mask.keeps(block.first + j, density) ? d[j] * scale : 0.0f;
    }
}

TensorMerger::Limits TensorMerger::limitsAt(std::size_t model, std::uint64_t at, std::uint64_t& end) const {
    const ModelState& state = m_models[model];
    // An element ranks before a cut when its key is at or above the cut's limit: none for None,
    // every one for All, and for Key the cut's key up to the first tie that does not rank before
    // it, one above from there on. Kept: what ranks from `from` on and before `to`.
    constexpr std::uint32_t kAboveEveryKey = 0x80000000u;
    auto limitOf = [&](const Cut& c) {
        if (c.kind == Cut::Kind::None) {
            return kAboveEveryKey;
        }
        if (c.kind == Cut::Kind::All) {
            return 0u;
        }
        if (at < c.tiesEnd) {
            end = std::min(end, c.tiesEnd);
            return c.key;
        }
        return c.key + 1;
    };
    const std::uint32_t high = limitOf(state.from);
    return {limitOf(state.to), high};
}

ORGAN_VECTOR_CLONES void TensorMerger::cut(std::size_t model, std::uint64_t first, std::size_t count,
                                           float* d) const {
    for (std::uint64_t at = first; at < first + count;) {
        std::uint64_t end = first + count;
        const Limits limits = limitsAt(model, at, end);
        keepKeysIn(d + (at - first), static_cast<std::size_t>(end - at), limits.low, limits.high);
        at = end;
    }
}

void TensorMerger::mergeByConsensus(Block& block, float* o) const {
    const detail::SignConsensusFn merge = detail::mergeKernels().signConsensus;
    const std::uint64_t last = block.first + block.count;
    std::vector<detail::ConsensusInput>& inputs = block.consensus;
    inputs.resize(m_models.size());
    for (std::uint64_t at = block.first; at < last;) {
        std::uint64_t end = last;
        const auto offset = static_cast<std::size_t>(at - block.first);
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            const Limits limits = limitsAt(i, at, end);
            inputs[i] = {block.values[i].data() + offset, m_models[i].weight, limits.low, limits.high};
        }
        merge(inputs.data(), inputs.size(), block.base.data() + offset, static_cast<std::size_t>(end - at),
              m_params.normalize, o + offset);
        at = end;
    }
}

ORGAN_VECTOR_CLONES void TensorMerger::combine(Block& block, float* o) {
    const MergeMethod method = m_params.method;
    const std::size_t models = m_models.size();
    const bool consensus = usesSignConsensus(method);
    const Sparsify sparsifying = sparsifyOf(method);
    const bool cuts = sparsifying == Sparsify::Magnitude || sparsifying == Sparsify::Breadcrumbs;
    float sum[kBlock];
    float agreed[kBlock];
    float divisor[kBlock];
    const std::size_t n = block.count;
    const float* base = block.base.data();
    if (method == MergeMethod::Slerp) {
        const float* x = block.values[0].data();
        for (std::size_t j = 0; j < n; ++j) {
            o[j] = m_coefficients[0] * base[j] + m_coefficients[1] * x[j];
        }
        return;
    }
    std::fill_n(sum, n, 0.0f);
    for (std::size_t i = 0; i < models; ++i) {
        float* x = block.values[i].data();
        if (cuts) {
            cut(i, block.first, n, x);
        }
        const float w = method == MergeMethod::ModelStock ? 1.0f : m_models[i].weight;
        for (std::size_t j = 0; j < n; ++j) {
            sum[j] += w * x[j];
        }
    }
    if (method == MergeMethod::Linear) {
        for (std::size_t j = 0; j < n; ++j) {
            o[j] = sum[j] / m_divisor;
        }
    } else if (method == MergeMethod::ModelStock) {
        const auto count = static_cast<float>(models);
        for (std::size_t j = 0; j < n; ++j) {
            o[j] = m_coefficients[0] * (sum[j] / count) + m_coefficients[1] * base[j];
        }
    } else if (!consensus) {
        for (std::size_t j = 0; j < n; ++j) {
            o[j] = base[j] + sum[j] / m_divisor;
        }
    } else {
        // ties' sign consensus on entries already cut (dare_ties).
        electSigns(
            models, n, sum, base, m_params.normalize, [&](std::size_t i) { return m_models[i].weight; },
            [&](std::size_t i, std::size_t j) { return block.values[i][j]; }, agreed, divisor, o);
    }
}

template <typename Place, typename Finish>
void TensorMerger::mergeNext(std::size_t count, std::size_t pieceSize, Place place, Finish finish) {
    const std::size_t models = m_models.size();
    const bool taskVectors = usesTaskVectors(m_params.method);
    const Sparsify sparsifying = sparsifyOf(m_params.method);
    // ties and breadcrumbs_ties: the base subtracted, the cuts made, the signs elected and the mean
    // taken in one pass over a block's values (merge_kernels.h).
    const bool consensusOfCuts = usesSignConsensus(m_params.method) &&
                                 (sparsifying == Sparsify::Magnitude || sparsifying == Sparsify::Breadcrumbs);
    // A NaN or an infinity in an input gives NaNs in the merged block, which is then never written:
    // where the cuts, the masks or the sign election may leave an entry out (ties, dare,
    // breadcrumbs), it would otherwise vanish, or skew a whole tensor's sums (dare's rescale).
    const bool dropsEntries = sparsifying != Sparsify::None || usesSignConsensus(m_params.method);
    auto notFinite = [](const std::vector<float>& values, std::size_t n) {
        return !values.empty() && largestMagnitudeBits(values.data(), n) >= kNotFiniteBits;
    };
    // Batches of whole pieces, about kBatch values.
    const std::size_t batch = std::max(pieceSize, kBatch / pieceSize * pieceSize);
    while (count > 0) {
        const std::size_t c = std::min(batch, count);
        // Each block is read, cut, summed and its signs elected while it is in the cache.
        readBlocks(
            m_position, c, pieceSize, taskVectors && !consensusOfCuts,
            [&](unsigned thread, const Piece& piece, Block& block) {
                float* o = place(thread, piece) + (block.first - piece.first);
                if (dropsEntries && (notFinite(block.base, block.count) ||
                                     std::ranges::any_of(block.values, [&](const std::vector<float>& v) {
                                         return notFinite(v, block.count);
                                     }))) {
                    std::fill_n(o, block.count, std::numeric_limits<float>::quiet_NaN());
                    return;
                }
                if (consensusOfCuts) {
                    mergeByConsensus(block, o);
                    return;
                }
                if (taskVectors) {
                    for (std::size_t i = 0; i < models; ++i) {
                        sparsify(i, block);
                    }
                }
                combine(block, o);
            },
            finish);
        if (m_inputs.done) {
            m_inputs.done(m_position, c);
        }
        m_position += c;
        count -= c;
    }
}

void TensorMerger::next(std::size_t count, float* out) {
    const std::uint64_t start = m_position;
    mergeNext(
        count, kPiece, [&](unsigned, const Piece& piece) { return out + (piece.first - start); },
        [](unsigned, const Piece&) {});
}

void TensorMerger::next(std::size_t count, std::size_t pieceValues, const MergedPiece& take) {
    pieceValues = std::clamp<std::size_t>(pieceValues, 1, std::max<std::size_t>(count, 1));
    const std::size_t threads = threadsFor(count, pieceValues);
    if (m_pieces.size() < threads) {
        m_pieces.resize(threads);
    }
    for (std::size_t t = 0; t < threads; ++t) {
        m_pieces[t].resize(pieceValues);
    }
    mergeNext(
        count, pieceValues, [&](unsigned thread, const Piece&) { return m_pieces[thread].data(); },
        [&](unsigned thread, const Piece& piece) {
            take(piece.first, piece.count, m_pieces[thread].data());
        });
}

void TensorMerger::restart() {
    m_position = 0;
}

std::vector<float> mergeTensorValues(const TensorMergeParams& params, const TensorMergeInputs& inputs) {
    TensorMerger merger(params, inputs);
    merger.prepare();
    std::vector<float> out(static_cast<std::size_t>(inputs.elements));
    merger.next(out.size(), out.data());
    return out;
}

ORGAN_VECTOR_CLONES std::uint32_t largestMagnitudeBits(const float* values, std::size_t n) {
    std::uint32_t largest = 0;
    for (std::size_t j = 0; j < n; ++j) {
        largest = std::max(largest, std::bit_cast<std::uint32_t>(values[j]) & 0x7FFFFFFFu);
    }
    return largest;
}

} // namespace organ
