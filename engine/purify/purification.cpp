#include "purify/purification.h"

#include <unsupported/Eigen/FFT>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <numeric>
#include <stdexcept>

namespace organ {
namespace {

// Mean and population standard deviation of the finite values.
struct Moments {
    double mean = 0;
    double std = 0;
    std::uint64_t count = 0;
};

Moments momentsOf(const double* v, std::size_t n, const std::vector<bool>& finite, std::size_t offset) {
    Moments m;
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (finite[offset + i]) {
            sum += v[i];
            ++m.count;
        }
    }
    if (m.count == 0) {
        return m;
    }
    m.mean = sum / double(m.count);
    double squares = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (finite[offset + i]) {
            squares += (v[i] - m.mean) * (v[i] - m.mean);
        }
    }
    m.std = std::sqrt(squares / double(m.count));
    return m;
}

// Step 5 of both methods: y takes x's mean and standard deviation (over the finite values).
void restoreScale(double* y, const Moments& x, std::size_t n, const std::vector<bool>& finite,
                  std::size_t offset) {
    const Moments m = momentsOf(y, n, finite, offset);
    for (std::size_t i = 0; i < n; ++i) {
        if (!finite[offset + i]) {
            continue;
        }
        y[i] = m.std == 0 ? x.mean : (y[i] - m.mean) * x.std / m.std + x.mean;
    }
}

// Per row: keep the strongest coefficients up to `keep` of the weighted power.
double spectral(std::vector<double>& v, std::uint64_t rowLength, double keep,
                const std::vector<bool>& finite) {
    Eigen::FFT<double> fft;
    fft.SetFlag(Eigen::FFT<double>::HalfSpectrum);
    const std::size_t n = static_cast<std::size_t>(rowLength);
    std::vector<double> row(n);
    std::vector<std::complex<double>> spectrum;
    std::vector<std::size_t> order;
    std::uint64_t kept = 0;
    std::uint64_t coefficients = 0;
    for (std::size_t start = 0; start + n <= v.size(); start += n) {
        const Moments x = momentsOf(v.data() + start, n, finite, start);
        for (std::size_t i = 0; i < n; ++i) {
            row[i] = finite[start + i] ? v[start + i] : x.mean; // a non-finite value stands aside
        }
        fft.fwd(spectrum, row);
        const std::size_t bins = spectrum.size(); // ⌊n/2⌋ + 1
        coefficients += bins;
        std::vector<double> weighted(bins);
        double total = 0;
        for (std::size_t k = 0; k < bins; ++k) {
            const bool single = k == 0 || (n % 2 == 0 && k == n / 2);
            weighted[k] = std::norm(spectrum[k]) * (single ? 1.0 : 2.0);
            total += weighted[k];
        }
        if (total == 0) {
            kept += bins;
            continue; // a row of no power stays as it is
        }
        order.resize(bins);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return weighted[a] > weighted[b]; });
        double reached = 0;
        std::size_t count = 0;
        while (count < bins && reached < keep * total) {
            reached += weighted[order[count++]];
        }
        for (std::size_t i = count; i < bins; ++i) {
            spectrum[order[i]] = 0;
        }
        kept += count;
        fft.inv(row, spectrum, static_cast<Eigen::Index>(n));
        restoreScale(row.data(), x, n, finite, start);
        for (std::size_t i = 0; i < n; ++i) {
            if (finite[start + i]) {
                v[start + i] = row[i];
            }
        }
    }
    return coefficients == 0 ? 1.0 : double(kept) / double(coefficients);
}

double median(std::vector<double>& values) {
    if (values.empty()) {
        return 0;
    }
    const std::size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(mid), values.end());
    double m = values[mid];
    if (values.size() % 2 == 0) {
        m = (m + *std::max_element(values.begin(), values.begin() + std::ptrdiff_t(mid))) / 2;
    }
    return m;
}

// Over the whole tensor: keep the details that are significant at their scale and the next.
void fractal(std::vector<double>& v, double threshold, double attenuation, const std::vector<bool>& finite) {
    const std::size_t N = v.size();
    std::size_t M = 1;
    while (M < N) {
        M *= 2;
    }
    if (M <= 64) {
        return;
    }
    const unsigned levels = static_cast<unsigned>(std::countr_zero(M)) - 6;
    const Moments x = momentsOf(v.data(), N, finite, 0);
    std::vector<double> a(M, 0.0);
    for (std::size_t i = 0; i < N; ++i) {
        a[i] = finite[i] ? v[i] : x.mean;
    }
    // In place: after level j, [0, M/2^j) holds a_j and [M/2^j, M/2^(j−1)) holds d_j.
    const double r = 1 / std::sqrt(2.0);
    std::vector<double> scratch(M / 2);
    for (unsigned j = 1; j <= levels; ++j) {
        const std::size_t half = M >> j;
        for (std::size_t k = 0; k < half; ++k) {
            scratch[k] = (a[2 * k] - a[2 * k + 1]) * r;
            a[k] = (a[2 * k] + a[2 * k + 1]) * r;
        }
        std::copy(scratch.begin(), scratch.begin() + std::ptrdiff_t(half), a.begin() + std::ptrdiff_t(half));
    }
    auto detail = [&](unsigned j, std::size_t k) -> double& { return a[(M >> j) + k]; };
    // σ_j from the details whose support lies within the data (all of them when none does).
    std::vector<double> sigma(levels + 2, 0.0);
    for (unsigned j = 1; j <= levels; ++j) {
        const std::size_t count = M >> j;
        std::vector<double> magnitudes;
        for (std::size_t k = 0; k < count; ++k) {
            if (((k + 1) << j) <= N) {
                magnitudes.push_back(std::abs(detail(j, k)));
            }
        }
        if (magnitudes.empty()) {
            for (std::size_t k = 0; k < count; ++k) {
                magnitudes.push_back(std::abs(detail(j, k)));
            }
        }
        sigma[j] = median(magnitudes) / 0.6745;
    }
    // Finest first, so that every parent is read before it is attenuated.
    for (unsigned j = 1; j <= levels; ++j) {
        const std::size_t count = M >> j;
        for (std::size_t k = 0; k < count; ++k) {
            const bool significant = std::abs(detail(j, k)) > threshold * sigma[j];
            const bool coherent =
                significant && (j == levels || std::abs(detail(j + 1, k / 2)) > threshold * sigma[j + 1]);
            if (!coherent) {
                detail(j, k) *= attenuation;
            }
        }
    }
    for (unsigned j = levels; j >= 1; --j) {
        const std::size_t half = M >> j;
        std::copy(a.begin() + std::ptrdiff_t(half), a.begin() + std::ptrdiff_t(2 * half), scratch.begin());
        for (std::size_t k = half; k-- > 0;) {
            const double approximation = a[k];
            a[2 * k] = (approximation + scratch[k]) * r;
            a[2 * k + 1] = (approximation - scratch[k]) * r;
        }
    }
    restoreScale(a.data(), x, N, finite, 0);
    for (std::size_t i = 0; i < N; ++i) {
        if (finite[i]) {
            v[i] = a[i];
        }
    }
}

} // namespace

std::string purifyMethodName(PurifyParams::Method method) {
    return method == PurifyParams::Method::Fft ? "fft" : "haar";
}

std::string purifyParamsText(const PurifyParams& params) {
    auto number = [](double v) {
        std::string s = std::to_string(v);
        s.erase(s.find_last_not_of('0') + 1);
        if (s.ends_with('.')) {
            s.pop_back();
        }
        return s;
    };
    return params.method == PurifyParams::Method::Fft
               ? "keep " + number(params.keep)
               : "threshold " + number(params.threshold) + " · attenuation " + number(params.attenuation);
}

std::optional<std::string> purifyParamsProblem(const PurifyParams& params) {
    if (!(params.keep > 0 && params.keep <= 1)) {
        return "keep must be in (0, 1]";
    }
    if (!(params.threshold >= 0) || !std::isfinite(params.threshold)) {
        return "threshold must be 0 or more";
    }
    if (!(params.attenuation >= 0 && params.attenuation <= 1)) {
        return "attenuation must be in [0, 1]";
    }
    return std::nullopt;
}

Purified purify(std::span<const float> values, std::uint64_t rowLength, const PurifyParams& params) {
    if (const auto problem = purifyParamsProblem(params)) {
        throw std::invalid_argument(*problem);
    }
    if (rowLength == 0 || values.size() % rowLength != 0) {
        throw std::invalid_argument("the values are not whole rows");
    }
    std::vector<double> v(values.begin(), values.end());
    std::vector<bool> finite(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        finite[i] = std::isfinite(v[i]);
    }
    Purified out;
    if (params.method == PurifyParams::Method::Fft) {
        out.keptFraction = spectral(v, rowLength, params.keep, finite);
    } else {
        fractal(v, params.threshold, params.attenuation, finite);
    }
    out.values.resize(v.size());
    double change = 0;
    double norm = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
        out.values[i] = finite[i] ? static_cast<float>(v[i]) : values[i];
        if (finite[i]) {
            const double d = double(out.values[i]) - double(values[i]);
            change += d * d;
            norm += double(values[i]) * double(values[i]);
        }
    }
    out.relativeChange = norm == 0 ? 0 : std::sqrt(change / norm);
    return out;
}

} // namespace organ
