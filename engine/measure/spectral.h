#pragma once

#include "anatomy/tensor_selector.h"
#include "gguf/gguf_model.h"
#include "support/job.h"

#include <Eigen/Core>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace organ {

// The heavy-tail fit of one weight matrix's eigenvalue spectrum, as ../shared/specs/spectral-v1.md
// fixes it.
struct SpectralFit {
    std::optional<double> alpha; // none: fewer than 10 positive eigenvalues, or no tail to fit
    double xmin = 0;
    double ksDistance = 0;
    std::uint64_t tail = 0;
    double lambdaMax = 0;
    double stableRank = 0;
    std::optional<double> alphaWeighted;
    double logNorm = 0;
};

// The fit of eigenvalues λ (any order; a copy is sorted).
SpectralFit fitSpectrum(std::vector<double> eigenvalues);
// λ = σ² of `matrix` (Eigen's BDCSVD, values only), ascending.
std::vector<double> eigenvaluesOf(const Eigen::MatrixXd& matrix);
// "over-trained" (α < 2), "under-trained" (α > 6), "well-trained", or "none" without an α.
std::string spectralLabel(const SpectralFit& fit);
// α > 8: the fit is spurious there.
bool isUnreliable(const SpectralFit& fit);

// A tensor of two or more dimensions whose matrices have at least 16 rows and 16 columns: it has a
// spectrum (each expert of a 3-D tensor its own).
bool hasSpectrum(const TensorInfo& tensor);
// λ = σ² of matrix `expert` of `tensor` (0 for a 2-D tensor), dequantized to F32, ascending; the
// tensor must have a spectrum.
std::vector<double> matrixEigenvalues(const GgufModel& model, const TensorInfo& tensor, std::uint64_t expert);

struct MatrixSpectrum {
    std::string name;               // the tensor's, "name[e]" for expert e of a 3-D tensor
    std::uint64_t rows = 0;         // ne[1]
    std::uint64_t columns = 0;      // ne[0]
    std::optional<SpectralFit> fit; // none: fewer than 16 rows or columns
    double seconds = 0;
};

struct SpectralReport {
    std::string model;
    std::vector<MatrixSpectrum> matrices; // in the model's tensor order, experts in order
};

// Every selected tensor of two or more dimensions, one matrix per worker at a time (`threads`, 0:
// one per core), dequantized to F32, in double precision. Cancelled: nullopt.
std::optional<SpectralReport> measureSpectra(const GgufModel& model, const TensorSelector& select,
                                             const ProgressFn& progress = {}, const StopToken* stop = nullptr,
                                             unsigned threads = 0);

// `organ spectral --json`: {"format": "organ-spectral", "spectral": "v1", "matrices": [{"name", the
// spec's keys, "label", "unreliable", "seconds"}]}.
nlohmann::json spectralToJson(const SpectralReport& report);
std::string spectralText(const SpectralReport& report);

} // namespace organ
