#pragma once

#include "support/job.h"
#include "support/rooted_files.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace organ {

// An importance matrix as llama.cpp's imatrix tool keeps it: for each weight, the sum over the
// activations it met of each input column's square (in_sum2), and how many activations (tokens)
// that was. A weight holding several matrices (the experts of a mixture) has sums and a count per
// matrix. llama-quantize weighs each column's rounding error by the mean square, sum / count.
struct ImatrixEntry {
    std::vector<float> sums;   // Σ x², `columns()` per matrix, matrix after matrix
    std::vector<float> counts; // per matrix: the activations its sums hold
    std::size_t columns() const { return counts.empty() ? 0 : sums.size() / counts.size(); }
    // sum / count per column, as llama-quantize reads it; 1 for a matrix that met no activation.
    std::vector<float> means() const;
};

struct ImatrixData {
    std::vector<std::string> datasets;           // the texts it was computed on, as their files were named
    std::uint32_t chunkCount = 0;                // chunks of text run
    std::uint32_t chunkSize = 0;                 // tokens per chunk; 0 where the file does not say (.dat)
    std::map<std::string, ImatrixEntry> entries; // by weight name ("blk.0.ffn_up.weight")
    // The entry of `weight`, or null when the matrix has none for it.
    const ImatrixEntry* find(const std::string& weight) const;
};

// Reads llama.cpp's GGUF imatrix file (general.type "imatrix", NAME.in_sum2 and NAME.counts per
// weight) or its legacy .dat (per weight the mean squares times the call count; read back as sums
// of that count, so that the means are the file's). Throws FormatError naming the file and the
// problem, IoError when it cannot be read.
ImatrixData readImatrix(const RootedPath& path);

// Writes `data` as llama-imatrix writes its GGUF file, which llama-quantize --imatrix reads:
// general.type, imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size, then per weight in
// name order NAME.in_sum2 (F32, columns × matrices) and NAME.counts (F32, 1 × matrices). Through
// writeGguf: whole or absent. Fails (never writes) for data without a dataset or with an entry
// whose sums do not fill its matrices.
JobResult writeImatrix(const RootedPath& path, const ImatrixData& data, const StopToken* stop = nullptr);

} // namespace organ
