// Purification v1 (../shared/specs/purify-v1.md) on synthetic signals: a smooth or fractal
// signal plus white noise comes out closer to the clean signal with both methods; mean and
// standard deviation are restored; NaN stays where it was; constant and all-zero tensors do not
// move; keep = 1 gives the input back.
#include "purify/purify_model.h"
#include "purify/purification.h"
#include "quant/dequant.h"
#include "quant/quantize.h"
#include "shared_models.h"

#include <QTemporaryDir>

#include <QFileInfo>
#include <QTest>
#include <cmath>
#include <numbers>
#include <random>

using namespace organ;

namespace {

struct Signal {
    std::vector<float> clean;
    std::vector<float> noisy;
};

enum class Kind { Smooth, Fractal, Blocky };

// Rows of a few low-frequency sines (smooth), a random walk (fractal, 1/f²) or steps of 256
// values (blocky), plus white noise of standard deviation `noise`.
Signal makeSignal(Kind kind, std::size_t rows, std::size_t columns, double noise, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(-1, 1);
    Signal s;
    double level = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        double walk = 0;
        for (std::size_t c = 0; c < columns; ++c) {
            double v = 0;
            if (kind == Kind::Fractal) {
                walk += 0.1 * normal(rng);
                v = walk;
            } else if (kind == Kind::Blocky) {
                if ((r * columns + c) % 256 == 0) {
                    level = uniform(rng);
                }
                v = level;
            } else {
                const double t = double(c) / double(columns);
                v = std::sin(2 * std::numbers::pi * double(2 + r % 3) * t) +
                    0.5 * std::cos(2 * std::numbers::pi * 5 * t);
            }
            s.clean.push_back(static_cast<float>(v));
            s.noisy.push_back(static_cast<float>(v + noise * normal(rng)));
        }
    }
    return s;
}

double mse(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        sum += (double(a[i]) - double(b[i])) * (double(a[i]) - double(b[i]));
    }
    return sum / double(a.size());
}

std::pair<double, double> moments(const std::vector<float>& v) {
    double mean = 0;
    for (const float x : v) {
        mean += x;
    }
    mean /= double(v.size());
    double var = 0;
    for (const float x : v) {
        var += (x - mean) * (x - mean);
    }
    return {mean, std::sqrt(var / double(v.size()))};
}

PurifyParams params(PurifyParams::Method method) {
    PurifyParams p;
    p.method = method;
    return p;
}

} // namespace

class TestPurify : public QObject {
    Q_OBJECT

private slots:
    // Where each method helps, and by how much at least (the measured share is printed). The
    // haar method with its defaults (threshold 1, attenuation 0) makes the smooth and the
    // fractal signals worse (×3.0 and ×1.2 the error): at coarse scales the median of the
    // details is signal, not noise, so half the signal's details fall under the threshold.
    // The fft method with its default keep of 0.9 drops too much of a random walk (×2.6).
    void closerToTheCleanSignal_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("method");
        QTest::addColumn<double>("keep");
        QTest::addColumn<double>("attenuation");
        QTest::addColumn<double>("margin"); // the output's error is at most this share of the input's
        const int fft = int(PurifyParams::Method::Fft);
        const int haar = int(PurifyParams::Method::Haar);
        QTest::newRow("smooth, fft 0.9") << int(Kind::Smooth) << fft << 0.9 << 0.0 << 0.4;
        QTest::newRow("blocky, fft 0.9") << int(Kind::Blocky) << fft << 0.9 << 0.0 << 0.85;
        QTest::newRow("blocky, haar 1/0") << int(Kind::Blocky) << haar << 0.9 << 0.0 << 0.5;
        QTest::newRow("fractal, fft 0.99") << int(Kind::Fractal) << fft << 0.99 << 0.0 << 0.95;
        QTest::newRow("fractal, haar 1/0.5") << int(Kind::Fractal) << haar << 0.9 << 0.5 << 0.85;
    }

    void closerToTheCleanSignal() {
        QFETCH(int, kind);
        QFETCH(int, method);
        QFETCH(double, keep);
        QFETCH(double, attenuation);
        QFETCH(double, margin);
        const Signal s = makeSignal(Kind(kind), 16, 512, 0.3, 7);
        PurifyParams p = params(PurifyParams::Method(method));
        p.keep = keep;
        p.attenuation = attenuation;
        const Purified out = purify(s.noisy, 512, p);
        const double before = mse(s.noisy, s.clean);
        const double after = mse(out.values, s.clean);
        qInfo("%s: error %.4f → %.4f (%.0f %%), relative change %.3f, kept %.3f", QTest::currentDataTag(),
              before, after, 100 * after / before, out.relativeChange, out.keptFraction);
        QVERIFY2(after < margin * before, qPrintable(QString::number(after / before)));
        QVERIFY(out.relativeChange > 0);
        // Mean and standard deviation restored: per row (fft) or over the tensor (haar).
        const auto [m0, s0] = moments(s.noisy);
        const auto [m1, s1] = moments(out.values);
        QVERIFY(std::abs(m1 - m0) < 1e-4);
        QVERIFY(std::abs(s1 / s0 - 1) < (method == int(PurifyParams::Method::Fft) ? 0.05 : 1e-4));
    }

    void fftRowsKeepTheirMoments() {
        const Signal s = makeSignal(Kind::Smooth, 4, 300, 0.5, 3); // 300: an even, non-power-of-two length
        const Purified out = purify(s.noisy, 300, params(PurifyParams::Method::Fft));
        for (std::size_t r = 0; r < 4; ++r) {
            const std::vector<float> in(s.noisy.begin() + std::ptrdiff_t(r * 300),
                                        s.noisy.begin() + std::ptrdiff_t((r + 1) * 300));
            const std::vector<float> got(out.values.begin() + std::ptrdiff_t(r * 300),
                                         out.values.begin() + std::ptrdiff_t((r + 1) * 300));
            const auto [m0, s0] = moments(in);
            const auto [m1, s1] = moments(got);
            QVERIFY(std::abs(m1 - m0) < 1e-5);
            QVERIFY(std::abs(s1 - s0) < 1e-5);
        }
        QVERIFY(out.keptFraction > 0 && out.keptFraction < 1);
    }

    void keepAllGivesTheInputBack() {
        const Signal s = makeSignal(Kind::Fractal, 3, 257, 0.2, 5); // odd length
        PurifyParams p = params(PurifyParams::Method::Fft);
        p.keep = 1.0;
        const Purified out = purify(s.noisy, 257, p);
        for (std::size_t i = 0; i < s.noisy.size(); ++i) {
            QVERIFY(std::abs(out.values[i] - s.noisy[i]) <= 1e-5f * (1 + std::abs(s.noisy[i])));
        }
        // Haar with attenuation 1, or threshold 0 (every detail significant), changes nothing either.
        PurifyParams h = params(PurifyParams::Method::Haar);
        h.attenuation = 1.0;
        PurifyParams zero = params(PurifyParams::Method::Haar);
        zero.threshold = 0;
        for (const PurifyParams& q : {h, zero}) {
            const Purified same = purify(s.noisy, 257, q);
            for (std::size_t i = 0; i < s.noisy.size(); ++i) {
                QVERIFY(std::abs(same.values[i] - s.noisy[i]) <= 1e-5f * (1 + std::abs(s.noisy[i])));
            }
        }
    }

    void nanStaysWhereItWas() {
        Signal s = makeSignal(Kind::Smooth, 2, 256, 0.3, 9);
        s.noisy[10] = std::nanf("");
        s.noisy[300] = std::numeric_limits<float>::infinity();
        for (const auto method : {PurifyParams::Method::Fft, PurifyParams::Method::Haar}) {
            const Purified out = purify(s.noisy, 256, params(method));
            QVERIFY(std::isnan(out.values[10]));
            QVERIFY(std::isinf(out.values[300]));
            for (std::size_t i = 0; i < out.values.size(); ++i) {
                if (i != 10 && i != 300) {
                    QVERIFY(std::isfinite(out.values[i]));
                }
            }
            QVERIFY(std::isfinite(out.relativeChange));
        }
    }

    void constantAndZeroDoNotMove() {
        for (const float value : {0.0f, 0.25f}) {
            const std::vector<float> flat(4096, value);
            for (const auto method : {PurifyParams::Method::Fft, PurifyParams::Method::Haar}) {
                const Purified out = purify(flat, 64, params(method));
                QCOMPARE(out.values, flat);
                QCOMPARE(out.relativeChange, 0.0);
            }
        }
        // Small tensors (64 values or fewer) are left to haar as they are.
        const std::vector<float> small{1, 2, 3, 4};
        QCOMPARE(purify(small, 4, params(PurifyParams::Method::Haar)).values, small);
    }

    // A model: the selected tensors purified (θ before → after reported) and stored in their own
    // type, K-quants included, the others' bytes untouched, the parameters recorded.
    void purifiesAModel() {
        const QString path = organ::testing::sharedModel(QStringLiteral("quant/wide-q4_k_m.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto model = GgufModel::open(path.toStdString());
        QTemporaryDir dir;
        const std::string out = dir.filePath(QStringLiteral("purified.gguf")).toStdString();
        TensorSelector select;
        select.firstLayer = 1;
        select.lastLayer = 1;
        select.roles = {"ffn_up", "attn_norm"};
        PurifyParams p = params(PurifyParams::Method::Haar);
        p.attenuation = 0.25;
        const PurifyOutcome outcome = purifyModel(*model, select, p, out);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        QCOMPARE(outcome.tensors.size(), std::size_t(2));
        const auto purified = GgufModel::open(out);
        for (const PurifiedTensor& t : outcome.tensors) {
            QVERIFY(t.thetaBefore && t.thetaAfter);
            QVERIFY(t.relativeChange > 0);
            QCOMPARE(purified->findTensor(t.name)->type, t.to);
        }
        // The Q4_K tensor stays Q4_K, its purified values written as organ quantize writes them.
        const TensorInfo* up = model->findTensor("blk.1.ffn_up.weight");
        QCOMPARE(up->type, TensorType::Q4_K);
        QVERIFY(outcome.findings.empty());
        std::vector<float> values(static_cast<std::size_t>(up->elements));
        dequantizeRange(up->type, model->tensorData(*up), 0, values.size(), values.data());
        const Purified expected = purify(values, up->ne[0], p);
        std::vector<std::byte> bytes(static_cast<std::size_t>(up->bytes));
        quantizeRows(TensorType::Q4_K, expected.values.data(), values.size() / up->ne[0], up->ne[0], nullptr,
                     bytes.data());
        const TensorInfo* written = purified->findTensor("blk.1.ffn_up.weight");
        QCOMPARE(written->type, TensorType::Q4_K);
        QVERIFY(std::ranges::equal(purified->tensorData(*written), bytes));
        for (const TensorInfo& t : model->tensors()) {
            if (t.name != "blk.1.ffn_up.weight" && t.name != "blk.1.attn_norm.weight") {
                QVERIFY(std::ranges::equal(purified->tensorData(*purified->findTensor(t.name)),
                                           model->tensorData(t)));
            }
        }
        QCOMPARE(purified->find("organ.purify.version")->asString().value_or(""), std::string_view("v1"));
        QCOMPARE(purified->find("organ.purify.method")->asString().value_or(""), std::string_view("haar"));
        QCOMPARE(purified->find("organ.purify.attenuation")->asFloat().value_or(0), 0.25);
        QCOMPARE(purified->find("organ.purify.tensors")->arraySize(), std::uint64_t(2));
        // Nothing picked: refused, nothing written.
        TensorSelector none;
        none.names = {"no.such.tensor"};
        const std::string never = dir.filePath(QStringLiteral("never.gguf")).toStdString();
        const PurifyOutcome refused = purifyModel(*model, none, p, never);
        QVERIFY(!refused.written.isOk());
        QVERIFY(QString::fromStdString(refused.written.message).contains(QStringLiteral("picks no tensor")));
        QVERIFY(!QFileInfo::exists(QString::fromStdString(never)));
    }

    // A type the engine cannot write (IQ2_XXS) is stored as F16, and said.
    void unwritableTypeBecomesF16() {
        const QString path = organ::testing::sharedModel(QStringLiteral("quant/wide-iq2_xxs.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto model = GgufModel::open(path.toStdString());
        QCOMPARE(model->findTensor("blk.1.ffn_up.weight")->type, TensorType::IQ2_XXS);
        QTemporaryDir dir;
        const std::string out = dir.filePath(QStringLiteral("purified.gguf")).toStdString();
        TensorSelector select;
        select.names = {"blk.1.ffn_up.weight"};
        const PurifyOutcome outcome = purifyModel(*model, select, params(PurifyParams::Method::Fft), out);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        QCOMPARE(GgufModel::open(out)->findTensor("blk.1.ffn_up.weight")->type, TensorType::F16);
        QVERIFY(!outcome.findings.empty());
        QVERIFY(QString::fromStdString(outcome.findings.front()).contains(QStringLiteral("stored as F16")));
    }

    void parametersAreChecked() {
        const std::vector<float> v(64, 1.0f);
        PurifyParams p;
        p.keep = 0;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, purify(v, 64, p));
        p.keep = 1.5;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, purify(v, 64, p));
        p = params(PurifyParams::Method::Haar);
        p.attenuation = 2;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, purify(v, 64, p));
        p.attenuation = 0;
        p.threshold = -1;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, purify(v, 64, p));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, purify(v, 60, PurifyParams{}));
        QCOMPARE(purifyParamsText(PurifyParams{}), std::string("keep 0.9"));
        QCOMPARE(purifyParamsText(params(PurifyParams::Method::Haar)),
                 std::string("threshold 1 · attenuation 0"));
    }
};

QTEST_GUILESS_MAIN(TestPurify)
#include "tst_purify.moc"
