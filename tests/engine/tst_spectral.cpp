// Spectral health v1: the fit against a direct reading of the spec computed here (every candidate,
// every tail), on spectra of known exponent the fitted α near it, σ² of matrices built with known
// singular values, the labels, and the model run (small matrices and 1-D tensors have no α).
#include "fixtures.h"
#include "measure/spectral.h"
#include "quant/dequant.h"

#include <Eigen/QR>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <random>

using namespace organ;
using namespace organ::testing;

namespace {

// The spec read literally: every candidate, its tail, α and D, the least D (the first on ties).
struct Literal {
    double alpha = 0, xmin = 0, d = 1e300;
    std::size_t n = 0;
};
Literal literalFit(std::vector<double> l) {
    std::sort(l.begin(), l.end());
    Literal best;
    for (std::size_t j = 0; j < l.size(); ++j) {
        std::size_t atLeast = 0;
        for (const double x : l) {
            atLeast += x >= l[j] ? 1 : 0;
        }
        if (atLeast < 10 || l[j] <= 0) {
            continue;
        }
        std::vector<double> tail;
        for (const double x : l) {
            if (x >= l[j]) {
                tail.push_back(x);
            }
        }
        double logs = 0;
        for (const double x : tail) {
            logs += std::log(x / l[j]);
        }
        if (logs <= 0) {
            continue;
        }
        const double n = double(tail.size());
        const double alpha = 1 + n / logs;
        double d = 0;
        for (std::size_t k = 1; k <= tail.size(); ++k) {
            const double f = 1 - std::pow(tail[k - 1] / l[j], 1 - alpha);
            d = std::max({d, std::abs(double(k) / n - f), std::abs(double(k - 1) / n - f)});
        }
        if (d < best.d) {
            best = {alpha, l[j], d, tail.size()};
        }
    }
    return best;
}

// m eigenvalues at the quantiles of a Pareto law of exponent alpha above 1.
std::vector<double> pareto(std::size_t m, double alpha) {
    std::vector<double> l;
    for (std::size_t i = 0; i < m; ++i) {
        const double u = (double(i) + 0.5) / double(m);
        l.push_back(std::pow(1 - u, -1 / (alpha - 1)));
    }
    return l;
}

} // namespace

class TestSpectral : public QObject {
    Q_OBJECT

private slots:
    void matchesTheSpecRead_data() {
        QTest::addColumn<int>("seed");
        for (int s = 1; s <= 6; ++s) {
            QTest::newRow(qPrintable(QStringLiteral("seed %1").arg(s))) << s;
        }
    }
    void matchesTheSpecRead() {
        QFETCH(int, seed);
        std::mt19937 rng(static_cast<unsigned>(seed));
        std::lognormal_distribution<double> draw(0, 1.5);
        std::vector<double> l(40 + 20 * std::size_t(seed));
        for (double& x : l) {
            x = draw(rng);
        }
        l[3] = l[7] = l[11]; // equal eigenvalues: one candidate
        l[0] = 0;            // not positive: never a candidate
        const Literal want = literalFit(l);
        const SpectralFit got = fitSpectrum(l);
        QVERIFY(got.alpha);
        QVERIFY(std::abs(*got.alpha - want.alpha) <= 1e-9 * want.alpha);
        QCOMPARE(got.xmin, want.xmin);
        QCOMPARE(got.tail, std::uint64_t(want.n));
        QVERIFY(std::abs(got.ksDistance - want.d) <= 1e-12);
        double sum = 0;
        for (const double x : l) {
            sum += x;
        }
        const double top = *std::max_element(l.begin(), l.end());
        QCOMPARE(got.lambdaMax, top);
        QVERIFY(std::abs(got.stableRank - sum / top) <= 1e-12 * sum / top);
        QVERIFY(std::abs(*got.alphaWeighted - *got.alpha * std::log10(top)) <= 1e-12);
        QVERIFY(std::abs(got.logNorm - std::log10(sum)) <= 1e-12);
    }

    void knownExponents_data() {
        QTest::addColumn<double>("alpha");
        QTest::addColumn<QString>("label");
        QTest::newRow("1.6") << 1.6 << QStringLiteral("over-trained");
        QTest::newRow("3.5") << 3.5 << QStringLiteral("well-trained");
        QTest::newRow("7.0") << 7.0 << QStringLiteral("under-trained");
    }
    void knownExponents() {
        QFETCH(double, alpha);
        QFETCH(QString, label);
        const SpectralFit fit = fitSpectrum(pareto(2000, alpha));
        QVERIFY(fit.alpha);
        QVERIFY2(std::abs(*fit.alpha - alpha) < 0.1 * alpha, qPrintable(QString::number(*fit.alpha)));
        QCOMPARE(QString::fromStdString(spectralLabel(fit)), label);
        QVERIFY(!isUnreliable(fit));
        QVERIFY(isUnreliable(fitSpectrum(pareto(2000, 12.0))));
    }

    // W = U diag(σ) Vᵀ with orthonormal U, V: its eigenvalues are σ², in any shape.
    void eigenvaluesOfAMatrix() {
        std::mt19937 rng(3);
        std::normal_distribution<double> normal;
        for (const auto& [rows, columns] : {std::pair{60, 40}, std::pair{40, 60}}) {
            const int k = std::min(rows, columns);
            Eigen::MatrixXd a(rows, rows);
            Eigen::MatrixXd b(columns, columns);
            for (Eigen::Index i = 0; i < a.size(); ++i) {
                a.data()[i] = normal(rng);
            }
            for (Eigen::Index i = 0; i < b.size(); ++i) {
                b.data()[i] = normal(rng);
            }
            const Eigen::MatrixXd u = Eigen::HouseholderQR<Eigen::MatrixXd>(a).householderQ();
            const Eigen::MatrixXd v = Eigen::HouseholderQR<Eigen::MatrixXd>(b).householderQ();
            Eigen::MatrixXd sigma = Eigen::MatrixXd::Zero(rows, columns);
            std::vector<double> want;
            for (int i = 0; i < k; ++i) {
                sigma(i, i) = 0.5 + i * 0.25;
                want.push_back(sigma(i, i) * sigma(i, i));
            }
            const std::vector<double> got = eigenvaluesOf(u * sigma * v.transpose());
            QCOMPARE(got.size(), want.size());
            for (std::size_t i = 0; i < want.size(); ++i) {
                QVERIFY(std::abs(got[i] - want[i]) <= 1e-9 * want.back());
            }
        }
    }

    void tooFewEigenvalues() {
        QVERIFY(!fitSpectrum({1, 2, 3, 4, 5, 6, 7, 8, 9}).alpha);
        QVERIFY(!fitSpectrum(std::vector<double>(30, 2.0)).alpha); // every tail equal: no exponent
        QCOMPARE(spectralLabel(fitSpectrum({})), std::string("none"));
    }

    // A model: a 2-D matrix fitted (its α that of its values' own spectrum), a 3-D tensor one
    // fit per expert, a matrix under 16 rows and a 1-D tensor with none; the JSON's keys.
    void model() {
        QTemporaryDir dir;
        GgufWriteSpec spec;
        spec.metadata.emplace_back("general.architecture", MetaValue::fromString("llama"));
        spec.tensors = {patternTensor("blk.0.attn_q.weight", TensorType::F32, {32, 48}, 1),
                        patternTensor("blk.0.ffn_up_exps.weight", TensorType::F32, {32, 20, 3}, 2),
                        patternTensor("blk.0.attn_k.weight", TensorType::F32, {32, 8}, 3),
                        patternTensor("blk.0.attn_norm.weight", TensorType::F32, {32}, 4)};
        const QString path = dir.filePath(QStringLiteral("m.gguf"));
        QVERIFY(writeFixture(path, spec));
        const auto model = GgufModel::open(RootedPath(path.toStdString()));
        const auto report = measureSpectra(*model, TensorSelector{}, {}, nullptr, 2);
        QVERIFY(report);
        std::vector<std::string> names;
        for (const MatrixSpectrum& m : report->matrices) {
            names.push_back(m.name);
        }
        QCOMPARE(names, (std::vector<std::string>{"blk.0.attn_q.weight", "blk.0.ffn_up_exps.weight[0]",
                                                  "blk.0.ffn_up_exps.weight[1]",
                                                  "blk.0.ffn_up_exps.weight[2]", "blk.0.attn_k.weight"}));
        const MatrixSpectrum& q = report->matrices[0];
        QCOMPARE(q.rows, std::uint64_t(48));
        QCOMPARE(q.columns, std::uint64_t(32));
        QVERIFY(q.fit);
        // The same values, fitted here.
        std::vector<float> values(32 * 48);
        dequantizeRange(TensorType::F32, model->tensorData(model->tensors()[0]), 0, values.size(),
                        values.data());
        const Eigen::MatrixXd w =
            Eigen::Map<const Eigen::Matrix<float, 48, 32, Eigen::RowMajor>>(values.data()).cast<double>();
        const SpectralFit want = fitSpectrum(eigenvaluesOf(w));
        QCOMPARE(q.fit->alpha.has_value(), want.alpha.has_value());
        QCOMPARE(q.fit->lambdaMax, want.lambdaMax);
        QVERIFY(report->matrices[1].fit && report->matrices[3].fit);
        QVERIFY(!report->matrices[4].fit); // 8 rows
        const nlohmann::json j = spectralToJson(*report);
        QCOMPARE(j["spectral"].get<std::string>(), std::string("v1"));
        for (const char* key : {"name", "alpha", "xmin", "ks_distance", "tail", "lambda_max", "stable_rank",
                                "alpha_weighted", "log_norm", "label", "unreliable", "seconds"}) {
            QVERIFY2(j["matrices"][0].contains(key), key);
        }
        QVERIFY(j["matrices"][4]["alpha"].is_null());
        StopToken stop;
        stop.requestStop();
        QVERIFY(!measureSpectra(*model, TensorSelector{}, {}, &stop));
    }
};

QTEST_APPLESS_MAIN(TestSpectral)
#include "tst_spectral.moc"
