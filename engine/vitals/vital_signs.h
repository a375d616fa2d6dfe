#pragma once

#include "vitals/forward.h"

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace organ {

// How well a model predicts a text: −log p of each next token, natural log.
struct Perplexity {
    std::vector<double> nll; // position i: −log p(tokens[i+1] | tokens[0..i])
    double meanNll = 0;
    double perplexity = 0; // exp(meanNll)
};
// `logits`: vocabulary × tokens, as Transformer::logits gives them.
Perplexity perplexityOf(const Eigen::MatrixXf& logits, const std::vector<std::int32_t>& tokens);
// The same a piece at a time: appends the −log p of each column's next token to `nll`, then
// perplexityOfNll gives the perplexity of them all (as perplexityOf of the pieces side by side).
void appendNll(const Eigen::MatrixXf& logits, const std::vector<std::int32_t>& tokens,
               std::vector<double>& nll);
Perplexity perplexityOfNll(std::vector<double> nll);

// How far a model's next-token distributions are from a reference model's on the same tokens,
// as llama.cpp's perplexity tool reports it with --kl-divergence: KL(reference ‖ model) per
// position, its mean and 99th percentile, and the share of positions whose most likely token
// is the same. Positions are the columns of both (which must match in shape).
struct Divergence {
    std::vector<double> kl;
    double meanKl = 0;
    double p99Kl = 0;
    double topAgreement = 0; // 0…1
};
Divergence divergenceOf(const Eigen::MatrixXf& reference, const Eigen::MatrixXf& model);
// The same a piece of positions at a time: appends each position's KL to `kl` and counts the
// positions whose most likely token is the same in `agree`; divergenceOfKl summarizes them all.
void appendDivergence(const Eigen::Ref<const Eigen::MatrixXf>& reference,
                      const Eigen::Ref<const Eigen::MatrixXf>& model, std::vector<double>& kl,
                      std::size_t& agree);
Divergence divergenceOfKl(std::vector<double> kl, std::size_t agree);

// Which layers matter, from the hidden states entering each layer (blocks + 1 states, the last
// leaving the last layer; embedding × tokens each):
//   angular[l]        = mean over tokens of arccos(cos(x_l, x_{l+1}))/π (Gromov et al., "The
//                       Unreasonable Ineffectiveness of the Deeper Layers"),
//   blockInfluence[l] = 1 − mean cos(x_l, x_{l+1}) (Men et al., ShortGPT),
//   cheapest[n − 1]   = the first of the n consecutive layers whose input and output are the
//                       closest (the smallest mean angular distance d(x_l, x_{l+n})): the
//                       block whose removal the distance says matters least, for n = 1…blocks − 1.
struct LayerImportance {
    std::vector<double> angular;
    std::vector<double> blockInfluence;
    struct Block {
        std::uint32_t first = 0;
        double distance = 0;
    };
    std::vector<Block> cheapest;
};
LayerImportance layerImportanceOf(const std::vector<Eigen::MatrixXf>& hidden);

} // namespace organ
