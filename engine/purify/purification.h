#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace organ {

// Purification v1 (../shared/specs/purify-v1.md): two ways of removing what looks like noise
// from a tensor's values, each restoring the original mean and standard deviation. All
// arithmetic in double; NaN and ±∞ are left where they are and kept out of every statistic.
struct PurifyParams {
    enum class Method { Fft, Haar };
    Method method = Method::Fft;
    double keep = 0.90;       // fft: share of the weighted power kept
    double threshold = 1.0;   // haar: |d| > threshold · σ is significant
    double attenuation = 0.0; // haar: what incoherent details are multiplied by
};

inline constexpr const char* kPurifyVersion = "v1";

std::string purifyMethodName(PurifyParams::Method method);
// "keep 0.9" or "threshold 1 · attenuation 0": the parameters the method uses.
std::string purifyParamsText(const PurifyParams& params);

// What is wrong with the parameters (keep in (0, 1], threshold ≥ 0, attenuation in [0, 1]), or
// nothing.
std::optional<std::string> purifyParamsProblem(const PurifyParams& params);

struct Purified {
    std::vector<float> values;
    double relativeChange = 0; // ‖y − x‖ / ‖x‖ over the finite values (0 when ‖x‖ = 0)
    // fft: the share of the coefficients kept, over every row (1 for rows left as they were).
    double keptFraction = 1;
};

// `values` in storage order, rows of `rowLength` (the tensor's ne[0]; the fft method works per
// row, the haar method on the whole tensor). Throws std::invalid_argument for parameters out
// of range (keep in (0, 1], threshold ≥ 0, attenuation in [0, 1]).
Purified purify(std::span<const float> values, std::uint64_t rowLength, const PurifyParams& params);

} // namespace organ
