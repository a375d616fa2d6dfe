#pragma once

#include "support/rooted_files.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace organ {

// An importance matrix as llama-quantize uses one: for each weight tensor, one weight per column
// (per input of the matrix), the mean of the squared activations that column saw: in_sum2 / counts
// of llama-imatrix's GGUF file. Tensors of stacked experts hold one row of weights per expert,
// one after another (ne[0] × experts values).
struct ImportanceMatrix {
    std::string path;
    std::vector<std::string> datasets;                 // imatrix.datasets: the texts it was computed on
    std::uint32_t chunkCount = 0;                      // imatrix.chunk_count
    std::uint32_t chunkSize = 0;                       // imatrix.chunk_size (tokens per chunk)
    std::map<std::string, std::vector<float>> weights; // by tensor name

    // The weights of `tensor`, or null when the matrix has none for it.
    const std::vector<float>* weightsFor(const std::string& tensor) const;
};

// Reads llama-imatrix's GGUF format (<tensor>.in_sum2 and <tensor>.counts, both F32, and the
// imatrix.* keys). A column whose counts are 0 (no activation ever reached it) weighs 1, as in
// llama-quantize. Throws FormatError naming the file and the problem (not GGUF, a missing key,
// a sum without its counts, shapes that disagree, values that are not finite) or IoError.
ImportanceMatrix readImportanceMatrix(const RootedPath& path);

} // namespace organ
