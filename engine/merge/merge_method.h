#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace organ {

inline constexpr std::uint32_t kMergeVersion = 1;
// Every key a merged model gets about its merge starts with this.
inline constexpr const char* kMergePrefix = "organ.merge.";

// The methods of ../shared/specs/merge-v1.md, named as mergekit names them.
enum class MergeMethod : std::uint8_t {
    Linear,
    Slerp,
    TaskArithmetic,
    Ties,
    DareLinear,
    DareTies,
    Breadcrumbs,
    BreadcrumbsTies,
    ModelStock,
    Passthrough,
};

std::string_view mergeMethodName(MergeMethod method);
std::optional<MergeMethod> mergeMethodFromName(std::string_view name);
// "linear, slerp, …, passthrough": for messages.
std::string mergeMethodNames();

// How a method thins each task vector before combining them.
enum class Sparsify : std::uint8_t {
    None,
    Magnitude,   // ties: the ⌊density·n⌋ largest |δ|
    Bernoulli,   // dare: a seeded mask that keeps each entry with probability density
    Breadcrumbs, // the ⌊gamma·n⌋ largest and then the smallest removed
};
Sparsify sparsifyOf(MergeMethod method);

// Whether the task vectors are combined by ties' sign consensus.
bool usesSignConsensus(MergeMethod method);
// Whether the method needs a base model (all but linear and passthrough).
bool needsBase(MergeMethod method);
// Whether the method is random (dare_*): it records its seed.
bool usesSeed(MergeMethod method);
// `normalize` when the configuration does not say: true for linear and ties, else false.
bool normalizesByDefault(MergeMethod method);

// The parameters a method reads. Per model (or as a global default): weight, density, gamma.
// Global only: t (slerp), normalize, rescale (dare_*).
bool takesParameter(MergeMethod method, std::string_view name);
// The parameters `method` takes, for messages ("weight, density, normalize").
std::string parameterNamesOf(MergeMethod method);

} // namespace organ
