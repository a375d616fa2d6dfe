#include "measure/zmeasure.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <thread>

namespace organ {
namespace {

constexpr std::size_t kChunk = 1u << 20;       // values read at a time
constexpr std::size_t kBuckets = 1u << 16;     // coarse buckets: the high 16 bits of a float's key
constexpr std::size_t kBitmapWords = 1u << 10; // 65 536 bits: every key of one bucket
constexpr std::size_t kBucketsPerGroup = 2048; // 16 MiB of bitmaps per thread at most

// A float's bits, reordered so that keys sort as the values do.
std::uint32_t orderedKey(float v) {
    const auto u = std::bit_cast<std::uint32_t>(v);
    return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}

float keyValue(std::uint32_t key) {
    return std::bit_cast<float>((key & 0x80000000u) != 0 ? (key & 0x7FFFFFFFu) : ~key);
}

// Runs `visit(values, accumulator)` over every chunk of the source on up to `threads`
// threads, each with its own copy of `initial`; returns the copies for the caller to merge,
// or an empty vector when stopped.
template <typename Accum, typename Visit>
std::vector<Accum> overChunks(const ValueSource& source, unsigned threads, const StopToken* stop,
                              const Accum& initial, Visit visit) {
    const std::uint64_t n = source.size();
    const std::uint64_t chunks = (n + kChunk - 1) / kChunk;
    const unsigned workers =
        static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, chunks)));
    std::vector<Accum> accumulators(workers, initial);
    std::atomic<std::uint64_t> next{0};
    std::atomic<bool> stopped{false};
    auto work = [&](unsigned worker) {
        std::vector<float> buffer;
        for (std::uint64_t c = next++; c < chunks; c = next++) {
            if (stop != nullptr && stop->stopRequested()) {
                stopped = true;
                return;
            }
            const std::uint64_t begin = c * kChunk;
            buffer.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, n - begin)));
            source.read(begin, buffer);
            visit(std::span<const float>(buffer), accumulators[worker]);
        }
    };
    if (workers == 1) {
        work(0);
    } else {
        std::vector<std::jthread> pool;
        for (unsigned w = 0; w < workers; ++w) {
            pool.emplace_back(work, w);
        }
    }
    if (stopped) {
        return {};
    }
    return accumulators;
}

struct FirstPass {
    std::uint64_t count = 0;
    std::uint64_t nonFinite = 0;
    double min = std::numeric_limits<double>::infinity();
    double max = -std::numeric_limits<double>::infinity();
    double sum = 0;
    std::vector<std::uint64_t> buckets = std::vector<std::uint64_t>(kBuckets, 0);
};

// Where an order statistic lies: its coarse bucket and its rank inside it.
struct RankPosition {
    std::uint32_t bucket = 0;
    std::uint64_t rankInBucket = 0;
};

RankPosition locate(const std::vector<std::uint64_t>& buckets, std::uint64_t rank) {
    for (std::uint32_t b = 0; b < kBuckets; ++b) {
        if (rank < buckets[b]) {
            return {b, rank};
        }
        rank -= buckets[b];
    }
    return {};
}

// The second and later passes: moments, the 256-bin histogram, the two rank buckets in
// detail, and a bitmap of the distinct keys of a group of buckets.
struct LaterPass {
    double m2 = 0;
    double m4 = 0;
    std::array<std::uint64_t, 256> histogram{};
    std::vector<std::uint32_t> fineLow;
    std::vector<std::uint32_t> fineHigh;
    std::vector<std::uint64_t> bitmaps;
};

class CoherenceWalk {
public:
    CoherenceWalk(std::uint32_t low, std::uint32_t high) : m_low(low), m_high(high) {}
    // Visits the distinct keys of one bucket in ascending order.
    void visitBucket(std::uint32_t bucket, const std::uint64_t* bits) {
        for (std::size_t w = 0; w < kBitmapWords; ++w) {
            for (std::uint64_t word = bits[w]; word != 0; word &= word - 1) {
                const auto key = (bucket << 16) | static_cast<std::uint32_t>(w * 64 + std::countr_zero(word));
                if (key < m_low || key > m_high) {
                    continue;
                }
                const double value = keyValue(key);
                if (m_started) {
                    const double gap = value - m_previous;
                    m_sumSquares += gap * gap;
                }
                m_previous = value;
                m_started = true;
            }
        }
    }
    double sumOfSquaredGaps() const { return m_sumSquares; }

private:
    std::uint32_t m_low;
    std::uint32_t m_high;
    bool m_started = false;
    double m_previous = 0;
    double m_sumSquares = 0;
};

std::uint32_t keyAtRank(const std::vector<std::uint32_t>& fine, std::uint32_t bucket, std::uint64_t rank) {
    for (std::uint32_t low = 0; low < kBuckets; ++low) {
        if (rank < fine[low]) {
            return (bucket << 16) | low;
        }
        rank -= fine[low];
    }
    return bucket << 16;
}

// numpy.histogram's binning over [min, max] with 256 equal bins, edges from linspace.
class Binning {
public:
    Binning(double min, double max) : m_min(min), m_max(max), m_step((max - min) / 256.0) {}
    int bin(double x) const {
        int index = static_cast<int>((x - m_min) / (m_max - m_min) * 256.0);
        index = std::clamp(index, 0, 255);
        if (x < edge(index)) {
            --index;
        } else if (index != 255 && x >= edge(index + 1)) {
            ++index;
        }
        return std::clamp(index, 0, 255);
    }

private:
    double edge(int i) const { return i == 256 ? m_max : i * m_step + m_min; }
    double m_min;
    double m_max;
    double m_step;
};

} // namespace

void scoreResult(ZResult& r) {
    const double kPlus = std::max(*r.K, 0.0);
    r.sH = std::clamp((0.95 - *r.H) / 0.45, 0.0, 1.0);
    r.sK = kPlus / (kPlus + 3.0);
    r.sC = std::clamp((*r.C - 1.0) / 2.0, 0.0, 1.0);
    r.theta = 90.0 * (*r.sH + *r.sK + *r.sC) / 3.0;
    r.signal = std::sin(*r.theta * std::numbers::pi / 180.0);
}

std::optional<std::string> inconsistency(const ZResult& r, std::uint64_t elements) {
    auto finite = [](const std::optional<double>& v) { return !v || std::isfinite(*v); };
    if (r.N != elements || r.n > r.N || r.nonFinite > r.N) {
        return "counts that do not fit the tensor's " + std::to_string(elements) + " values";
    }
    for (const auto* v : {&r.H, &r.K, &r.C, &r.sH, &r.sK, &r.sC, &r.theta, &r.signal, &r.beta}) {
        if (!finite(*v)) {
            return std::string("a value that is not finite");
        }
    }
    // The spectrum takes at most 2^20 values: at most 20 levels.
    if (r.levelEnergies.size() > 20) {
        return std::string("more spectrum levels than 2^20 values have");
    }
    for (double e : r.levelEnergies) {
        if (!std::isfinite(e) || e < 0) {
            return std::string("a spectrum energy that is negative or not finite");
        }
    }
    if (r.constant && r.theta) {
        return std::string("θ for a constant tensor");
    }
    if (!r.theta) {
        return std::nullopt; // constant, or no finite values: nothing follows from H, K, C
    }
    if (!r.H || !r.K || !r.C || !r.sH || !r.sK || !r.sC || !r.signal) {
        return std::string("θ without all of its indicators");
    }
    // H is an entropy over 256 bins / 8; excess kurtosis is at least −2; C a ratio ≥ 0.
    if (*r.H < 0 || *r.H > 1 + 1e-12 || *r.K < -2 - 1e-9 || *r.C < 0) {
        return std::string("indicators out of their range (H, K or C)");
    }
    ZResult again = r;
    scoreResult(again);
    constexpr double kTolerance = 1e-9;
    for (const auto& [stored, computed] :
         {std::pair(r.sH, again.sH), std::pair(r.sK, again.sK), std::pair(r.sC, again.sC),
          std::pair(r.theta, again.theta), std::pair(r.signal, again.signal)}) {
        if (std::abs(*stored - *computed) > kTolerance * std::max(1.0, std::abs(*computed))) {
            return std::string("scores or θ that do not follow from H, K and C");
        }
    }
    return std::nullopt;
}

namespace {

// Fills H, K, C and the scores from statistics gathered by either strategy.
void finishIndicators(ZResult& result, const std::array<std::uint64_t, 256>& histogram, double m2Sum,
                      double m4Sum, std::uint64_t gaps, double meanGap, double sumOfSquaredGaps) {
    const auto n = static_cast<double>(result.n);
    double entropy = 0;
    for (std::uint64_t c : histogram) {
        if (c != 0) {
            const double p = static_cast<double>(c) / n;
            entropy -= p * std::log2(p);
        }
    }
    result.H = entropy / 8.0;
    const double m2 = m2Sum / n;
    const double m4 = m4Sum / n;
    result.K = m4 / (m2 * m2) - 3.0;
    if (gaps < 3 || meanGap == 0) {
        result.C = 0.0;
    } else {
        const double variance =
            std::max(0.0, sumOfSquaredGaps / static_cast<double>(gaps) - meanGap * meanGap);
        result.C = std::sqrt(variance) / meanGap;
    }
    scoreResult(result);
}

// The sample in memory: one read, statistics from the values, C from the sorted values
// exactly as the spec states it.
std::optional<ZResult> measureInMemory(const ValueSource& values, const StopToken* stop) {
    ZResult result;
    std::vector<float> sample(static_cast<std::size_t>(values.size()));
    for (std::uint64_t begin = 0; begin < sample.size(); begin += kChunk) {
        if (stop != nullptr && stop->stopRequested()) {
            return std::nullopt;
        }
        const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, sample.size() - begin));
        values.read(begin, std::span<float>(sample.data() + begin, count));
    }
    const auto finiteEnd =
        std::partition(sample.begin(), sample.end(), [](float v) { return std::isfinite(v); });
    result.nonFinite = static_cast<std::uint64_t>(sample.end() - finiteEnd);
    sample.erase(finiteEnd, sample.end());
    result.n = sample.size();
    if (sample.empty()) {
        return result;
    }
    std::sort(sample.begin(), sample.end());
    const double min = sample.front();
    const double max = sample.back();
    if (min == max) {
        result.constant = true;
        return result;
    }
    double sum = 0;
    for (float v : sample) {
        sum += v;
    }
    const double mean = sum / static_cast<double>(sample.size());
    double m2 = 0;
    double m4 = 0;
    std::array<std::uint64_t, 256> histogram{};
    const Binning binning(min, max);
    for (float v : sample) {
        const double d = v - mean;
        m2 += d * d;
        m4 += d * d * d * d;
        ++histogram[static_cast<std::size_t>(binning.bin(v))];
    }
    const std::size_t trim = sample.size() / 100;
    const std::size_t first = trim;
    const std::size_t last = sample.size() - trim - 1;
    double squares = 0;
    for (std::size_t i = first + 1; i <= last; ++i) {
        const double gap = static_cast<double>(sample[i]) - sample[i - 1];
        squares += gap * gap;
    }
    const std::uint64_t gaps = last - first;
    const double meanGap =
        gaps == 0 ? 0.0 : (static_cast<double>(sample[last]) - sample[first]) / static_cast<double>(gaps);
    finishIndicators(result, histogram, m2, m4, gaps, meanGap, squares);
    return result;
}

} // namespace

std::optional<ZResult> measureSample(const ValueSource& values, unsigned threads, const StopToken* stop,
                                     SampleStrategy strategy) {
    if (strategy == SampleStrategy::InMemory ||
        (strategy == SampleStrategy::Auto && values.size() <= kInMemorySample)) {
        return measureInMemory(values, stop);
    }
    ZResult result;
    auto first =
        overChunks(values, threads, stop, FirstPass{}, [](std::span<const float> chunk, FirstPass& a) {
            double sum = 0;
            for (float v : chunk) {
                if (!std::isfinite(v)) {
                    ++a.nonFinite;
                    continue;
                }
                ++a.count;
                sum += v;
                a.min = std::min<double>(a.min, v);
                a.max = std::max<double>(a.max, v);
                ++a.buckets[orderedKey(v) >> 16];
            }
            a.sum += sum;
        });
    if (first.empty()) {
        return std::nullopt;
    }
    FirstPass p1 = std::move(first.front());
    for (std::size_t i = 1; i < first.size(); ++i) {
        p1.count += first[i].count;
        p1.nonFinite += first[i].nonFinite;
        p1.min = std::min(p1.min, first[i].min);
        p1.max = std::max(p1.max, first[i].max);
        p1.sum += first[i].sum;
        for (std::size_t b = 0; b < kBuckets; ++b) {
            p1.buckets[b] += first[i].buckets[b];
        }
    }
    result.n = p1.count;
    result.nonFinite = p1.nonFinite;
    if (p1.count == 0 || p1.min == p1.max) {
        result.constant = p1.count != 0;
        return result;
    }

    const std::uint64_t n = p1.count;
    const double mean = p1.sum / static_cast<double>(n);
    const std::uint64_t trim = n / 100; // floor(0.01 n)
    const std::uint64_t lowRank = trim;
    const std::uint64_t highRank = n - trim - 1;
    const RankPosition low = locate(p1.buckets, lowRank);
    const RankPosition high = locate(p1.buckets, highRank);
    const Binning binning(p1.min, p1.max);

    // Buckets between the two order statistics that hold values, in groups.
    std::vector<std::uint32_t> occupied;
    for (std::uint32_t b = low.bucket; b <= high.bucket; ++b) {
        if (p1.buckets[b] != 0) {
            occupied.push_back(b);
        }
    }
    std::uint32_t lowKey = 0;
    std::uint32_t highKey = 0;
    CoherenceWalk walk(0, 0);
    LaterPass totals;
    for (std::size_t groupBegin = 0; groupBegin < occupied.size(); groupBegin += kBucketsPerGroup) {
        const bool firstGroup = groupBegin == 0;
        const std::size_t groupEnd = std::min(occupied.size(), groupBegin + kBucketsPerGroup);
        std::vector<std::int32_t> slot(kBuckets, -1);
        for (std::size_t i = groupBegin; i < groupEnd; ++i) {
            slot[occupied[i]] = static_cast<std::int32_t>(i - groupBegin);
        }
        LaterPass initial;
        initial.bitmaps.assign((groupEnd - groupBegin) * kBitmapWords, 0);
        if (firstGroup) {
            initial.fineLow.assign(kBuckets, 0);
            initial.fineHigh.assign(kBuckets, 0);
        }
        auto passes =
            overChunks(values, threads, stop, initial, [&](std::span<const float> chunk, LaterPass& a) {
                double m2 = 0;
                double m4 = 0;
                for (float v : chunk) {
                    if (!std::isfinite(v)) {
                        continue;
                    }
                    const std::uint32_t key = orderedKey(v);
                    const std::uint32_t bucket = key >> 16;
                    if (const std::int32_t s = slot[bucket]; s >= 0) {
                        const std::uint32_t bit = key & 0xFFFF;
                        a.bitmaps[static_cast<std::size_t>(s) * kBitmapWords + bit / 64] |= std::uint64_t(1)
                                                                                            << (bit % 64);
                    }
                    if (!firstGroup) {
                        continue;
                    }
                    const double d = v - mean;
                    const double d2 = d * d;
                    m2 += d2;
                    m4 += d2 * d2;
                    ++a.histogram[static_cast<std::size_t>(binning.bin(v))];
                    if (bucket == low.bucket) {
                        ++a.fineLow[key & 0xFFFF];
                    }
                    if (bucket == high.bucket) {
                        ++a.fineHigh[key & 0xFFFF];
                    }
                }
                a.m2 += m2;
                a.m4 += m4;
            });
        if (passes.empty()) {
            return std::nullopt;
        }
        LaterPass& merged = passes.front();
        for (std::size_t i = 1; i < passes.size(); ++i) {
            merged.m2 += passes[i].m2;
            merged.m4 += passes[i].m4;
            for (std::size_t b = 0; b < 256; ++b) {
                merged.histogram[b] += passes[i].histogram[b];
            }
            for (std::size_t w = 0; w < merged.bitmaps.size(); ++w) {
                merged.bitmaps[w] |= passes[i].bitmaps[w];
            }
            for (std::size_t k = 0; k < merged.fineLow.size(); ++k) {
                merged.fineLow[k] += passes[i].fineLow[k];
                merged.fineHigh[k] += passes[i].fineHigh[k];
            }
        }
        if (firstGroup) {
            lowKey = keyAtRank(merged.fineLow, low.bucket, low.rankInBucket);
            highKey = keyAtRank(merged.fineHigh, high.bucket, high.rankInBucket);
            walk = CoherenceWalk(lowKey, highKey);
            totals.m2 = merged.m2;
            totals.m4 = merged.m4;
            totals.histogram = merged.histogram;
        }
        for (std::size_t i = groupBegin; i < groupEnd; ++i) {
            walk.visitBucket(occupied[i], merged.bitmaps.data() + (i - groupBegin) * kBitmapWords);
        }
    }

    const std::uint64_t gaps = highRank - lowRank; // (n - 2 trim) values, one gap fewer
    const double meanGap =
        gaps == 0 ? 0.0
                  : (static_cast<double>(keyValue(highKey)) - keyValue(lowKey)) / static_cast<double>(gaps);
    finishIndicators(result, totals.histogram, totals.m2, totals.m4, gaps, meanGap, walk.sumOfSquaredGaps());
    return result;
}

void measureSpectrum(const ValueSource& leading, ZResult& result) {
    const std::uint64_t length = std::min<std::uint64_t>(leading.size(), std::uint64_t(1) << 20);
    if (length == 0) {
        return;
    }
    const std::uint64_t padded = std::bit_ceil(length);
    std::vector<float> raw(static_cast<std::size_t>(length));
    leading.read(0, raw);
    std::vector<double> a(static_cast<std::size_t>(padded), 0.0);
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (std::isfinite(raw[i])) {
            a[i] = raw[i];
        } else {
            ++result.spectrumNonFinite;
        }
    }
    const double root2 = std::numbers::sqrt2;
    std::size_t size = a.size();
    while (size / 2 >= 64) {
        const std::size_t half = size / 2;
        double energy = 0;
        for (std::size_t i = 0; i < half; ++i) {
            const double x = a[2 * i];
            const double y = a[2 * i + 1];
            const double detail = (x - y) / root2;
            energy += detail * detail;
            a[i] = (x + y) / root2;
        }
        result.levelEnergies.push_back(energy / static_cast<double>(half));
        size = half;
    }
    const std::size_t levels = result.levelEnergies.size();
    if (levels < 2 || std::any_of(result.levelEnergies.begin(), result.levelEnergies.end(),
                                  [](double e) { return !(e > 0) || !std::isfinite(e); })) {
        return;
    }
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::size_t j = 0; j < levels; ++j) {
        const double x = static_cast<double>(j + 1);
        const double y = std::log2(result.levelEnergies[j]);
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    const double count = static_cast<double>(levels);
    result.beta = (count * sxy - sx * sy) / (count * sxx - sx * sx);
}

std::optional<ZResult> measureTensor(TensorType type, std::span<const std::byte> data, std::uint64_t elements,
                                     const ZParams& params, unsigned threads, const StopToken* stop,
                                     std::shared_ptr<const MappedFile> mapping) {
    const std::uint64_t sample = params.sample == kSampleAll ? elements : params.sample;
    const TensorSampleSource sampled(type, data, elements, sample, mapping);
    auto result = measureSample(sampled, threads, stop);
    if (!result) {
        return std::nullopt;
    }
    result->N = elements;
    if (result->constant || !result->hasTheta()) {
        return result;
    }
    const TensorSampleSource all(type, data, elements, elements, mapping);
    measureSpectrum(all, *result);
    return result;
}

} // namespace organ
