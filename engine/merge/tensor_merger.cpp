#include "merge/tensor_merger.h"

#include "merge/dare_mask.h"
#include "support/errors.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <exception>
#include <thread>

namespace organ {
namespace {

// Values handed to a thread at a time (256 KiB of floats per input), read in batches of 16 pieces.
constexpr std::size_t kPiece = 1u << 16;
constexpr std::size_t kBatch = 1u << 20;
// Values combined at a time: the sums of a block stay in the first-level cache.
constexpr std::size_t kBlock = 2048;
constexpr std::size_t kBins = 1u << 16;
// Threads at most: each keeps its own radix histograms (512 KiB per model and cut).
constexpr unsigned kMaxThreads = 8;

// |v| as an ordered key: the bits of a non-negative float order as its values do (NaN above ∞).
std::uint32_t magnitudeKey(float v) {
    return std::bit_cast<std::uint32_t>(v) & 0x7FFFFFFFu;
}

// c ? a : b on the bits, which the vectorizer takes where it leaves a branch on floats alone.
float chooseBits(bool c, float a, float b) {
    const std::uint32_t mask = 0u - static_cast<std::uint32_t>(c);
    return std::bit_cast<float>((std::bit_cast<std::uint32_t>(a) & mask) |
                                (std::bit_cast<std::uint32_t>(b) & ~mask));
}

// The loops over values, compiled also for wider vectors (the loader picks the clone the CPU runs):
// elementwise float operations give the same bits at any width.
#if defined(__x86_64__) && defined(__GNUC__)
#define ORGAN_VECTOR_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define ORGAN_VECTOR_CLONES
#endif

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

unsigned TensorMerger::threadsFor(std::uint64_t values) const {
    const unsigned cores = m_threads != 0 ? m_threads : std::max(1u, std::thread::hardware_concurrency());
    const std::uint64_t pieces = (values + kPiece - 1) / kPiece;
    return static_cast<unsigned>(
        std::min<std::uint64_t>({cores, kMaxThreads, std::max<std::uint64_t>(pieces, 1)}));
}

std::size_t TensorMerger::pieceCount() const {
    return static_cast<std::size_t>((m_inputs.elements + kPiece - 1) / kPiece);
}

template <typename Visit> void TensorMerger::forPieces(std::uint64_t first, std::size_t count, Visit visit) {
    const std::size_t pieces = (count + kPiece - 1) / kPiece;
    const unsigned threads = threadsFor(count);
    onThreads(threads, [&](unsigned thread) {
        for (std::size_t p = thread; p < pieces; p += threads) {
            Piece piece;
            piece.offset = p * kPiece;
            piece.first = first + piece.offset;
            piece.count = std::min(kPiece, count - piece.offset);
            piece.index = p;
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
    forPieces(first, count, [&](unsigned thread, const Piece& piece) {
        float* base = hasBase ? m_batch.base.data() + piece.offset : nullptr;
        if (hasBase) {
            m_inputs.base(piece.first, piece.count, base);
        }
        for (std::size_t i = 0; i < m_inputs.models.size(); ++i) {
            float* values = m_batch.values[i].data() + piece.offset;
            m_inputs.models[i](piece.first, piece.count, values);
            if (deltas) {
                for (std::size_t j = 0; j < piece.count; ++j) {
                    values[j] -= base[j];
                }
            }
        }
        visit(thread, piece);
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
        const double t = static_cast<double>(models) * c / (1 + static_cast<double>(models - 1) * c);
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
    const unsigned threads = threadsFor(n);
    struct Pending {
        std::size_t model = 0;
        Cut* cut = nullptr;
        std::uint64_t rank = 0;
        std::uint32_t bucket = 0;
        std::uint64_t above = 0;    // elements in buckets above `bucket`
        std::vector<Histogram> low; // per thread
    };
    std::vector<Pending> pending;
    auto place = [&](std::size_t model, Cut& cut, std::uint64_t rank) {
        if (rank == 0) {
            cut.kind = Cut::Kind::None;
        } else if (rank >= n) {
            cut.kind = Cut::Kind::All;
        } else {
            cut.kind = Cut::Kind::Key;
            pending.push_back({model, &cut, rank, 0, 0, {}});
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
    // Pass 1: histograms of the high 16 bits of |δ|, per thread and model, summed once all are in.
    // From the first batch's histogram each cut's bucket is foreseen, and from then on the keys in
    // a window of buckets around it are kept: when the cut falls in its window (nearly always: the
    // values' spread is much the same from batch to batch), its low 16 bits are counted from the
    // kept keys, without a second pass over the inputs.
    std::vector<std::vector<Histogram>> high(threads, std::vector<Histogram>(m_models.size()));
    for (const Pending& p : pending) {
        for (std::vector<Histogram>& perModel : high) {
            perModel[p.model].assign(kBins, 0);
        }
    }
    auto summed = [&](std::size_t model) {
        Histogram sum(kBins, 0);
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
    struct Window {
        std::uint32_t low = 1; // empty until the first batch is counted
        std::uint32_t high = 0;
        bool overflowed = false;
        std::vector<std::vector<std::uint32_t>> keys; // per thread
    };
    std::vector<Window> windows(pending.size());
    for (Window& w : windows) {
        w.keys.resize(threads);
    }
    std::vector<std::vector<std::uint32_t>> scratch(threads, std::vector<std::uint32_t>(kPiece));
    auto keep = [&](unsigned thread, const Piece& piece) {
        std::uint32_t* kept = scratch[thread].data();
        for (std::size_t k = 0; k < pending.size(); ++k) {
            Window& w = windows[k];
            if (w.overflowed || w.low > w.high) {
                continue;
            }
            const float* d = m_batch.values[pending[k].model].data() + piece.offset;
            const std::uint32_t width = w.high - w.low;
            auto inWindow = [&](std::uint32_t key) { return (key >> 16) - w.low <= width ? 1u : 0u; };
            std::size_t m = 0;
            auto gather = [&](std::size_t from, std::size_t to) {
                for (std::size_t j = from; j < to; ++j) {
                    const std::uint32_t key = magnitudeKey(d[j]);
                    kept[m] = key;
                    m += inWindow(key);
                }
            };
            // Most runs of 16 hold no key in the window: those are passed over after one vector test.
            std::size_t j = 0;
            for (; j + 16 <= piece.count; j += 16) {
                unsigned any = 0;
                for (std::size_t k = j; k < j + 16; ++k) {
                    any |= inWindow(magnitudeKey(d[k]));
                }
                if (any != 0) {
                    gather(j, j + 16);
                }
            }
            gather(j, piece.count);
            w.keys[thread].insert(w.keys[thread].end(), kept, kept + m);
        }
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
    // Kept keys at most per cut (4 bytes each); past it the cut takes the second pass.
    constexpr std::size_t kMaxKept = std::size_t{1} << 23;
    for (std::uint64_t first = 0; first < n; first += kBatch) {
        if (stop != nullptr && stop->stopRequested()) {
            return false;
        }
        const auto c = static_cast<std::size_t>(std::min<std::uint64_t>(kBatch, n - first));
        if (first == 0) {
            readBatch(first, c, true, count);
            for (std::size_t k = 0; k < pending.size(); ++k) {
                const Histogram sum = summed(pending[k].model);
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
            forPieces(first, c, keep);
        } else {
            readBatch(first, c, true, [&](unsigned thread, const Piece& piece) {
                count(thread, piece);
                keep(thread, piece);
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
    std::vector<Pending*> unresolved;
    for (std::size_t k = 0; k < pending.size(); ++k) {
        Pending& p = pending[k];
        p.bucket = bucketOf(summed(p.model), p.rank, p.above);
        Window& w = windows[k];
        if (!w.overflowed && p.bucket >= w.low && p.bucket <= w.high) {
            p.low.assign(1, Histogram(kBins, 0));
            for (const std::vector<std::uint32_t>& keys : w.keys) {
                for (const std::uint32_t key : keys) {
                    p.low[0][key & 0xFFFF] += (key >> 16) == p.bucket ? 1 : 0;
                }
            }
        } else {
            p.low.assign(threads, Histogram(kBins, 0));
            unresolved.push_back(&p);
        }
        w.keys.clear();
    }
    // Pass 2, for the cuts outside their windows: the low 16 bits of the keys in the cut's bucket,
    // gathered first without a branch (a bucket holds an unpredictable few percent of a piece), then
    // counted.
    if (!unresolved.empty()) {
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
    }
    for (Pending& p : pending) {
        std::uint64_t above = p.above;
        for (std::size_t b = kBins; b-- > 0;) {
            std::uint64_t inBucket = 0;
            for (const Histogram& low : p.low) {
                inBucket += low[b];
            }
            if (above + inBucket > p.rank) {
                p.cut->key = (p.bucket << 16) | static_cast<std::uint32_t>(b);
                p.cut->tiesBefore = p.rank - above;
                break;
            }
            above += inBucket;
        }
    }
    return true;
}

ORGAN_VECTOR_CLONES void TensorMerger::sparsify(std::size_t model, const Piece& piece, const Ties& ties) {
    float* d = m_batch.values[model].data() + piece.offset;
    const ModelState& state = m_models[model];
    switch (sparsifyOf(m_params.method)) {
    case Sparsify::None:
        return;
    case Sparsify::Bernoulli: {
        const DareMask mask(m_params.seed, m_params.stream, model);
        const double density = m_params.models[model].density;
        for (std::size_t j = 0; j < piece.count; ++j) {
            d[j] = mask.keeps(piece.first + j, density) ? d[j] * state.scale : 0.0f;
        }
        return;
    }
    case Sparsify::Magnitude:
    case Sparsify::Breadcrumbs:
        break;
    }
    const Cut& from = state.from;
    const Cut& to = state.to;
    const bool fromAll = from.kind == Cut::Kind::All;
    const bool fromKey = from.kind == Cut::Kind::Key;
    const bool toAll = to.kind == Cut::Kind::All;
    const bool toKey = to.kind == Cut::Kind::Key;
    // An element whose key is a cut's ranks before it when fewer than tiesBefore of the elements
    // with that key came before it: these are decided first, one by one in index order (in the
    // runs of 64 that hold any) …
    constexpr std::uint32_t kNoKey = 0xFFFFFFFFu; // above every |δ|'s key
    const std::uint32_t fromTieKey = fromKey ? from.key : kNoKey;
    const std::uint32_t toTieKey = toKey ? to.key : kNoKey;
    if (ties.in[0] + ties.in[1] > 0) {
        std::uint64_t fromSeen = ties.before[0];
        std::uint64_t toSeen = ties.before[1];
        for (std::size_t at = 0; at < piece.count; at += 64) {
            const std::size_t end = std::min(piece.count, at + 64);
            unsigned any = 0;
            for (std::size_t j = at; j < end; ++j) {
                const std::uint32_t key = magnitudeKey(d[j]);
                any |= static_cast<unsigned>(key == fromTieKey) | static_cast<unsigned>(key == toTieKey);
            }
            if (any == 0) {
                continue;
            }
            for (std::size_t j = at; j < end; ++j) {
                const std::uint32_t key = magnitudeKey(d[j]);
                const bool fromTie = key == fromTieKey;
                const bool toTie = key == toTieKey;
                if (!fromTie && !toTie) {
                    continue;
                }
                const bool pastFrom =
                    !(fromAll || (fromKey && (fromTie ? fromSeen++ < from.tiesBefore : key > from.key)));
                const bool beforeTo = toAll || (toKey && (toTie ? toSeen++ < to.tiesBefore : key > to.key));
                d[j] = pastFrom && beforeTo ? d[j] : 0.0f;
            }
        }
    }
    // … and the rest by their keys alone (a tie kept stays a tie; one dropped is 0 either way).
    for (std::size_t j = 0; j < piece.count; ++j) {
        const std::uint32_t key = magnitudeKey(d[j]);
        const bool tie = (key == fromTieKey) | (key == toTieKey);
        const bool pastFrom = !(fromAll | (fromKey & (key > from.key)));
        const bool beforeTo = toAll | (toKey & (key > to.key));
        d[j] = chooseBits(tie | (pastFrom & beforeTo), d[j], 0.0f);
    }
}

ORGAN_VECTOR_CLONES void TensorMerger::combine(const Piece& piece, float* out) {
    const MergeMethod method = m_params.method;
    const std::size_t models = m_models.size();
    const bool consensus = usesSignConsensus(method);
    float sum[kBlock];
    float agreed[kBlock];
    float divisor[kBlock];
    for (std::size_t b = 0; b < piece.count; b += kBlock) {
        const std::size_t n = std::min(kBlock, piece.count - b);
        const std::size_t at = piece.offset + b;
        const float* base = m_inputs.base ? m_batch.base.data() + at : nullptr;
        float* o = out + b;
        if (method == MergeMethod::Slerp) {
            const float* x = m_batch.values[0].data() + at;
            for (std::size_t j = 0; j < n; ++j) {
                o[j] = m_coefficients[0] * base[j] + m_coefficients[1] * x[j];
            }
            continue;
        }
        std::fill_n(sum, n, 0.0f);
        for (std::size_t i = 0; i < models; ++i) {
            const float* x = m_batch.values[i].data() + at;
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
            // ties' sign consensus: the sign of the sum (0 counts as +) and the entries that share
            // it (a zero entry has no sign and never does).
            std::fill_n(agreed, n, 0.0f);
            std::fill_n(divisor, n, 0.0f);
            for (std::size_t i = 0; i < models; ++i) {
                const float* x = m_batch.values[i].data() + at;
                const float w = m_models[i].weight;
                for (std::size_t j = 0; j < n; ++j) {
                    // Never −0, these sums are unchanged by adding +0 where an entry disagrees.
                    const float v = w * x[j];
                    const bool positive = sum[j] >= 0;
                    const bool agrees = (positive & (v > 0)) | (!positive & (v < 0));
                    agreed[j] += chooseBits(agrees, v, 0.0f);
                    divisor[j] += chooseBits(agrees, w, 0.0f);
                }
            }
            if (m_params.normalize) {
                for (std::size_t j = 0; j < n; ++j) {
                    o[j] = base[j] + agreed[j] / chooseBits(divisor[j] == 0, 1.0f, divisor[j]);
                }
            } else {
                for (std::size_t j = 0; j < n; ++j) {
                    o[j] = base[j] + agreed[j];
                }
            }
        }
    }
}

void TensorMerger::next(std::size_t count, float* out) {
    const std::size_t models = m_models.size();
    const bool taskVectors = usesTaskVectors(m_params.method);
    const Sparsify sparsifying = sparsifyOf(m_params.method);
    const bool cuts = sparsifying == Sparsify::Magnitude || sparsifying == Sparsify::Breadcrumbs;
    while (count > 0) {
        const std::size_t c = std::min(kBatch, count);
        if (!cuts) {
            readBatch(m_position, c, taskVectors, [&](unsigned, const Piece& piece) {
                if (taskVectors) {
                    for (std::size_t i = 0; i < models; ++i) {
                        sparsify(i, piece, {});
                    }
                }
                combine(piece, out + piece.offset);
            });
        } else {
            // The elements at each cut's key, per piece and model, so that each piece knows how
            // many came before it.
            const std::size_t pieces = (c + kPiece - 1) / kPiece;
            std::vector<Ties> ties(pieces * models);
            readBatch(m_position, c, true, [&](unsigned, const Piece& piece) {
                for (std::size_t i = 0; i < models; ++i) {
                    const float* d = m_batch.values[i].data() + piece.offset;
                    std::array<std::uint64_t, 2>& counts = ties[piece.index * models + i].in;
                    const Cut* cutsOf[2] = {&m_models[i].from, &m_models[i].to};
                    for (std::size_t k = 0; k < 2; ++k) {
                        if (cutsOf[k]->kind != Cut::Kind::Key) {
                            continue;
                        }
                        const std::uint32_t cutKey = cutsOf[k]->key;
                        std::uint64_t n = 0;
                        for (std::size_t j = 0; j < piece.count; ++j) {
                            n += magnitudeKey(d[j]) == cutKey ? 1 : 0;
                        }
                        counts[k] = n;
                    }
                }
            });
            for (std::size_t i = 0; i < models; ++i) {
                std::array<std::uint64_t, 2> seen = {m_models[i].from.tiesSeen, m_models[i].to.tiesSeen};
                for (std::size_t p = 0; p < pieces; ++p) {
                    Ties& piece = ties[p * models + i];
                    piece.before = seen;
                    seen[0] += piece.in[0];
                    seen[1] += piece.in[1];
                }
                m_models[i].from.tiesSeen = seen[0];
                m_models[i].to.tiesSeen = seen[1];
            }
            forPieces(m_position, c, [&](unsigned, const Piece& piece) {
                for (std::size_t i = 0; i < models; ++i) {
                    sparsify(i, piece, ties[piece.index * models + i]);
                }
                combine(piece, out + piece.offset);
            });
        }
        if (m_inputs.done) {
            m_inputs.done(m_position, c);
        }
        m_position += c;
        out += c;
        count -= c;
    }
}

void TensorMerger::restart() {
    m_position = 0;
    for (ModelState& m : m_models) {
        m.from.tiesSeen = 0;
        m.to.tiesSeen = 0;
    }
}

std::vector<float> mergeTensorValues(const TensorMergeParams& params, const TensorMergeInputs& inputs) {
    TensorMerger merger(params, inputs);
    merger.prepare();
    std::vector<float> out(static_cast<std::size_t>(inputs.elements));
    merger.next(out.size(), out.data());
    return out;
}

} // namespace organ
