#include "vitals/vital_signs.h"

#include "support/errors.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace organ {
namespace {

// log-probabilities of one column of logits, in double precision.
Eigen::VectorXd logSoftmax(const Eigen::Ref<const Eigen::VectorXf>& logits) {
    const Eigen::VectorXd x = logits.cast<double>();
    const double top = x.maxCoeff();
    const double lse = top + std::log((x.array() - top).exp().sum());
    return x.array() - lse;
}

// The mean of one or more values, summed in order.
double meanOf(const std::vector<double>& values) {
    double sum = 0;
    for (const double v : values) {
        sum += v;
    }
    return sum / static_cast<double>(values.size());
}

// Mean over tokens (columns) of the cosine between two hidden states and of the angular
// distance arccos(cos)/π.
std::pair<double, double> meanCosineAndAngle(const Eigen::MatrixXf& a, const Eigen::MatrixXf& b) {
    double cosSum = 0;
    double angleSum = 0;
    for (Eigen::Index c = 0; c < a.cols(); ++c) {
        const double na = a.col(c).cast<double>().norm();
        const double nb = b.col(c).cast<double>().norm();
        const double cos =
            na == 0 || nb == 0
                ? 1.0
                : std::clamp(a.col(c).cast<double>().dot(b.col(c).cast<double>()) / (na * nb), -1.0, 1.0);
        cosSum += cos;
        angleSum += std::acos(cos) / std::numbers::pi;
    }
    const double n = static_cast<double>(std::max<Eigen::Index>(1, a.cols()));
    return {cosSum / n, angleSum / n};
}

} // namespace

void appendNll(const Eigen::MatrixXf& logits, const std::vector<std::int32_t>& tokens,
               std::vector<double>& nll) {
    for (std::size_t i = 0; i + 1 < tokens.size() && static_cast<Eigen::Index>(i) < logits.cols(); ++i) {
        const auto next = static_cast<Eigen::Index>(tokens[i + 1]);
        nll.push_back(-logSoftmax(logits.col(static_cast<Eigen::Index>(i)))(next));
    }
}

Perplexity perplexityOfNll(std::vector<double> nll) {
    Perplexity out;
    out.nll = std::move(nll);
    if (!out.nll.empty()) {
        out.meanNll = meanOf(out.nll);
        out.perplexity = std::exp(out.meanNll);
    }
    return out;
}

Perplexity perplexityOf(const Eigen::MatrixXf& logits, const std::vector<std::int32_t>& tokens) {
    std::vector<double> nll;
    appendNll(logits, tokens, nll);
    return perplexityOfNll(std::move(nll));
}

void appendDivergence(const Eigen::Ref<const Eigen::MatrixXf>& reference,
                      const Eigen::Ref<const Eigen::MatrixXf>& model, std::vector<double>& kl,
                      std::size_t& agree) {
    if (reference.rows() != model.rows() || reference.cols() != model.cols()) {
        throw FormatError("divergence: the models' vocabularies or positions differ (" +
                          std::to_string(reference.rows()) + " × " + std::to_string(reference.cols()) +
                          " and " + std::to_string(model.rows()) + " × " + std::to_string(model.cols()) +
                          ")");
    }
    for (Eigen::Index c = 0; c < reference.cols(); ++c) {
        const Eigen::VectorXd p = logSoftmax(reference.col(c));
        const Eigen::VectorXd q = logSoftmax(model.col(c));
        kl.push_back(std::max(0.0, (p.array().exp() * (p - q).array()).sum()));
        Eigen::Index a = 0;
        Eigen::Index b = 0;
        reference.col(c).maxCoeff(&a);
        model.col(c).maxCoeff(&b);
        agree += a == b;
    }
}

Divergence divergenceOfKl(std::vector<double> kl, std::size_t agree) {
    Divergence out;
    out.kl = std::move(kl);
    if (!out.kl.empty()) {
        out.meanKl = meanOf(out.kl);
        std::vector<double> sorted = out.kl;
        std::sort(sorted.begin(), sorted.end());
        // The nearest-rank 99th percentile.
        const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(sorted.size())));
        out.p99Kl = sorted[std::max<std::size_t>(1, rank) - 1];
        out.topAgreement = static_cast<double>(agree) / static_cast<double>(out.kl.size());
    }
    return out;
}

Divergence divergenceOf(const Eigen::MatrixXf& reference, const Eigen::MatrixXf& model) {
    std::vector<double> kl;
    std::size_t agree = 0;
    appendDivergence(reference, model, kl, agree);
    return divergenceOfKl(std::move(kl), agree);
}

LayerImportance layerImportanceOf(const std::vector<Eigen::MatrixXf>& hidden) {
    LayerImportance out;
    if (hidden.size() < 2) {
        return out;
    }
    const std::size_t blocks = hidden.size() - 1;
    for (std::size_t l = 0; l < blocks; ++l) {
        const auto [cos, angle] = meanCosineAndAngle(hidden[l], hidden[l + 1]);
        out.angular.push_back(angle);
        out.blockInfluence.push_back(1.0 - cos);
    }
    for (std::size_t n = 1; n < blocks; ++n) {
        LayerImportance::Block best{0, 2.0};
        for (std::size_t l = 0; l + n <= blocks; ++l) {
            const double d = n == 1 ? out.angular[l] : meanCosineAndAngle(hidden[l], hidden[l + n]).second;
            if (d < best.distance) {
                best = {static_cast<std::uint32_t>(l), d};
            }
        }
        out.cheapest.push_back(best);
    }
    return out;
}

} // namespace organ
