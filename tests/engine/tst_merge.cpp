// The merge methods of ../shared/specs/merge-v1.md on small tensors, each against values the test
// computes on its own, in double, straight from the spec's formulas: linear, slerp (and its zero,
// colinear and NaN cases), task_arithmetic, ties (a tie at the density cut), dare_linear and
// dare_ties (masks from the documented generator, the same for a seed however the tensor is read),
// breadcrumbs, breadcrumbs_ties and model_stock; parameters as gradients over the blocks and as
// filtered values.
#include "merge/dare_mask.h"
#include "merge/merge_kernels.h"
#include "merge/merge_spec.h"
#include "merge/merged_source.h"
#include "merge/tensor_merger.h"
#include "quant/quantize.h"
#include "support/errors.h"
#include "support/instruction_set.h"

#include <QTest>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <qfloat16.h>
#include <random>
#include <set>
#include <thread>

using namespace organ;

namespace {

using Values = std::vector<float>;

ValueReader readerOf(const Values& values) {
    return [&values](std::uint64_t first, std::size_t count, float* out) {
        std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(first), count, out);
    };
}

TensorMergeInputs inputsOf(const Values* base, const std::vector<Values>& models) {
    TensorMergeInputs in;
    in.elements = models.front().size();
    if (base != nullptr) {
        in.base = readerOf(*base);
    }
    for (const Values& m : models) {
        in.models.push_back(readerOf(m));
    }
    return in;
}

TensorMergeParams paramsOf(MergeMethod method, std::vector<double> weights, double density = 1,
                           double gamma = 0.01) {
    TensorMergeParams p;
    p.method = method;
    p.normalize = normalizesByDefault(method);
    p.stream = "blk.0.attn_q.weight";
    for (const double w : weights) {
        p.models.push_back({w, density, gamma});
    }
    return p;
}

Values randomValues(std::size_t n, unsigned seed, double scale = 1.0) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0, scale);
    Values v(n);
    for (float& x : v) {
        x = static_cast<float>(normal(rng));
    }
    return v;
}

// n values from a small set (−levels … levels times scale), so that many magnitudes are equal.
Values coarseValues(std::mt19937& rng, std::size_t n, int levels, float scale) {
    Values v(n);
    for (float& x : v) {
        x = static_cast<float>(static_cast<int>(rng() % static_cast<unsigned>(2 * levels + 1)) - levels) *
            scale;
    }
    return v;
}

void compare(const Values& got, const std::vector<double>& want, double tolerance = 1e-5) {
    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        // The message made only for a failure: a million of them would take seconds.
        if (std::isnan(want[i])) {
            if (!std::isnan(got[i])) {
                QFAIL(qPrintable(QStringLiteral("element %1 is not NaN").arg(i)));
            }
            continue;
        }
        const double error = std::abs(double(got[i]) - want[i]);
        if (!(error <= tolerance * (1 + std::abs(want[i])))) {
            QFAIL(qPrintable(QStringLiteral("element %1: %2, expected %3").arg(i).arg(got[i]).arg(want[i])));
        }
    }
}

// ---- the spec's formulas, written again here in double ----

std::vector<double> deltaOf(const Values& x, const Values& b) {
    std::vector<double> d(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        d[i] = double(x[i]) - double(b[i]);
    }
    return d;
}

// The indices of `d` by |d| descending, equal magnitudes by lower index first.
std::vector<std::size_t> magnitudeOrder(const std::vector<double>& d) {
    std::vector<std::size_t> order(d.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return std::abs(d[a]) > std::abs(d[b]); });
    return order;
}

// Keeps the ranks [from, from + keep) of the order, zeroes the rest.
std::vector<double> keepRanks(const std::vector<double>& d, std::size_t from, std::size_t keep) {
    const auto order = magnitudeOrder(d);
    std::vector<double> out(d.size(), 0.0);
    for (std::size_t r = from; r < from + keep && r < d.size(); ++r) {
        out[order[r]] = d[order[r]];
    }
    return out;
}

std::vector<double> magnitudeSparse(const std::vector<double>& d, double density) {
    return keepRanks(d, 0, static_cast<std::size_t>(std::floor(density * double(d.size()))));
}

std::vector<double> breadcrumbSparse(const std::vector<double>& d, double density, double gamma) {
    const std::size_t n = d.size();
    const auto keep = static_cast<std::size_t>(std::floor(density * double(n)));
    const auto top = std::min(static_cast<std::size_t>(std::floor(gamma * double(n))), n - keep);
    return keepRanks(d, top, keep);
}

// The documented generator, from its description in merge/dare_mask.h and docs/merging.md.
std::uint64_t mixBits(std::uint64_t z) {
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
bool dareKeeps(std::uint64_t seed, const std::string& tensor, std::uint64_t model, std::uint64_t i,
               double density) {
    std::uint64_t h = 0xCBF29CE484222325ull;
    for (const unsigned char c : tensor) {
        h = (h ^ c) * 0x100000001B3ull;
    }
    const std::uint64_t key = mixBits(seed ^ mixBits(h) ^ mixBits(model + 1));
    const double u = double(mixBits(key + (i + 1) * 0x9E3779B97F4A7C15ull) >> 11) / 9007199254740992.0;
    return u < density;
}

std::vector<double> dareSparse(const std::vector<double>& d, double density, std::uint64_t seed,
                               const std::string& tensor, std::uint64_t model, bool rescale) {
    std::vector<double> out(d.size(), 0.0);
    double whole = 0;
    double kept = 0;
    for (std::size_t i = 0; i < d.size(); ++i) {
        whole += std::abs(d[i]);
        if (dareKeeps(seed, tensor, model, i, density)) {
            out[i] = d[i];
            kept += std::abs(d[i]);
        }
    }
    if (rescale && whole >= 1e-7 && kept >= 1e-7) {
        for (double& v : out) {
            v *= whole / kept;
        }
    }
    return out;
}

std::vector<double> refTaskArithmetic(const Values& b, const std::vector<std::vector<double>>& deltas,
                                      const std::vector<double>& w, bool normalize) {
    const double sum = std::accumulate(w.begin(), w.end(), 0.0);
    std::vector<double> y(b.size());
    for (std::size_t e = 0; e < b.size(); ++e) {
        double mixed = 0;
        for (std::size_t i = 0; i < deltas.size(); ++i) {
            mixed += w[i] * deltas[i][e];
        }
        y[e] = double(b[e]) + (normalize && std::abs(sum) >= 1e-8 ? mixed / sum : mixed);
    }
    return y;
}

std::vector<double> refSignConsensus(const Values& b, const std::vector<std::vector<double>>& deltas,
                                     const std::vector<double>& w, bool normalize) {
    std::vector<double> y(b.size());
    for (std::size_t e = 0; e < b.size(); ++e) {
        double total = 0;
        for (std::size_t i = 0; i < deltas.size(); ++i) {
            total += w[i] * deltas[i][e];
        }
        const int s = total >= 0 ? 1 : -1;
        double num = 0;
        double den = 0;
        for (std::size_t i = 0; i < deltas.size(); ++i) {
            const double v = w[i] * deltas[i][e];
            const int sign = v > 0 ? 1 : v < 0 ? -1 : 0;
            if (sign == s) {
                num += v;
                den += w[i];
            }
        }
        if (!normalize) {
            den = 1;
        }
        y[e] = double(b[e]) + num / (den == 0 ? 1 : den);
    }
    return y;
}

double norm(const Values& v) {
    double s = 0;
    for (const float x : v) {
        s += double(x) * double(x);
    }
    return std::sqrt(s);
}

std::vector<double> refSlerp(const Values& x0, const Values& x1, double t) {
    const double n0 = norm(x0) > 1e-8 ? norm(x0) : 1;
    const double n1 = norm(x1) > 1e-8 ? norm(x1) : 1;
    double d = 0;
    for (std::size_t i = 0; i < x0.size(); ++i) {
        d += (double(x0[i]) / n0) * (double(x1[i]) / n1);
    }
    std::vector<double> y(x0.size());
    for (std::size_t i = 0; i < x0.size(); ++i) {
        if (std::abs(d) > 0.9995) {
            y[i] = (1 - t) * x0[i] + t * x1[i];
        } else {
            const double theta = std::acos(d);
            y[i] = std::sin((1 - t) * theta) / std::sin(theta) * x0[i] +
                   std::sin(t * theta) / std::sin(theta) * x1[i];
        }
    }
    return y;
}

// model_stock: t = k·c / (1 + (k − 1)·c) from the mean cosine c of the task vectors' pairs,
// then t · (the models' mean) + (1 − t) · base.
std::vector<double> refModelStock(const Values& base, const std::vector<Values>& models) {
    std::vector<std::vector<double>> d;
    for (const Values& m : models) {
        d.push_back(deltaOf(m, base));
    }
    double cosines = 0;
    int pairs = 0;
    for (std::size_t i = 0; i < d.size(); ++i) {
        for (std::size_t j = i + 1; j < d.size(); ++j) {
            double dot = 0;
            double ni = 0;
            double nj = 0;
            for (std::size_t e = 0; e < base.size(); ++e) {
                dot += d[i][e] * d[j][e];
                ni += d[i][e] * d[i][e];
                nj += d[j][e] * d[j][e];
            }
            cosines += std::clamp(dot / std::max(std::sqrt(ni) * std::sqrt(nj), 1e-6), -1.0, 1.0);
            ++pairs;
        }
    }
    const double c = cosines / pairs;
    const double k = double(models.size());
    const double t = k * c / (1 + (k - 1) * c);
    std::vector<double> y(base.size());
    for (std::size_t e = 0; e < base.size(); ++e) {
        double mean = 0;
        for (const Values& m : models) {
            mean += double(m[e]) / k;
        }
        y[e] = t * mean + (1 - t) * base[e];
    }
    return y;
}

// What the spec gives for `p` on these inputs (linear reads no base), every method.
std::vector<double> reference(const TensorMergeParams& p, const Values& base,
                              const std::vector<Values>& models) {
    std::vector<double> w;
    for (const ModelTensorParams& m : p.models) {
        w.push_back(m.weight);
    }
    switch (p.method) {
    case MergeMethod::Linear: {
        const double sum = std::accumulate(w.begin(), w.end(), 0.0);
        std::vector<double> y(models.front().size(), 0.0);
        for (std::size_t e = 0; e < y.size(); ++e) {
            for (std::size_t i = 0; i < models.size(); ++i) {
                y[e] += w[i] * models[i][e];
            }
            y[e] /= p.normalize ? sum : 1.0;
        }
        return y;
    }
    case MergeMethod::Slerp:
        return refSlerp(base, models.front(), p.t);
    case MergeMethod::ModelStock:
        return refModelStock(base, models);
    default:
        break;
    }
    std::vector<std::vector<double>> d;
    for (std::size_t i = 0; i < models.size(); ++i) {
        const std::vector<double> delta = deltaOf(models[i], base);
        const ModelTensorParams& m = p.models[i];
        switch (sparsifyOf(p.method)) {
        case Sparsify::None:
            d.push_back(delta);
            break;
        case Sparsify::Magnitude:
            d.push_back(magnitudeSparse(delta, m.density));
            break;
        case Sparsify::Bernoulli:
            d.push_back(dareSparse(delta, m.density, p.seed, p.stream, i, p.rescale));
            break;
        case Sparsify::Breadcrumbs:
            d.push_back(breadcrumbSparse(delta, m.density, m.gamma));
            break;
        }
    }
    return usesSignConsensus(p.method) ? refSignConsensus(base, d, w, p.normalize)
                                       : refTaskArithmetic(base, d, w, p.normalize);
}

} // namespace

class TestMerge : public QObject {
    Q_OBJECT

private slots:
    void linear() {
        const auto a = randomValues(300, 1);
        const auto b = randomValues(300, 2);
        const auto c = randomValues(300, 3);
        const std::vector<double> w{0.5, 0.3, 0.7};
        for (const bool normalize : {true, false}) {
            auto p = paramsOf(MergeMethod::Linear, w);
            p.normalize = normalize;
            std::vector<double> want(a.size());
            for (std::size_t i = 0; i < a.size(); ++i) {
                want[i] = (w[0] * a[i] + w[1] * b[i] + w[2] * c[i]) / (normalize ? 1.5 : 1.0);
            }
            compare(mergeTensorValues(p, inputsOf(nullptr, {a, b, c})), want);
        }
    }

    void slerp_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<double>("t");
        QTest::newRow("apart, t 0.3") << 0 << 0.3;
        QTest::newRow("apart, t 0.8") << 0 << 0.8;
        QTest::newRow("base zero") << 1 << 0.4;
        QTest::newRow("model zero") << 2 << 0.4;
        QTest::newRow("colinear") << 3 << 0.25;
        QTest::newRow("opposite") << 4 << 0.25;
        QTest::newRow("NaN") << 5 << 0.5;
        QTest::newRow("base of norm 1e-9") << 6 << 0.4;
    }
    void slerp() {
        QFETCH(int, kind);
        QFETCH(double, t);
        Values x0 = randomValues(257, 4);
        Values x1 = randomValues(257, 5);
        if (kind == 1) {
            std::fill(x0.begin(), x0.end(), 0.0f);
        } else if (kind == 2) {
            std::fill(x1.begin(), x1.end(), 0.0f);
        } else if (kind == 3 || kind == 4) {
            for (std::size_t i = 0; i < x0.size(); ++i) {
                x1[i] = (kind == 3 ? 2.5f : -0.5f) * x0[i];
            }
        } else if (kind == 5) {
            x1[17] = std::numeric_limits<float>::quiet_NaN();
        } else if (kind == 6) { // under the spec's 1e-8: not divided by its norm
            std::fill(x0.begin(), x0.end(), 0.0f);
            x0[0] = 1e-9f;
        }
        auto p = paramsOf(MergeMethod::Slerp, {1.0});
        p.t = t;
        const Values got = mergeTensorValues(p, inputsOf(&x0, {x1}));
        const std::vector<double> want = refSlerp(x0, x1, t);
        compare(got, want);
        if (kind == 1) { // the zero vector stays as it is: d = 0, θ = π/2
            QCOMPARE(got[3], static_cast<float>(std::sin(t * M_PI / 2) * x1[3]));
        }
        if (kind == 3) { // colinear: lerp
            QCOMPARE(got[9], static_cast<float>((1 - t) * x0[9] + t * x1[9]));
        }
        if (kind == 5) { // as the formula says: d is NaN, and so is every value
            QVERIFY(std::all_of(got.begin(), got.end(), [](float v) { return std::isnan(v); }));
        }
    }

    void taskArithmetic_data() {
        QTest::addColumn<bool>("normalize");
        QTest::addColumn<double>("second");
        QTest::newRow("plain") << false << 0.6;
        QTest::newRow("normalized") << true << 0.6;
        QTest::newRow("weights summing to 0 are not divided") << true << -0.4;
    }
    void taskArithmetic() {
        QFETCH(bool, normalize);
        QFETCH(double, second);
        const auto base = randomValues(500, 6);
        const auto a = randomValues(500, 7);
        const auto b = randomValues(500, 8);
        auto p = paramsOf(MergeMethod::TaskArithmetic, {0.4, second});
        QVERIFY(!p.normalize); // the default
        p.normalize = normalize;
        compare(mergeTensorValues(p, inputsOf(&base, {a, b})),
                refTaskArithmetic(base, {deltaOf(a, base), deltaOf(b, base)}, {0.4, second}, normalize));
    }

    void ties() {
        const auto base = randomValues(1000, 9);
        const auto a = randomValues(1000, 10);
        const auto b = randomValues(1000, 11);
        const auto c = randomValues(1000, 12);
        for (const double density : {1.0, 0.5, 0.137, 0.0}) {
            for (const bool normalize : {true, false}) {
                const std::vector<double> w{0.5, 1.2, -0.3};
                auto p = paramsOf(MergeMethod::Ties, w, density);
                QVERIFY(p.normalize); // the default
                p.normalize = normalize;
                std::vector<std::vector<double>> d;
                for (const Values* m : {&a, &b, &c}) {
                    d.push_back(magnitudeSparse(deltaOf(*m, base), density));
                }
                compare(mergeTensorValues(p, inputsOf(&base, {a, b, c})),
                        refSignConsensus(base, d, w, normalize));
            }
        }
    }

    // Equal magnitudes straddle the cut: ⌊0.5 · 10⌋ = 5 kept, the three 2s at ranks 3, 4 and 5 —
    // the two of lower index are kept, the third is not. A zero sum counts as +, and a zero entry
    // never agrees with the sign.
    void tiesTieAtTheCut() {
        const Values base(10, 1.0f);
        const Values a{4, 3, 1 + 2, 1, 1 - 2, 1, 3, 1 + 0.5f, 1 + 2, 1};
        const Values b{1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        auto p = paramsOf(MergeMethod::Ties, {1.0, 1.0}, 0.5);
        const Values got = mergeTensorValues(p, inputsOf(&base, {a, b}));
        // δa = 3 2 2 0 −2 0 2 0.5 2 0 (|δ| ranks: 3; then the 2s at 1, 2, 4, 6, 8): kept 0, 1, 2, 4, 6.
        const Values want{4, 3, 3, 1, -1, 1, 3, 1, 1, 1};
        QCOMPARE(got, want);
        // The same entries, each model a half: a sum of 0 counts as +, so the −1 loses.
        const Values plus{1, 1, 2, 1, 1, 1, 1, 1, 1, 1};
        const Values minus{1, 1, 0, 1, 1, 1, 1, 1, 1, 1};
        const Values tie =
            mergeTensorValues(paramsOf(MergeMethod::Ties, {1.0, 1.0}), inputsOf(&base, {plus, minus}));
        QCOMPARE(tie[2], 2.0f);
    }

    // Ties of magnitude across the pieces the merger's threads take (64 Ki values; one batch):
    // values from a small set, so that the cut falls inside a run of equal magnitudes spread over
    // every piece. Several batches: cutsInOneOrFourPasses, threadsAndPieces.
    void tiesAcrossChunks() {
        const std::size_t n = 700001;
        Values base(n, 0.0f);
        Values a(n);
        std::mt19937 rng(13);
        for (float& v : a) {
            v = static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.25f;
        }
        auto p = paramsOf(MergeMethod::Ties, {1.0}, 0.3);
        const Values got = mergeTensorValues(p, inputsOf(&base, {a}));
        std::vector<std::vector<double>> d{magnitudeSparse(deltaOf(a, base), 0.3)};
        compare(got, refSignConsensus(base, d, {1.0}, true));
        // Read in pieces of odd sizes, the same values.
        const std::vector<Values> models{a};
        TensorMerger merger(p, inputsOf(&base, models));
        QVERIFY(merger.prepare());
        Values pieces(n);
        for (std::size_t at = 0; at < n;) {
            const std::size_t count = std::min<std::size_t>(n - at, 99991);
            merger.next(count, pieces.data() + at);
            at += count;
        }
        QCOMPARE(pieces, got);
        merger.restart();
        Values again(n);
        merger.next(n, again.data());
        QCOMPARE(again, got);
    }

    // The writer's stream of a merged tensor encodes pieces of whole rows on the threads that merged
    // them: its bytes are those of the tensor merged whole and encoded row by row, each expert with
    // its own importance weights, read in odd chunks as a writer reads, and again from an earlier
    // byte (rows of 5 120 values, which do not divide a piece; experts of more rows than one batch;
    // a weighted K-quant).
    void streamedAsWhole() {
        constexpr std::uint64_t kColumns = 5120;
        constexpr std::uint64_t kRows = 230;
        constexpr std::uint64_t kExperts = 2;
        const std::size_t n = kColumns * kRows * kExperts;
        std::mt19937 rng(17);
        std::normal_distribution<float> normal(0.0f, 0.02f);
        std::vector<std::vector<float>> inputs(3, std::vector<float>(n));
        for (std::size_t i = 0; i < n; ++i) {
            inputs[0][i] = normal(rng);
            inputs[1][i] = inputs[0][i] + 0.1f * normal(rng);
            inputs[2][i] = inputs[0][i] + 0.1f * normal(rng);
        }
        auto inputOf = [](const std::vector<float>& values) {
            MergeInput input;
            input.source.bytes = std::as_bytes(std::span(values));
            input.type = TensorType::F32;
            return input;
        };
        MergedTensor t;
        t.name = "blk.0.ffn_up_exps.weight";
        t.params = paramsOf(MergeMethod::Ties, {0.7, 0.5}, 0.4);
        t.base = inputOf(inputs[0]);
        t.models = {inputOf(inputs[1]), inputOf(inputs[2])};
        t.ne = {kColumns, kRows, kExperts, 1};
        t.target = TensorType::Q4_K;
        t.importance.resize(kColumns * kExperts);
        for (float& w : t.importance) {
            w = 0.1f + std::abs(normal(rng)) * 100;
        }
        const std::vector<float> merged = mergedValues(t);
        const std::size_t rowBytes = storedBytes(t.target, kColumns);
        std::vector<std::byte> want(rowBytes * kRows * kExperts);
        for (std::uint64_t e = 0; e < kExperts; ++e) {
            quantizeRows(t.target, merged.data() + e * kRows * kColumns, kRows, kColumns,
                         t.importance.data() + e * kColumns, want.data() + e * kRows * rowBytes);
        }
        const TensorSource source = mergedSource(t, MergedReading::Once);
        // Chunks of 100 003 bytes: rows (2 880 bytes) and batches (204 rows, or an expert's last
        // 26) are cut anywhere, so most reads start inside a batch made by the read before.
        std::vector<std::byte> got(want.size());
        auto readFrom = [&](std::size_t from, std::size_t to) {
            for (std::size_t at = from; at < to;) {
                const std::size_t count = std::min<std::size_t>(to - at, 100003);
                source.generate(at, std::span(got).subspan(at, count));
                at += count;
            }
        };
        readFrom(0, 900000);
        QVERIFY(std::equal(got.begin(), got.begin() + 900000, want.begin()));
        // A read that goes back (into the first batch, from the second): the merge starts again.
        std::fill(got.begin(), got.end(), std::byte{0x5A});
        readFrom(123457, got.size());
        QVERIFY(std::equal(got.begin() + 123457, got.end(), want.begin() + 123457));
        // Read to its end, the stream starts again from nothing.
        readFrom(0, got.size());
        QVERIFY(got == want);
    }

    // Every method over more values than one batch (1 Mi) of the merger's pieces (64 Ki), on 1, 2,
    // 3 and 8 threads: the same values whatever the threads, and as the reference computes them
    // (the magnitude cuts' ties run through every piece: values from a small set). Every pass
    // over the inputs reports each batch done once, in order.
    void threadsAndPieces_data() {
        QTest::addColumn<int>("method");
        for (const MergeMethod m :
             {MergeMethod::Linear, MergeMethod::Slerp, MergeMethod::TaskArithmetic, MergeMethod::Ties,
              MergeMethod::DareLinear, MergeMethod::DareTies, MergeMethod::Breadcrumbs,
              MergeMethod::BreadcrumbsTies, MergeMethod::ModelStock}) {
            QTest::newRow(std::string(mergeMethodName(m)).c_str()) << static_cast<int>(m);
        }
    }
    void threadsAndPieces() {
        QFETCH(int, method);
        const auto m = static_cast<MergeMethod>(method);
        const std::size_t n = (1u << 20) + 300007;
        std::mt19937 rng(31);
        const Values base = coarseValues(rng, n, 8, 0.125f);
        const std::vector<Values> models{coarseValues(rng, n, 8, 0.25f), coarseValues(rng, n, 8, 0.5f)};
        // No two weighted task vectors cancel exactly (they would in double, not in F32).
        const std::vector<double> w{0.7, 0.41};
        auto p = paramsOf(m, m == MergeMethod::Slerp ? std::vector<double>{1.0} : w, 0.45, 0.05);
        p.seed = 99;
        p.t = 0.3;
        const std::vector<Values> used =
            m == MergeMethod::Slerp ? std::vector<Values>{models.front()} : models;
        Values first;
        for (const unsigned threads : {1u, 2u, 3u, 8u}) {
            TensorMergeInputs in = inputsOf(m == MergeMethod::Linear ? nullptr : &base, used);
            std::vector<std::pair<std::uint64_t, std::uint64_t>> done;
            in.done = [&done](std::uint64_t at, std::uint64_t count) { done.emplace_back(at, count); };
            TensorMerger merger(p, std::move(in));
            merger.setThreads(threads);
            QVERIFY(merger.prepare());
            Values got(n);
            // Read in odd counts, as a writer of rows would.
            for (std::size_t at = 0; at < n;) {
                const std::size_t count = std::min<std::size_t>(n - at, 700001);
                merger.next(count, got.data() + at);
                at += count;
            }
            std::uint64_t expected = 0;
            for (const auto& [at, count] : done) {
                QCOMPARE(at, expected % n);
                expected += count;
            }
            QVERIFY(expected % n == 0 && expected >= n);
            if (threads == 1) {
                first = got;
            } else {
                QVERIFY2(got == first, qPrintable(QStringLiteral("%1 threads").arg(threads)));
            }
        }
        // The merge pass uses every thread asked for, past the 8 that the passes before it keep
        // histograms for: the same values on 12, and 12 threads at work on the first batch (16
        // pieces; the threads of later batches are not counted, their ids may be new or reused).
        {
            TensorMerger merger(p, inputsOf(m == MergeMethod::Linear ? nullptr : &base, used));
            merger.setThreads(12);
            QVERIFY(merger.prepare());
            Values got(n);
            std::set<std::thread::id> ids;
            std::mutex mutex;
            merger.next(n, std::size_t{1} << 16, [&](std::uint64_t from, std::size_t c, const float* values) {
                const std::lock_guard lock(mutex);
                if (from < (std::uint64_t{1} << 20)) {
                    ids.insert(std::this_thread::get_id());
                }
                std::copy_n(values, c, got.begin() + static_cast<std::ptrdiff_t>(from));
            });
            QCOMPARE(ids.size(), std::size_t{12});
            QVERIFY(got == first);
        }
        // Handed over in pieces (the writer's: whole rows of 5 120 or 2 048 values; a tiny piece),
        // on 3 threads: the same values, each once, every piece whole but a call's last.
        for (const std::size_t pieceValues : {std::size_t{3 * 5120}, std::size_t{1} << 16, std::size_t{37}}) {
            for (const unsigned threads : {3u}) {
                TensorMerger merger(p, inputsOf(m == MergeMethod::Linear ? nullptr : &base, used));
                merger.setThreads(threads);
                QVERIFY(merger.prepare());
                Values got(n, std::numeric_limits<float>::quiet_NaN());
                std::vector<int> seen(n, 0);
                std::mutex mutex;
                bool whole = true; // each piece within its call, whole but the call's last
                const std::size_t step = pieceValues == 37 ? 100003 : 700001;
                for (std::size_t at = 0; at < n;) {
                    const std::size_t count = std::min<std::size_t>(n - at, step);
                    merger.next(count, pieceValues,
                                [&](std::uint64_t from, std::size_t c, const float* values) {
                                    const std::lock_guard lock(mutex);
                                    whole = whole && from >= at && from + c <= at + count &&
                                            (c == pieceValues || from + c == at + count) &&
                                            (from - at) % pieceValues == 0;
                                    std::copy_n(values, c, got.begin() + static_cast<std::ptrdiff_t>(from));
                                    for (std::size_t j = 0; j < c; ++j) {
                                        ++seen[from + j];
                                    }
                                });
                    at += count;
                }
                QVERIFY(whole);
                QVERIFY(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
                QVERIFY2(
                    got == first,
                    qPrintable(QStringLiteral("pieces of %1 on %2 threads").arg(pieceValues).arg(threads)));
            }
        }
        // As the reference has it: the whole-tensor sums (slerp's norms and dot product, model_stock's
        // dot products, DARE's L1 norms) and the cuts gathered over every batch and piece, the DARE
        // masks drawn at each value's index in the tensor.
        compare(first, reference(p, base, used));
    }

    // The magnitude cuts (and the index where the ties at each cut stop ranking before it) are
    // found in one pass over the inputs when the first batch foretells where they fall (values
    // spread alike throughout), and in three more when it does not (a first batch of far smaller
    // task vectors): the same values either way, as the reference has them. Counted by the batches
    // the inputs report done: the merge's own pass is one more.
    void cutsInOneOrFourPasses_data() {
        QTest::addColumn<float>("firstBatchScale");
        QTest::addColumn<int>("passes");
        QTest::newRow("foretold") << 1.0f << 2;
        QTest::newRow("misled") << 1.0f / 1024 << 5;
    }
    void cutsInOneOrFourPasses() {
        QFETCH(float, firstBatchScale);
        QFETCH(int, passes);
        const std::size_t n = 3 * (1u << 20) + 4099;
        std::mt19937 rng(17);
        Values base(n);
        std::vector<Values> models(2, Values(n));
        for (std::size_t i = 0; i < n; ++i) {
            // Binary fractions, so that each task vector is the same in F32 and in the reference's double.
            base[i] = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 1024;
            const float scale = i < (1u << 20) ? firstBatchScale : 1.0f;
            for (Values& m : models) {
                m[i] = base[i] + scale * static_cast<float>(static_cast<int>(rng() % 20001) - 10000) / 16384;
            }
        }
        const std::vector<double> w{1.0, 0.6};
        auto p = paramsOf(MergeMethod::Ties, w, 0.3);
        TensorMergeInputs in = inputsOf(&base, models);
        std::uint64_t done = 0;
        in.done = [&done](std::uint64_t, std::uint64_t count) { done += count; };
        TensorMerger merger(p, std::move(in));
        merger.setThreads(2);
        QVERIFY(merger.prepare());
        Values got(n);
        merger.next(n, got.data());
        QCOMPARE(done, static_cast<std::uint64_t>(passes) * n);
        std::vector<std::vector<double>> d;
        for (const Values& m : models) {
            d.push_back(magnitudeSparse(deltaOf(m, base), 0.3));
        }
        compare(got, refSignConsensus(base, d, w, p.normalize));
    }

    // The cuts' working memory is lent from one merger to the next: merges one after the other with
    // other thread counts (up and down), other model counts (one model with no cut), a first batch
    // that misleads the forecast, other methods, after a merge stopped half-way and one whose reader
    // throws, and two at once on two threads: each as the reference has it, and a forecast as good
    // as a first merge's (the cuts found in one pass when the first batch foretells them).
    void cutsOnLentWorkingMemory() {
        const std::size_t n = 2 * (1u << 20) + 4099;
        std::mt19937 rng(23);
        // Binary fractions, so that each task vector is the same in F32 and in the reference's double.
        auto inputs = [&](std::size_t models, float firstBatchScale) {
            std::vector<Values> v(models + 1, Values(n));
            for (std::size_t i = 0; i < n; ++i) {
                v[0][i] = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 1024;
                const float scale = i < (1u << 20) ? firstBatchScale : 1.0f;
                for (std::size_t m = 1; m <= models; ++m) {
                    v[m][i] =
                        v[0][i] + scale * static_cast<float>(static_cast<int>(rng() % 20001) - 10000) / 16384;
                }
            }
            return v;
        };
        struct Case {
            MergeMethod method;
            std::vector<double> weights;
            std::vector<double> densities;
            unsigned threads;
            float firstBatchScale;
        };
        // Weights of a few binary digits: the weighted sums, and so the signs elected, are exact in
        // F32 as in the reference's double.
        const std::vector<Case> cases{
            {MergeMethod::Ties, {1.0, 0.5, 0.75}, {0.3, 1.0, 0.5}, 8, 1.0f},
            {MergeMethod::Ties, {1.0, 0.625}, {0.4, 0.2}, 2, 1.0f / 1024},
            {MergeMethod::Breadcrumbs, {0.875}, {0.5}, 3, 1.0f},
            {MergeMethod::Ties, {1.0, 0.5}, {0.3, 0.3}, 1, 1.0f},
            {MergeMethod::BreadcrumbsTies, {1.0, 0.5, 0.75, 0.25}, {0.6, 0.4, 0.5, 0.3}, 8, 1.0f / 1024},
            {MergeMethod::Ties, {1.0, 0.375}, {0.3, 0.45}, 2, 1.0f},
        };
        auto paramsFor = [](const Case& c) {
            TensorMergeParams p = paramsOf(c.method, c.weights, 1.0, 0.05);
            for (std::size_t i = 0; i < c.densities.size(); ++i) {
                p.models[i].density = c.densities[i];
            }
            return p;
        };
        // Merges the case as the reference has it; the values its inputs reported done.
        auto check = [&](const Case& c, const std::vector<Values>& v) {
            const std::vector<Values> models(v.begin() + 1, v.end());
            TensorMergeInputs in = inputsOf(&v[0], models);
            std::uint64_t done = 0;
            in.done = [&done](std::uint64_t, std::uint64_t count) { done += count; };
            const TensorMergeParams p = paramsFor(c);
            TensorMerger merger(p, std::move(in));
            merger.setThreads(c.threads);
            if (!merger.prepare()) {
                return std::uint64_t{0};
            }
            Values got(n);
            merger.next(n, got.data());
            compare(got, reference(p, v[0], models));
            return done;
        };
        for (std::size_t k = 0; k < cases.size(); ++k) {
            const Case& c = cases[k];
            const std::vector<Values> v = inputs(c.weights.size(), c.firstBatchScale);
            if (k == cases.size() - 1) {
                // After a merge stopped in its first pass and one whose reader throws.
                StopToken stop;
                const std::vector<Values> models(v.begin() + 1, v.end()); // the readers' values
                TensorMergeInputs in = inputsOf(&v[0], models);
                in.done = [&stop](std::uint64_t, std::uint64_t) { stop.requestStop(); };
                TensorMerger stopped(paramsFor(c), std::move(in));
                stopped.setThreads(8);
                QVERIFY(!stopped.prepare(&stop));
                TensorMergeInputs failing = inputsOf(&v[0], models);
                failing.models[1] = [](std::uint64_t first, std::size_t, float*) {
                    if (first >= (1u << 20)) {
                        throw FormatError("a reader that fails half-way");
                    }
                };
                TensorMerger thrown(paramsFor(c), std::move(failing));
                thrown.setThreads(8);
                QVERIFY_THROWS_EXCEPTION(FormatError, thrown.prepare());
            }
            const std::uint64_t done = check(c, v);
            if (QTest::currentTestFailed()) {
                QFAIL(qPrintable(QStringLiteral("case %1").arg(k)));
            }
            // The cuts' own pass and the merge's, or three more passes for a misled forecast.
            QCOMPARE(done, static_cast<std::uint64_t>(c.firstBatchScale == 1.0f ? 2 : 5) * n);
        }
        // Two merges preparing at once, each with its own working memory.
        const std::vector<Values> a = inputs(2, 1.0f);
        const std::vector<Values> b = inputs(3, 1.0f / 1024);
        std::uint64_t doneA = 0;
        std::uint64_t doneB = 0;
        {
            std::jthread other([&] { doneB = check(cases[0], b); });
            doneA = check(cases[3], a);
        }
        QCOMPARE(doneA, 2 * static_cast<std::uint64_t>(n));
        QCOMPARE(doneB, 5 * static_cast<std::uint64_t>(n));
    }

    // The kernels of ties (merge_kernels.h) on every instruction set this CPU runs give the portable
    // kernels' bits: counts not a multiple of any vector width, keys equal to a limit, zeros of
    // either sign, NaN and infinities, a window's edges, normalized or not.
    void kernelsOfEveryInstructionSetAgree() {
        std::mt19937 rng(41);
        const std::size_t longest = 2053;
        // Many keys equal a limit and many deltas are ±0.
        const Values base = coarseValues(rng, longest, 4, 0.25f);
        std::vector<Values> models;
        for (const float scale : {0.5f, 0.25f, 0.75f, 0.5f, 1.0f}) {
            models.push_back(coarseValues(rng, longest, 4, scale));
        }
        models[0][5] = std::numeric_limits<float>::quiet_NaN();
        models[1][17] = std::numeric_limits<float>::infinity();
        models[2][33] = -std::numeric_limits<float>::infinity();
        const std::uint32_t key = detail::magnitudeKey(0.5f);
        const std::vector<std::pair<std::uint32_t, std::uint32_t>> limits{
            {key, 0x80000000u},         {0, key}, {key, key + 1}, {0, 0x80000000u},
            {0x80000000u, 0x80000000u}, {0, 0}};
        const std::vector<std::vector<float>> weightSets{{1.0f, 1.0f, 1.0f, 1.0f, 1.0f},
                                                         {0.5f, 2.0f, 0.25f, 1.0f, 4.0f},
                                                         {0.7f, -1.3f, 0.41f, 1.0f, 0.2f}};
        const auto& sets = supportedInstructionSets();
        if (sets.size() < 2) {
            QSKIP("this CPU runs the portable kernels alone: nothing to compare them with");
        }
        for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{15},
                                    std::size_t{16}, std::size_t{17}, std::size_t{33}, longest}) {
            for (std::size_t count = 1; count <= models.size(); ++count) {
                for (const std::vector<float>& weights : weightSets) {
                    for (const bool normalize : {false, true}) {
                        std::vector<detail::ConsensusInput> inputs;
                        for (std::size_t i = 0; i < count; ++i) {
                            const auto& [low, high] = limits[(i + n) % limits.size()];
                            inputs.push_back({models[i].data(), weights[i], low, high});
                        }
                        Values portable(n + 1, 7.0f);
                        useInstructionSet("portable");
                        detail::mergeKernels().signConsensus(inputs.data(), count, base.data(), n, normalize,
                                                             portable.data());
                        for (const InstructionSet set : sets) {
                            useInstructionSet(instructionSetName(set));
                            Values out(n + 1, 7.0f);
                            detail::mergeKernels().signConsensus(inputs.data(), count, base.data(), n,
                                                                 normalize, out.data());
                            QVERIFY2(std::memcmp(out.data(), portable.data(), out.size() * sizeof(float)) ==
                                         0,
                                     qPrintable(QStringLiteral("consensus of %1 over %2 on %3")
                                                    .arg(count)
                                                    .arg(n)
                                                    .arg(QString::fromLatin1(instructionSetName(set)))));
                        }
                    }
                }
            }
            const std::uint32_t bucket = key >> 16;
            for (const auto& [low, high] :
                 std::vector<std::pair<std::uint32_t, std::uint32_t>>{{bucket, bucket},
                                                                      {0, bucket},
                                                                      {bucket, 0x7FFF},
                                                                      {0, 0xFFFF},
                                                                      {bucket + 1, bucket + 100}}) {
                for (const float* withBase : {base.data(), static_cast<const float*>(nullptr)}) {
                    useInstructionSet("portable");
                    std::vector<std::uint32_t> portable(n + 16);
                    std::uint64_t portableAbove = 5;
                    const std::size_t kept = detail::mergeKernels().gatherWindow(
                        models[0].data(), withBase, n, low, high, portable.data(), portableAbove);
                    portable.resize(kept);
                    for (const InstructionSet set : sets) {
                        useInstructionSet(instructionSetName(set));
                        std::vector<std::uint32_t> out(n + 16);
                        std::uint64_t above = 5;
                        out.resize(detail::mergeKernels().gatherWindow(models[0].data(), withBase, n, low,
                                                                       high, out.data(), above));
                        const QString where = QStringLiteral("window %1–%2 over %3 on %4")
                                                  .arg(low)
                                                  .arg(high)
                                                  .arg(n)
                                                  .arg(QString::fromLatin1(instructionSetName(set)));
                        QVERIFY2(out == portable, qPrintable(where));
                        QVERIFY2(above == portableAbove, qPrintable(where));
                    }
                }
            }
        }
        useInstructionSet(instructionSetName(sets.front()));
    }

    // The merger itself on every instruction set: the same values, found in as many passes (a
    // window that gathered the wrong keys would take the three passes after the first).
    void tiesOnEveryInstructionSet_data() {
        QTest::addColumn<int>("method");
        QTest::addColumn<double>("weight");
        QTest::newRow("ties") << static_cast<int>(MergeMethod::Ties) << 1.0;
        QTest::newRow("ties, a weight of 0.7") << static_cast<int>(MergeMethod::Ties) << 0.7;
        QTest::newRow("breadcrumbs_ties") << static_cast<int>(MergeMethod::BreadcrumbsTies) << 1.0;
    }
    void tiesOnEveryInstructionSet() {
        QFETCH(int, method);
        QFETCH(double, weight);
        const std::size_t n = 2 * (1u << 20) + 1237;
        std::mt19937 rng(43);
        const Values base = coarseValues(rng, n, 16, 0.125f);
        const std::vector<Values> models{coarseValues(rng, n, 16, 0.25f), coarseValues(rng, n, 16, 0.5f),
                                         coarseValues(rng, n, 16, 0.375f)};
        auto p = paramsOf(static_cast<MergeMethod>(method), {weight, 1.0, 0.5}, 0.45, 0.05);
        Values first;
        std::uint64_t firstDone = 0;
        const auto& sets = supportedInstructionSets();
        for (const char* name : {"portable", "avx2", "avx512", "avx512vnni"}) {
            const auto set = std::find_if(sets.begin(), sets.end(),
                                          [&](InstructionSet s) { return instructionSetName(s) == name; });
            if (set == sets.end()) {
                continue;
            }
            useInstructionSet(name);
            TensorMergeInputs in = inputsOf(&base, models);
            std::uint64_t done = 0;
            in.done = [&done](std::uint64_t, std::uint64_t count) { done += count; };
            TensorMerger merger(p, std::move(in));
            QVERIFY(merger.prepare());
            Values got(n);
            merger.next(n, got.data());
            if (first.empty()) {
                first = got;
                firstDone = done;
                continue;
            }
            QVERIFY2(std::memcmp(got.data(), first.data(), n * sizeof(float)) == 0, name);
            QCOMPARE(done, firstDone);
            qInfo("%s: the portable kernels' values, in as many passes", name);
        }
        QCOMPARE(firstDone, 2 * std::uint64_t{n}); // one pass to find the cuts, one to merge
        useInstructionSet(instructionSetName(sets.front()));
    }

    void dare_data() {
        QTest::addColumn<bool>("consensus");
        QTest::addColumn<bool>("rescale");
        QTest::addColumn<bool>("normalize");
        QTest::addColumn<bool>("sameAsBase");
        QTest::newRow("dare_linear") << false << true << false << false;
        QTest::newRow("dare_linear without rescale") << false << false << false << false;
        QTest::newRow("dare_linear, normalized") << false << true << true << false;
        QTest::newRow("dare_ties") << true << true << false << false;
        QTest::newRow("dare_ties, normalized") << true << true << true << false;
        // A task vector of zeros (a tensor the fine-tune left alone): no rescale of 0 / 0.
        QTest::newRow("dare_linear, a model equal to the base") << false << true << false << true;
        QTest::newRow("dare_ties, a model equal to the base") << true << true << true << true;
    }
    void dare() {
        QFETCH(bool, consensus);
        QFETCH(bool, rescale);
        QFETCH(bool, normalize);
        QFETCH(bool, sameAsBase);
        const auto base = randomValues(4000, 14);
        const auto a = randomValues(4000, 15);
        const auto b = sameAsBase ? base : randomValues(4000, 16);
        const std::vector<double> w{0.6, 0.9};
        auto p = paramsOf(consensus ? MergeMethod::DareTies : MergeMethod::DareLinear, w, 0.3);
        QVERIFY(!p.normalize);
        p.rescale = rescale;
        p.normalize = normalize;
        p.seed = 1234;
        std::vector<std::vector<double>> d{dareSparse(deltaOf(a, base), 0.3, 1234, p.stream, 0, rescale),
                                           dareSparse(deltaOf(b, base), 0.3, 1234, p.stream, 1, rescale)};
        const Values got = mergeTensorValues(p, inputsOf(&base, {a, b}));
        compare(got, consensus ? refSignConsensus(base, d, w, normalize)
                               : refTaskArithmetic(base, d, w, normalize));
        // About 30 % of each task vector survives.
        std::size_t kept = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
            kept += d[0][i] != 0 ? 1 : 0;
        }
        QVERIFY(kept > 1000 && kept < 1400);
    }

    // A NaN or an infinity in any input shows in the merged values (which are then never written),
    // whatever the method: where a cut, a mask or the sign election leaves its entry out, it
    // vanished, and dare's rescale of the whole tensor went wrong.
    void notFiniteInputsShow() {
        const std::size_t n = 5000;
        const auto base = randomValues(n, 21);
        const auto a = randomValues(n, 22);
        const auto b = randomValues(n, 23);
        for (const MergeMethod method :
             {MergeMethod::Linear, MergeMethod::Slerp, MergeMethod::TaskArithmetic, MergeMethod::Ties,
              MergeMethod::DareLinear, MergeMethod::DareTies, MergeMethod::Breadcrumbs,
              MergeMethod::BreadcrumbsTies, MergeMethod::ModelStock}) {
            const bool hasBase = method != MergeMethod::Linear;
            const std::size_t models = method == MergeMethod::Slerp ? 1 : 2;
            for (const float bad :
                 {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
                for (std::size_t where = hasBase ? 0 : 1; where <= models; ++where) {
                    for (const unsigned seed : {0u, 1u, 2u, 3u}) {
                        std::vector<Values> inputs{base, a, b};
                        inputs[where][1234] = bad;
                        auto p = paramsOf(method, std::vector<double>(models, 0.5), 0.3, 0.05);
                        p.seed = seed;
                        p.t = 0.5;
                        const std::vector<Values> merged(inputs.begin() + 1,
                                                         inputs.begin() + 1 + std::ptrdiff_t(models));
                        const Values got =
                            mergeTensorValues(p, inputsOf(hasBase ? &inputs[0] : nullptr, merged));
                        QVERIFY2(largestMagnitudeBits(got.data(), got.size()) >= kNotFiniteBits,
                                 qPrintable(QStringLiteral("%1, input %2, %3, seed %4")
                                                .arg(QString::fromUtf8(mergeMethodName(method).data()))
                                                .arg(where)
                                                .arg(double(bad))
                                                .arg(seed)));
                    }
                }
            }
        }
    }

    // The same seed gives the same values, another seed others; the tensor's name and the model's
    // place are part of the draw.
    void dareDeterministic() {
        const auto base = randomValues(3000, 17);
        const auto a = randomValues(3000, 18);
        auto p = paramsOf(MergeMethod::DareLinear, {1.0}, 0.5);
        p.seed = 7;
        const Values first = mergeTensorValues(p, inputsOf(&base, {a}));
        QCOMPARE(mergeTensorValues(p, inputsOf(&base, {a})), first);
        p.seed = 8;
        QVERIFY(mergeTensorValues(p, inputsOf(&base, {a})) != first);
        p.seed = 7;
        p.stream = "blk.1.attn_q.weight";
        QVERIFY(mergeTensorValues(p, inputsOf(&base, {a})) != first);
        // Pinned draws: what any machine computes for seed 0.
        const DareMask mask(0, "token_embd.weight", 0);
        QCOMPARE(mask.uniform(0),
                 double(mixBits(mixBits(0 ^ mixBits(fnv1a64("token_embd.weight")) ^ mixBits(1)) +
                                0x9E3779B97F4A7C15ull) >>
                        11) /
                     9007199254740992.0);
        QCOMPARE(fnv1a64(""), 0xCBF29CE484222325ull);
        QCOMPARE(fnv1a64("a"), 0xAF63DC4C8601EC8Cull);
        QCOMPARE(splitMix(0x9E3779B97F4A7C15ull), 0xE220A8397B1DCDAFull); // SplitMix64's first output from 0
    }

    void breadcrumbs_data() {
        QTest::addColumn<bool>("consensus");
        QTest::addColumn<double>("density");
        QTest::addColumn<double>("gamma");
        QTest::addColumn<bool>("normalize");
        QTest::newRow("breadcrumbs") << false << 0.6 << 0.1 << false;
        QTest::newRow("breadcrumbs, normalized") << false << 0.6 << 0.1 << true;
        QTest::newRow("breadcrumbs_ties") << true << 0.5 << 0.05 << false;
        QTest::newRow("breadcrumbs_ties, normalized") << true << 0.5 << 0.05 << true;
        QTest::newRow("the cuts overlap: fewer large ones go") << false << 0.95 << 0.2 << false;
        QTest::newRow("density 1 keeps all") << true << 1.0 << 0.01 << false;
    }
    void breadcrumbs() {
        QFETCH(bool, consensus);
        QFETCH(double, density);
        QFETCH(double, gamma);
        QFETCH(bool, normalize);
        const auto base = randomValues(999, 19);
        const auto a = randomValues(999, 20);
        const auto b = randomValues(999, 21);
        const std::vector<double> w{0.7, 0.4};
        auto p =
            paramsOf(consensus ? MergeMethod::BreadcrumbsTies : MergeMethod::Breadcrumbs, w, density, gamma);
        QVERIFY(!p.normalize);
        p.normalize = normalize;
        std::vector<std::vector<double>> d{breadcrumbSparse(deltaOf(a, base), density, gamma),
                                           breadcrumbSparse(deltaOf(b, base), density, gamma)};
        compare(mergeTensorValues(p, inputsOf(&base, {a, b})),
                consensus ? refSignConsensus(base, d, w, normalize)
                          : refTaskArithmetic(base, d, w, normalize));
    }

    void modelStock() {
        const auto base = randomValues(800, 22);
        std::vector<Values> models;
        for (unsigned s : {23u, 24u, 25u}) {
            Values m = randomValues(800, s, 0.1);
            for (std::size_t i = 0; i < m.size(); ++i) {
                m[i] += base[i] + 0.05f * float(i % 7); // offsets that share a direction
            }
            models.push_back(std::move(m));
        }
        const std::vector<double> want = refModelStock(base, models);
        // t well inside (0, 1): the mean and the base both count.
        const double t =
            (want[0] - base[0]) / ((double(models[0][0]) + models[1][0] + models[2][0]) / 3 - base[0]);
        QVERIFY(t > 0.1 && t < 1);
        compare(mergeTensorValues(paramsOf(MergeMethod::ModelStock, {1, 1, 1}), inputsOf(&base, models)),
                want);
        // A model equal to the base: its cosines are 0 (the norms' product clamped, not 0 / 0).
        models[1] = base;
        const Values got =
            mergeTensorValues(paramsOf(MergeMethod::ModelStock, {1, 1, 1}), inputsOf(&base, models));
        QVERIFY(std::none_of(got.begin(), got.end(), [](float v) { return std::isnan(v); }));
        compare(got, refModelStock(base, models));
        // Two task vectors pointing in opposite directions: c = −1 and t's divisor is 0, said so
        // (not taken for a NaN in an input).
        Values mirror(base.size());
        for (std::size_t i = 0; i < base.size(); ++i) {
            mirror[i] = 2 * base[i] - models[0][i];
        }
        TensorMergeParams opposite = paramsOf(MergeMethod::ModelStock, {1, 1});
        opposite.stream = "blk.0.attn_q.weight";
        try {
            mergeTensorValues(opposite, inputsOf(&base, {models[0], mirror}));
            QFAIL("merged");
        } catch (const FormatError& e) {
            QVERIFY2(
                std::string(e.what()).starts_with(
                    "blk.0.attn_q.weight: model_stock's task vectors point in opposite directions (their "
                    "mean cosine is -1.000)"),
                e.what());
        }
    }

    // Gradients spread over the blocks; outside them the embedding takes v₀, the output side v_k.
    void gradients() {
        const ParamValue g{{ParamRule{"", {0.0, 1.0, 0.5}}}};
        const std::vector<std::pair<std::string, double>> cases{
            {"blk.0.attn_q.weight", 0.0},  {"blk.1.attn_q.weight", 0.5},    {"blk.2.ffn_up.weight", 1.0},
            {"blk.3.ffn_up.weight", 0.75}, {"blk.4.attn_norm.weight", 0.5}, {"token_embd.weight", 0.0},
            {"output_norm.weight", 0.5},   {"output.weight", 0.5},
        };
        for (const auto& [name, want] : cases) {
            QCOMPARE(*resolveParam(g, TensorPlace::of(name, 5)), want);
        }
        QCOMPARE(gradientAt(std::vector<double>{0.2}, 0.7), 0.2);
        QCOMPARE(*resolveParam(g, TensorPlace::of("blk.0.attn_q.weight", 1)), 0.0); // one block sits at 0
    }

    // The first filter that matches gives the value (mergekit's names mapped to GGUF's, systems by
    // the anatomy); a value may be a gradient; without a default, no value.
    void filters() {
        nlohmann::json json = nlohmann::json::parse(R"([
            {"filter": "self_attn", "value": [0, 1]},
            {"filter": "mlp", "value": 0.25},
            {"filter": "input_layernorm", "value": 0.5},
            {"filter": "embed_tokens", "value": 0.125},
            {"filter": "lm_head", "value": 0.375},
            {"filter": "norm", "value": 0.625}
        ])");
        ParamValue v;
        QVERIFY(!paramValueFromJson(json, v));
        QCOMPARE(*resolveParam(v, TensorPlace::of("blk.0.attn_q.weight", 3)), 0.0);
        QCOMPARE(*resolveParam(v, TensorPlace::of("blk.1.attn_output.weight", 3)), 0.5);
        QCOMPARE(*resolveParam(v, TensorPlace::of("blk.2.ffn_down.weight", 3)), 0.25);
        // "self_attn" is "attn_" in GGUF's names, which attn_norm also has: the first filter wins.
        QCOMPARE(*resolveParam(v, TensorPlace::of("blk.2.attn_norm.weight", 3)), 1.0);
        QCOMPARE(*resolveParam(v, TensorPlace::of("token_embd.weight", 3)), 0.125);
        QCOMPARE(*resolveParam(v, TensorPlace::of("output.weight", 3)), 0.375);
        // "lm_head" is "output", which output_norm also has.
        QCOMPARE(*resolveParam(v, TensorPlace::of("output_norm.weight", 3)), 0.375);
        QVERIFY(!resolveParam(v, TensorPlace::of("rope_freqs.weight", 3)));
        QCOMPARE(ggufFilter("model.layers.3.post_attention_layernorm"),
                 std::string("model.layers.3.ffn_norm"));
        QCOMPARE(ggufFilter("input_layernorm"), std::string("attn_norm"));
        // System filters by the anatomy.
        const ParamValue systems{{ParamRule{"organ", {2.0}}, ParamRule{"skeleton", {3.0}},
                                  ParamRule{"norm", {5.0}}, ParamRule{"", {4.0}}}};
        QCOMPARE(*resolveParam(systems, TensorPlace::of("output_norm.weight", 2)), 5.0);
        QCOMPARE(*resolveParam(systems, TensorPlace::of("token_embd.weight", 2)), 4.0);
        QCOMPARE(*resolveParam(systems, TensorPlace::of("blk.0.ffn_gate.weight", 2)), 2.0);
        QCOMPARE(*resolveParam(systems, TensorPlace::of("blk.0.attn_k.weight", 2)), 3.0);
        QCOMPARE(*resolveParam(systems, TensorPlace::of("blk.0.ffn_norm.weight", 2)), 5.0);
        QCOMPARE(paramValueToJson(v), json);
    }

    // Per tensor: a model's own value, else the merge's, else the default; a weight nothing gives
    // is an error naming the model and the tensor.
    void resolution() {
        MergeSpec spec;
        spec.method = MergeMethod::Ties;
        spec.base = "base";
        spec.models = {{"farm", {{"weight", ParamValue::number(0.7)}}},
                       {"sea", {{"density", ParamValue{{ParamRule{"mlp", {0.2}}}}}}},
                       {"base", {}}};
        spec.parameters = {{"weight", ParamValue{{ParamRule{"attn", {0.1, 0.9}}}}},
                           {"density", ParamValue::number(0.5)}};
        QVERIFY(!mergeSpecProblem(spec));
        QCOMPARE(spec.mergedModels(), (std::vector<std::size_t>{0, 1}));
        const TensorMergeParams p = resolveTensorParams(spec, TensorPlace::of("blk.3.attn_v.weight", 4), "x");
        QCOMPARE(p.models.size(), std::size_t(2));
        QCOMPARE(p.models[0].weight, 0.7);
        QCOMPARE(p.models[1].weight, 0.9);
        QCOMPARE(p.models[0].density, 0.5);
        QCOMPARE(p.models[1].density, 0.5);
        QVERIFY(p.normalize);
        const TensorMergeParams q = resolveTensorParams(spec, TensorPlace::of("blk.0.attn_v.weight", 4), "x");
        QCOMPARE(q.models[1].weight, 0.1);
        try {
            resolveTensorParams(spec, TensorPlace::of("blk.1.ffn_up.weight", 4), "x");
            QFAIL("a missing weight was accepted");
        } catch (const FormatError& error) {
            QCOMPARE(
                QString::fromUtf8(error.what()),
                QStringLiteral("model 'sea' has no weight for blk.1.ffn_up.weight (no filter matches it and "
                               "no default is given)"));
        }
    }

    void problems_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("problem");
        QTest::newRow("no base") << R"({"method": "ties", "models": [{"model": "a"}]})"
                                 << "ties needs a base model";
        QTest::newRow("slerp of three")
            << R"({"method": "slerp", "base": "base", "models": [{"model": "a"}, {"model": "b"}], "parameters": {"t": 0.5}})"
            << "slerp merges two models";
        QTest::newRow("slerp without t")
            << R"({"method": "slerp", "base": "base", "models": [{"model": "a"}]})"
            << "slerp needs the parameter 't'";
        QTest::newRow("model_stock of one")
            << R"({"method": "model_stock", "base": "base", "models": [{"model": "a"}]})"
            << "at least two models beside the base";
        QTest::newRow("a parameter of another method")
            << R"({"method": "linear", "models": [{"model": "a", "parameters": {"density": 0.5}}]})"
            << "'density' is not a parameter of linear (it takes weight, normalize)";
        QTest::newRow("t per model")
            << R"({"method": "slerp", "base": "base", "models": [{"model": "a", "parameters": {"t": 0.5}}]})"
            << "'t' is set for the whole merge";
        QTest::newRow("density above 1")
            << R"({"method": "ties", "base": "base", "models": [{"model": "a", "parameters": {"density": 1.5}}]})"
            << "'density' is a share from 0 to 1";
        QTest::newRow("unknown method") << R"({"method": "frankenmerge", "models": []})"
                                        << "unknown merge method";
        QTest::newRow("a gradient of strings")
            << R"({"method": "linear", "models": [{"model": "a", "parameters": {"weight": ["x"]}}]})"
            << "must be a number or a list of numbers";
        QTest::newRow("normalize per model")
            << R"({"method": "linear", "models": [{"model": "a", "parameters": {"normalize": true}}]})"
            << "'normalize' is set for the whole merge";
        QTest::newRow("rescale for ties")
            << R"({"method": "ties", "base": "base", "models": [{"model": "a"}], "parameters": {"rescale": true}})"
            << "'rescale' is not a parameter of ties";
        QTest::newRow("passthrough") << R"({"method": "passthrough", "models": [{"model": "a"}]})"
                                     << "layer operations";
        QTest::newRow("a negative seed")
            << R"({"method": "dare_ties", "base": "base", "models": [{"model": "a"}], "seed": -1})"
            << "\"seed\" must be a whole number";
    }
    void problems() {
        QFETCH(QString, json);
        QFETCH(QString, problem);
        try {
            mergeSpecFromJson(nlohmann::json::parse(json.toStdString()), "plan.json: operation 1");
            QFAIL("accepted");
        } catch (const FormatError& error) {
            const QString message = QString::fromUtf8(error.what());
            QVERIFY2(message.startsWith(QStringLiteral("plan.json: operation 1: ")) &&
                         message.contains(problem),
                     qPrintable(message));
        }
    }

    void jsonRoundTrip() {
        const auto json = nlohmann::json::parse(R"({"method": "dare_ties", "base": "base",
            "models": [{"model": "farm", "parameters": {"weight": [0.2, 0.8], "density": 0.5}},
                       {"model": "sea", "parameters": {"weight": [{"filter": "mlp", "value": 0.3}, {"value": 0.6}]}}],
            "parameters": {"normalize": true, "rescale": false, "density": 0.9}, "seed": 42})");
        const MergeSpec spec = mergeSpecFromJson(json, "x");
        QCOMPARE(spec.seed, std::uint64_t(42));
        nlohmann::json back;
        mergeSpecToJson(spec, back);
        QCOMPARE(mergeSpecFromJson(back, "x"), spec);
    }
};

QTEST_APPLESS_MAIN(TestMerge)
#include "tst_merge.moc"
