#pragma once

#include "quant/imatrix_file.h"
#include "support/job.h"
#include "vitals/model_weights.h"

#include <Eigen/Core>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace organ {

// Sums the squares of the activations each layer weight meets, as llama-imatrix's callback does:
// the products of weights named "blk.…", each activation (token) in order, in float.
class ImatrixCollector {
public:
    // `input`: the activations `weight` meets, its columns × tokens (TransformerSession's observer).
    void add(const std::string& weight, const Eigen::MatrixXf& input);
    // What was added, with the file's metadata.
    ImatrixData data(std::vector<std::string> datasets, std::uint32_t chunkCount,
                     std::uint32_t chunkSize) const;

private:
    struct Sums {
        std::vector<float> squares;
        std::uint64_t count = 0;
    };
    std::map<std::string, Sums> m_sums;
};

// The least and most tokens per chunk: llama-imatrix passes over products of fewer than 16
// tokens, and attention grows with the square of a chunk.
inline constexpr std::size_t kMinImatrixChunk = 16;
inline constexpr std::size_t kMaxImatrixChunk = 4096;

struct ImatrixRequest {
    std::string text;        // the calibration text, as read from its file
    std::string dataset;     // how that file is named, recorded in the matrix (imatrix.datasets)
    std::size_t chunk = 512; // tokens per chunk (llama-imatrix -c)
};

struct ImatrixRun {
    ImatrixData matrix;
    std::size_t tokens = 0; // of the whole text
    // exp of the mean −log p over the second half of each chunk: llama-imatrix's estimate.
    double perplexity = 0;
};

// An importance matrix computed with the forward pass as llama-imatrix computes it: the text
// (without one final newline, as llama.cpp reads a file) tokenized whole, cut into chunks of
// `chunk` tokens (the rest dropped), each run on its own with BOS first where the vocabulary asks
// for it; every layer weight's input squared and summed over all tokens. Progress per chunk; a
// stop ends it between layers. Throws VitalsUnavailable, FormatError (a chunk out of range, a text
// shorter than two chunks). Cancelled: nullopt.
std::optional<ImatrixRun> collectImatrix(const ModelWeights& model, const ImatrixRequest& request,
                                         const ProgressFn& progress = {}, const StopToken* stop = nullptr);

// `organ imatrix --json`: the run and where it went (docs/imatrix.md).
nlohmann::json imatrixRunToJson(const ImatrixRun& run, const std::string& output, bool written);

} // namespace organ
