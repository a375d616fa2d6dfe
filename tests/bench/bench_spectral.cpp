// Spectral health's cost: seconds to fit one weight matrix as organ spectral does (values to
// double, BDCSVD's singular values, the v1 tail fit), for a matrix of Gaussian values with a
// low-rank part (a spectrum with a tail).
//
//   bench_spectral [ROWS COLUMNS]        (default 4096 × 14336: a 7–8B model's feed-forward matrix)
#include "measure/spectral.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <string>

using namespace organ;

int main(int argc, char** argv) {
    long rows = 4096;
    long columns = 14336;
    if (argc == 3) {
        rows = std::stol(argv[1]);
        columns = std::stol(argv[2]);
    } else if (argc != 1) {
        std::fprintf(stderr, "usage: bench_spectral [ROWS COLUMNS]\n");
        return 2;
    }
    std::mt19937 rng(7);
    std::normal_distribution<double> normal;
    Eigen::MatrixXd w(rows, columns);
    for (Eigen::Index i = 0; i < w.size(); ++i) {
        w.data()[i] = 0.02 * normal(rng);
    }
    Eigen::MatrixXd a(rows, 16);
    Eigen::MatrixXd b(16, columns);
    for (Eigen::Index i = 0; i < a.size(); ++i) {
        a.data()[i] = normal(rng);
    }
    for (Eigen::Index i = 0; i < b.size(); ++i) {
        b.data()[i] = 0.01 * normal(rng);
    }
    w += a * b;
    const auto start = std::chrono::steady_clock::now();
    const std::vector<double> lambda = eigenvaluesOf(w);
    const double svd = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const SpectralFit fit = fitSpectrum(lambda);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "bench_spectral: %ld × %ld: %.1f s (singular values %.1f s, the tail fit %.2f s), alpha %.2f, "
        "one thread\n",
        rows, columns, total, svd, total - svd, fit.alpha.value_or(0.0));
    return 0;
}
