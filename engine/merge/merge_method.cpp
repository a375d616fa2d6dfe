#include "merge/merge_method.h"

#include <algorithm>
#include <array>
#include <span>

namespace organ {
namespace {

struct MethodName {
    MergeMethod method;
    std::string_view name;
};
constexpr std::array<MethodName, 10> kMethods{{
    {MergeMethod::Linear, "linear"},
    {MergeMethod::Slerp, "slerp"},
    {MergeMethod::TaskArithmetic, "task_arithmetic"},
    {MergeMethod::Ties, "ties"},
    {MergeMethod::DareLinear, "dare_linear"},
    {MergeMethod::DareTies, "dare_ties"},
    {MergeMethod::Breadcrumbs, "breadcrumbs"},
    {MergeMethod::BreadcrumbsTies, "breadcrumbs_ties"},
    {MergeMethod::ModelStock, "model_stock"},
    {MergeMethod::Passthrough, "passthrough"},
}};

std::span<const std::string_view> parametersOf(MergeMethod method) {
    static constexpr std::string_view kWeighted[] = {"weight", "normalize"};
    static constexpr std::string_view kSlerp[] = {"t"};
    static constexpr std::string_view kTies[] = {"weight", "density", "normalize"};
    static constexpr std::string_view kDare[] = {"weight", "density", "normalize", "rescale"};
    static constexpr std::string_view kBreadcrumbs[] = {"weight", "density", "gamma", "normalize"};
    switch (method) {
    case MergeMethod::Linear:
    case MergeMethod::TaskArithmetic:
        return kWeighted;
    case MergeMethod::Slerp:
        return kSlerp;
    case MergeMethod::Ties:
        return kTies;
    case MergeMethod::DareLinear:
    case MergeMethod::DareTies:
        return kDare;
    case MergeMethod::Breadcrumbs:
    case MergeMethod::BreadcrumbsTies:
        return kBreadcrumbs;
    case MergeMethod::ModelStock:
    case MergeMethod::Passthrough:
        break;
    }
    return {};
}

} // namespace

std::string_view mergeMethodName(MergeMethod method) {
    const auto it = std::find_if(kMethods.begin(), kMethods.end(),
                                 [&](const MethodName& m) { return m.method == method; });
    return it != kMethods.end() ? it->name : std::string_view("?");
}

std::optional<MergeMethod> mergeMethodFromName(std::string_view name) {
    const auto it =
        std::find_if(kMethods.begin(), kMethods.end(), [&](const MethodName& m) { return m.name == name; });
    return it != kMethods.end() ? std::optional(it->method) : std::nullopt;
}

std::string mergeMethodNames() {
    std::string text;
    for (const auto& m : kMethods) {
        text += (text.empty() ? "" : ", ") + std::string(m.name);
    }
    return text;
}

Sparsify sparsifyOf(MergeMethod method) {
    switch (method) {
    case MergeMethod::Ties:
        return Sparsify::Magnitude;
    case MergeMethod::DareLinear:
    case MergeMethod::DareTies:
        return Sparsify::Bernoulli;
    case MergeMethod::Breadcrumbs:
    case MergeMethod::BreadcrumbsTies:
        return Sparsify::Breadcrumbs;
    default:
        return Sparsify::None;
    }
}

bool usesSignConsensus(MergeMethod method) {
    return method == MergeMethod::Ties || method == MergeMethod::DareTies ||
           method == MergeMethod::BreadcrumbsTies;
}

bool needsBase(MergeMethod method) {
    return method != MergeMethod::Linear && method != MergeMethod::Passthrough;
}

bool usesSeed(MergeMethod method) {
    return sparsifyOf(method) == Sparsify::Bernoulli;
}

bool normalizesByDefault(MergeMethod method) {
    return method == MergeMethod::Linear || method == MergeMethod::Ties;
}

bool takesParameter(MergeMethod method, std::string_view name) {
    const auto names = parametersOf(method);
    return std::find(names.begin(), names.end(), name) != names.end();
}

std::string parameterNamesOf(MergeMethod method) {
    std::string text;
    for (const std::string_view name : parametersOf(method)) {
        text += (text.empty() ? "" : ", ") + std::string(name);
    }
    return text.empty() ? std::string("none") : text;
}

} // namespace organ
