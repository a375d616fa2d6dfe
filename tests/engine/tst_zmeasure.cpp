// Z-measure v1 against the numpy references of ../shared/reference/zmeasure, and the
// spec's reference points on generated data.
#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "measure/zmeasure.h"
#include "shared_models.h"

#include <QTest>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

using namespace organ;
using namespace organ::testing;

namespace {

bool near(double actual, double expected, double tolerance) {
    return std::abs(actual - expected) <= tolerance * std::max(1.0, std::abs(expected));
}

ZResult measureFloats(const std::vector<float>& values, unsigned threads = 1,
                      SampleStrategy strategy = SampleStrategy::Auto) {
    const SpanValueSource source(values);
    auto result = measureSample(source, threads, nullptr, strategy);
    return result ? *result : ZResult{};
}

} // namespace

class TestZMeasure : public QObject {
    Q_OBJECT

private slots:
    void matchesReference_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("reference");
        QTest::newRow("stories260K-f32")
            << QStringLiteral("stories260K-f32.gguf") << QStringLiteral("stories260K-f32.json");
        QTest::newRow("stories260K-damaged") << QStringLiteral("stories260K-damaged-f32.gguf")
                                             << QStringLiteral("stories260K-damaged-f32.json");
        QTest::newRow("stories260K-q8_0")
            << QStringLiteral("stories260K-q8_0.gguf") << QStringLiteral("stories260K-q8_0.json");
        QTest::newRow("llama-2-tiny-random-f16") << QStringLiteral("llama-2-tiny-random-f16.gguf")
                                                 << QStringLiteral("llama-2-tiny-random-f16.json");
        QTest::newRow("wide-q4_k_m") << QStringLiteral("quant/wide-q4_k_m.gguf")
                                     << QStringLiteral("wide-q4_k_m.json");
    }

    void matchesReference() {
        QFETCH(QString, model);
        QFETCH(QString, reference);
        ORGAN_REQUIRE_SHARED(sharedModel(model));
        ORGAN_REQUIRE_SHARED(sharedReference(QStringLiteral("zmeasure/") + reference));
        const auto file = GgufFile::open(sharedModel(model).toStdString());
        std::ifstream in(sharedReference(QStringLiteral("zmeasure/") + reference).toStdString());
        const auto expected = nlohmann::json::parse(in);
        QCOMPARE(expected.size(), file->tensors().size());
        for (const auto& ref : expected) {
            const std::string name = ref.at("name");
            const TensorInfo* t = file->findTensor(name);
            QVERIFY2(t != nullptr, name.c_str());
            for (unsigned threads : {1u, 2u}) {
                const auto r = measureTensor(t->type, file->tensorData(*t), t->elements, ZParams{}, threads);
                QVERIFY(r.has_value());
                QCOMPARE(r->n, ref.at("n").get<std::uint64_t>());
                QCOMPARE(r->N, ref.at("N").get<std::uint64_t>());
                if (ref.at("theta").is_null()) {
                    QVERIFY2(r->constant && !r->hasTheta(), name.c_str());
                    QVERIFY(!r->beta.has_value());
                    continue;
                }
                const auto check = [&](const char* field, const std::optional<double>& actual,
                                       double tolerance) {
                    QVERIFY2(actual.has_value(), (name + " " + field).c_str());
                    const double want = ref.at(field).get<double>();
                    QVERIFY2(near(*actual, want, tolerance),
                             qPrintable(QStringLiteral("%1 %2: %3, expected %4")
                                            .arg(QString::fromStdString(name), QString::fromUtf8(field))
                                            .arg(*actual, 0, 'g', 12)
                                            .arg(want, 0, 'g', 12)));
                };
                check("H", r->H, 1e-6);
                check("K", r->K, 1e-6);
                check("C", r->C, 1e-6);
                check("sH", r->sH, 1e-6);
                check("sK", r->sK, 1e-6);
                check("sC", r->sC, 1e-6);
                check("signal", r->signal, 1e-6);
                QVERIFY2(std::abs(*r->theta - ref.at("theta").get<double>()) < 0.01, name.c_str());
                if (ref.at("beta").is_null()) {
                    QVERIFY2(!r->beta.has_value(), name.c_str());
                } else {
                    check("beta", r->beta, 1e-6);
                }
            }
        }
    }

    // The spec's reference points (n = 100 000).
    void uniformNoise() {
        std::mt19937_64 rng(1);
        std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
        std::vector<float> v(100000);
        for (auto& x : v) {
            x = uniform(rng);
        }
        const ZResult r = measureFloats(v);
        QVERIFY(std::abs(*r.H - 1.0) < 0.01);
        QVERIFY(std::abs(*r.K + 1.2) < 0.05);
        QVERIFY(std::abs(*r.C - 1.0) < 0.05);
        QVERIFY2(*r.theta < 3.0, qPrintable(QString::number(*r.theta)));
    }

    void gaussianNoise() {
        std::mt19937_64 rng(2);
        std::normal_distribution<float> normal(0.0f, 0.02f);
        std::vector<float> v(100000);
        for (auto& x : v) {
            x = normal(rng);
        }
        const ZResult r = measureFloats(v, 2);
        QVERIFY(std::abs(*r.H - 0.86) < 0.02);
        QVERIFY(std::abs(*r.K) < 0.1);
        QVERIFY(std::abs(*r.C - 1.65) < 0.1);
        QVERIFY2(std::abs(*r.theta - 16.0) < 1.5, qPrintable(QString::number(*r.theta)));
    }

    void laplaceAndQuantized() {
        std::mt19937_64 rng(3);
        std::exponential_distribution<double> exponential(1.0);
        std::vector<float> laplace(100000);
        std::vector<float> levels(100000);
        for (std::size_t i = 0; i < laplace.size(); ++i) {
            laplace[i] = static_cast<float>((i % 2 == 0 ? 1 : -1) * exponential(rng));
            levels[i] = static_cast<float>(int(exponential(rng) * 3) % 5) * 0.25f;
        }
        QVERIFY(std::abs(*measureFloats(laplace).C - 2.2) < 0.15);
        const ZResult q = measureFloats(levels);
        QVERIFY2(*q.C > 100.0, qPrintable(QString::number(*q.C))); // a few discrete levels: huge C
        QVERIFY(*q.theta > 40.0);
    }

    void constantHasNoTheta() {
        const ZResult r = measureFloats(std::vector<float>(1000, 0.5f));
        QVERIFY(r.constant);
        QVERIFY(!r.hasTheta());
        QVERIFY(!r.H.has_value());
    }

    // NaN and infinities are left out, counted, and never crash or poison θ.
    void nonFiniteValuesAreFlagged() {
        std::mt19937_64 rng(4);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> v(10000);
        for (auto& x : v) {
            x = normal(rng);
        }
        const ZResult clean = measureFloats(v);
        v.push_back(std::numeric_limits<float>::quiet_NaN());
        v.push_back(std::numeric_limits<float>::infinity());
        v.push_back(-std::numeric_limits<float>::infinity());
        const ZResult dirty = measureFloats(v);
        const ZResult dirtyStreamed = measureFloats(v, 2, SampleStrategy::Streaming);
        QCOMPARE(dirtyStreamed.nonFinite, std::uint64_t(3));
        QVERIFY(near(*dirtyStreamed.theta, *clean.theta, 1e-9));
        QCOMPARE(dirty.nonFinite, std::uint64_t(3));
        QCOMPARE(dirty.n, std::uint64_t(10000));
        QCOMPARE(*dirty.theta, *clean.theta);
        const ZResult allBad = measureFloats(std::vector<float>(50, std::numeric_limits<float>::quiet_NaN()));
        QCOMPARE(allBad.nonFinite, std::uint64_t(50));
        QVERIFY(!allBad.hasTheta() && !allBad.constant);
    }

    // C from order statistics and distinct values equals C from a full sort.
    void coherenceEqualsSortedDefinition() {
        std::mt19937_64 rng(5);
        std::student_t_distribution<float> t(3.0f);
        for (std::size_t n : {std::size_t(5), std::size_t(150), std::size_t(4099), std::size_t(70000)}) {
            std::vector<float> v(n);
            for (auto& x : v) {
                x = std::round(t(rng) * 50.0f) / 50.0f; // many duplicates
            }
            std::vector<double> sorted(v.begin(), v.end());
            std::sort(sorted.begin(), sorted.end());
            const std::size_t trim = n / 100;
            std::vector<double> diffs;
            for (std::size_t i = trim + 1; i < n - trim; ++i) {
                diffs.push_back(sorted[i] - sorted[i - 1]);
            }
            double mean = 0;
            for (double d : diffs) {
                mean += d;
            }
            mean /= double(diffs.size());
            double var = 0;
            for (double d : diffs) {
                var += (d - mean) * (d - mean);
            }
            var /= double(diffs.size());
            const double expected = diffs.size() < 3 || mean == 0 ? 0.0 : std::sqrt(var) / mean;
            for (auto strategy : {SampleStrategy::InMemory, SampleStrategy::Streaming}) {
                QVERIFY2(near(*measureFloats(v, 2, strategy).C, expected, 1e-9),
                         qPrintable(QString::number(n)));
            }
        }
    }

    // The streaming strategy (bounded memory, for huge samples) gives the numbers the
    // in-memory one does, on every tensor of real files.
    void strategiesAgree_data() {
        QTest::addColumn<QString>("model");
        QTest::newRow("stories260K-q8_0") << QStringLiteral("stories260K-q8_0.gguf");
        QTest::newRow("wide-q4_k_m") << QStringLiteral("quant/wide-q4_k_m.gguf");
        QTest::newRow("wide-iq2_xs") << QStringLiteral("quant/wide-iq2_xs.gguf");
    }

    void strategiesAgree() {
        QFETCH(QString, model);
        ORGAN_REQUIRE_SHARED(sharedModel(model));
        const auto file = GgufFile::open(sharedModel(model).toStdString());
        for (const auto& t : file->tensors()) {
            const TensorSampleSource all(t.type, file->tensorData(t), t.elements, t.elements);
            const auto memory = measureSample(all, 1, nullptr, SampleStrategy::InMemory);
            const auto streamed = measureSample(all, 2, nullptr, SampleStrategy::Streaming);
            QCOMPARE(streamed->n, memory->n);
            QCOMPARE(streamed->constant, memory->constant);
            if (!memory->hasTheta()) {
                continue;
            }
            QVERIFY2(near(*streamed->H, *memory->H, 1e-12), t.name.c_str());
            QVERIFY2(near(*streamed->K, *memory->K, 1e-9), t.name.c_str());
            QVERIFY2(near(*streamed->C, *memory->C, 1e-9), t.name.c_str());
            QVERIFY2(near(*streamed->theta, *memory->theta, 1e-9), t.name.c_str());
        }
    }

    void spectrumOfWhiteNoiseIsFlat() {
        std::mt19937_64 rng(6);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> v(1u << 16);
        for (auto& x : v) {
            x = normal(rng);
        }
        ZResult r;
        measureSpectrum(SpanValueSource(v), r);
        QCOMPARE(r.levelEnergies.size(), std::size_t(10)); // 32768 … 64 detail coefficients
        QVERIFY(std::abs(*r.beta) < 0.05);
        // A smooth (correlated) signal has energy at coarse scales: β > 0.
        std::vector<float> smooth(v.size());
        double walk = 0;
        for (std::size_t i = 0; i < smooth.size(); ++i) {
            walk += v[i];
            smooth[i] = static_cast<float>(walk);
        }
        ZResult s;
        measureSpectrum(SpanValueSource(smooth), s);
        QVERIFY(*s.beta > 1.0);
    }

    void cancelStops() {
        std::vector<float> v(3u << 20, 1.0f);
        v[7] = 2.0f;
        StopToken stop;
        stop.requestStop();
        QVERIFY(!measureSample(SpanValueSource(v), 2, &stop, SampleStrategy::InMemory).has_value());
        QVERIFY(!measureSample(SpanValueSource(v), 2, &stop, SampleStrategy::Streaming).has_value());
    }
};

QTEST_APPLESS_MAIN(TestZMeasure)
#include "tst_zmeasure.moc"
