#include "measure/spectral.h"

#include "anatomy/anatomy.h"
#include "quant/dequant.h"
#include "support/free_vector.h"
#include "support/parallel_items.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <Eigen/SVD>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>

namespace organ {
namespace {

constexpr std::size_t kMinTail = 10;
constexpr std::uint64_t kMinSide = 16;

nlohmann::json finiteOrNull(const std::optional<double>& v) {
    return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

} // namespace

SpectralFit fitSpectrum(std::vector<double> lambda) {
    std::sort(lambda.begin(), lambda.end());
    SpectralFit fit;
    const std::size_t m = lambda.size();
    if (m == 0) {
        return fit;
    }
    double sum = 0;
    for (const double l : lambda) {
        sum += l;
    }
    fit.lambdaMax = lambda.back();
    fit.stableRank = fit.lambdaMax > 0 ? sum / fit.lambdaMax : 0;
    fit.logNorm = sum > 0 ? std::log10(sum) : -std::numeric_limits<double>::infinity();
    // ln λ from the top: logs[j] = Σ_{i ≥ j} ln λ_i (over positive λ only, which every tail is).
    std::vector<double> logs(m + 1, 0.0);
    for (std::size_t i = m; i-- > 0;) {
        logs[i] = logs[i + 1] + (lambda[i] > 0 ? std::log(lambda[i]) : 0.0);
    }
    std::optional<double> bestD;
    for (std::size_t j = 0; j + kMinTail <= m; ++j) {
        if (lambda[j] <= 0 || (j > 0 && lambda[j] == lambda[j - 1])) {
            continue; // not positive, or the candidate of the same value was tried
        }
        const double xmin = lambda[j];
        const std::size_t n = m - j;
        const double logXmin = std::log(xmin);
        const double spread = logs[j] - double(n) * logXmin;
        if (!(spread > 0)) {
            continue; // every tail value equals xmin: no exponent
        }
        const double alpha = 1 + double(n) / spread;
        double d = 0;
        for (std::size_t k = 1; k <= n; ++k) {
            const double x = lambda[j + k - 1];
            const double f = 1 - std::exp((1 - alpha) * (std::log(x) - logXmin));
            d = std::max({d, std::abs(double(k) / double(n) - f), std::abs(double(k - 1) / double(n) - f)});
        }
        if (!bestD || d < *bestD) {
            bestD = d;
            fit.alpha = alpha;
            fit.xmin = xmin;
            fit.ksDistance = d;
            fit.tail = n;
        }
    }
    if (fit.alpha && fit.lambdaMax > 0) {
        fit.alphaWeighted = *fit.alpha * std::log10(fit.lambdaMax);
    }
    return fit;
}

std::vector<double> eigenvaluesOf(const Eigen::MatrixXd& matrix) {
    const Eigen::BDCSVD<Eigen::MatrixXd> svd(matrix);
    const Eigen::VectorXd& sigma = svd.singularValues();
    std::vector<double> lambda(static_cast<std::size_t>(sigma.size()));
    for (Eigen::Index i = 0; i < sigma.size(); ++i) {
        lambda[static_cast<std::size_t>(i)] = sigma[i] * sigma[i];
    }
    std::sort(lambda.begin(), lambda.end());
    return lambda;
}

bool hasSpectrum(const TensorInfo& tensor) {
    return tensor.nDims >= 2 && tensor.ne[0] >= kMinSide && tensor.ne[1] >= kMinSide;
}

std::vector<double> matrixEigenvalues(const GgufModel& model, const TensorInfo& tensor,
                                      std::uint64_t expert) {
    const std::uint64_t rows = tensor.ne[1];
    const std::uint64_t columns = tensor.ne[0];
    const std::uint64_t count = rows * columns;
    std::vector<float> values(static_cast<std::size_t>(count));
    dequantizeRange(tensor.type, model.tensorData(tensor), expert * count, values.size(), values.data());
    // Stored row after row: row r is values[r·columns …].
    const Eigen::MatrixXd w =
        Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            values.data(), Eigen::Index(rows), Eigen::Index(columns))
            .cast<double>();
    freeVector(values);
    return eigenvaluesOf(w);
}

std::string spectralLabel(const SpectralFit& fit) {
    if (!fit.alpha) {
        return "none";
    }
    return *fit.alpha < 2 ? "over-trained" : *fit.alpha > 6 ? "under-trained" : "well-trained";
}

bool isUnreliable(const SpectralFit& fit) {
    return fit.alpha && *fit.alpha > 8;
}

std::optional<SpectralReport> measureSpectra(const GgufModel& model, const TensorSelector& select,
                                             const ProgressFn& progress, const StopToken* stop,
                                             unsigned threads) {
    SpectralReport report;
    report.model = fileLabel(model.path());
    struct Job {
        const TensorInfo* tensor;
        std::uint64_t expert;
    };
    std::vector<Job> jobs;
    for (const TensorInfo& t : model.tensors()) {
        if (t.nDims < 2 || !select.matches(t.name, classifyTensor(t.name))) {
            continue;
        }
        const std::uint64_t experts = t.ne[2] * t.ne[3];
        for (std::uint64_t e = 0; e < experts; ++e) {
            jobs.push_back({&t, e});
            MatrixSpectrum m;
            m.name = experts > 1 ? t.name + "[" + std::to_string(e) + "]" : t.name;
            m.rows = t.ne[1];
            m.columns = t.ne[0];
            report.matrices.push_back(std::move(m));
        }
    }
    std::mutex progressMutex;
    std::size_t done = 0;
    ProgressThrottle throttle(progress);
    const bool finished = forEachItem(jobs.size(), threads, stop, [&](std::size_t i) {
        const Job& job = jobs[i];
        MatrixSpectrum& m = report.matrices[i];
        const auto start = std::chrono::steady_clock::now();
        if (hasSpectrum(*job.tensor)) {
            m.fit = fitSpectrum(matrixEigenvalues(model, *job.tensor, job.expert));
        }
        m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::lock_guard lock(progressMutex);
        throttle.report(++done, jobs.size(), "fitting");
    });
    if (!finished || (stop != nullptr && stop->stopRequested())) {
        return std::nullopt;
    }
    throttle.report(jobs.size(), jobs.size(), "done", true);
    return report;
}

nlohmann::json spectralToJson(const SpectralReport& report) {
    nlohmann::json matrices = nlohmann::json::array();
    for (const MatrixSpectrum& m : report.matrices) {
        nlohmann::json j = {
            {"name", jsonText(m.name)}, {"rows", m.rows}, {"columns", m.columns}, {"seconds", m.seconds}};
        if (m.fit) {
            const SpectralFit& f = *m.fit;
            j.update({{"alpha", finiteOrNull(f.alpha)},
                      {"xmin", f.alpha ? nlohmann::json(f.xmin) : nlohmann::json(nullptr)},
                      {"ks_distance", f.alpha ? nlohmann::json(f.ksDistance) : nlohmann::json(nullptr)},
                      {"tail", f.tail},
                      {"lambda_max", f.lambdaMax},
                      {"stable_rank", f.stableRank},
                      {"alpha_weighted", finiteOrNull(f.alphaWeighted)},
                      {"log_norm", finiteOrNull(f.logNorm)},
                      {"label", spectralLabel(f)},
                      {"unreliable", isUnreliable(f)}});
        } else {
            j.update({{"alpha", nullptr}, {"label", "none"}, {"unreliable", false}});
        }
        matrices.push_back(std::move(j));
    }
    return {{"format", "organ-spectral"},
            {"version", 1},
            {"spectral", "v1"},
            {"model", jsonText(report.model)},
            {"matrices", std::move(matrices)}};
}

std::string spectralText(const SpectralReport& report) {
    const double seconds =
        std::transform_reduce(report.matrices.begin(), report.matrices.end(), 0.0, std::plus<>(),
                              [](const MatrixSpectrum& m) { return m.seconds; });
    const std::size_t width = std::transform_reduce(
        report.matrices.begin(), report.matrices.end(), std::size_t(10),
        [](std::size_t a, std::size_t b) { return std::max(a, b); },
        [](const MatrixSpectrum& m) { return escapeText(m.name).size() + 2; });
    std::string out = escapeText(report.model) + ": " + std::to_string(report.matrices.size()) +
                      " matrices, spectral v1 (" + fixedDecimals(seconds, 1) + " s of fitting)\n  " +
                      padText("matrix", width) + padText("shape", 14) + padText("α", 8, true) +
                      padText("D", 8, true) + padText("tail", 7, true) + padText("λmax", 11, true) +
                      padText("stable rank", 13, true) + "  label\n";
    for (const MatrixSpectrum& m : report.matrices) {
        out += "  " + padText(escapeText(m.name), width) +
               padText(std::to_string(m.rows) + " × " + std::to_string(m.columns), 14);
        if (!m.fit || !m.fit->alpha) {
            out += padText("—", 8, true) + "  " +
                   (m.fit ? "fewer than 10 positive eigenvalues" : "too small (< 16)") + "\n";
            continue;
        }
        const SpectralFit& f = *m.fit;
        out += padText(fixedDecimals(*f.alpha, 2), 8, true) +
               padText(fixedDecimals(f.ksDistance, 3), 8, true) + padText(std::to_string(f.tail), 7, true) +
               padText(fixedDecimals(f.lambdaMax, 3), 11, true) +
               padText(fixedDecimals(f.stableRank, 2), 13, true) + "  " + spectralLabel(f) +
               (isUnreliable(f) ? " (unreliable)" : "") + "\n";
    }
    return out;
}

} // namespace organ
