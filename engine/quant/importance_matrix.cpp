#include "quant/importance_matrix.h"

#include "gguf/gguf_file.h"
#include "support/errors.h"
#include "support/text_format.h"

#include <cmath>
#include <cstring>

namespace organ {
namespace {

constexpr std::string_view kSums = ".in_sum2";
constexpr std::string_view kCounts = ".counts";

std::uint32_t requiredCount(const GgufFile& file, const char* key, const std::string& label) {
    const MetaValue* value = file.find(key);
    const auto number = value != nullptr ? value->asUInt() : std::nullopt;
    if (!number || *number > UINT32_MAX) {
        throw FormatError(label + ": not an importance matrix: it lacks the count " + key);
    }
    return static_cast<std::uint32_t>(*number);
}

std::vector<float> floatsOf(const GgufFile& file, const TensorInfo& t, const std::string& label) {
    if (t.type != TensorType::F32) {
        throw FormatError(label + ": " + t.name + " is " + std::string(tensorTypeName(t.type)) +
                          ", an importance matrix holds F32");
    }
    std::vector<float> values(static_cast<std::size_t>(t.elements));
    std::memcpy(values.data(), file.tensorData(t).data(), values.size() * sizeof(float));
    for (float v : values) {
        if (!std::isfinite(v)) {
            throw FormatError(label + ": " + t.name + " holds a value that is not finite");
        }
    }
    return values;
}

} // namespace

const std::vector<float>* ImportanceMatrix::weightsFor(const std::string& tensor) const {
    const auto it = weights.find(tensor);
    return it == weights.end() ? nullptr : &it->second;
}

ImportanceMatrix readImportanceMatrix(const RootedPath& path) {
    const std::string label = fileLabel(path.path);
    std::shared_ptr<const GgufFile> file;
    try {
        file = GgufFile::open(path);
    } catch (const FormatError& error) {
        throw FormatError(label + ": not an importance matrix in GGUF format (" + error.what() + ")");
    }
    ImportanceMatrix matrix;
    matrix.path = path.path;
    const MetaValue* datasets = file->find("imatrix.datasets");
    if (datasets == nullptr || !datasets->isArray() || datasets->elementType() != ValueType::String) {
        throw FormatError(label + ": not an importance matrix: it lacks the string array imatrix.datasets");
    }
    datasets->forEachElement([&](const MetaValue& v) {
        matrix.datasets.emplace_back(v.asString().value_or(""));
        return true;
    });
    matrix.chunkCount = requiredCount(*file, "imatrix.chunk_count", label);
    matrix.chunkSize = requiredCount(*file, "imatrix.chunk_size", label);

    std::map<std::string, std::pair<const TensorInfo*, const TensorInfo*>> pairs;
    for (const TensorInfo& t : file->tensors()) {
        if (t.name.ends_with(kSums)) {
            pairs[t.name.substr(0, t.name.size() - kSums.size())].first = &t;
        } else if (t.name.ends_with(kCounts)) {
            pairs[t.name.substr(0, t.name.size() - kCounts.size())].second = &t;
        }
    }
    if (pairs.empty()) {
        throw FormatError(label + ": the importance matrix holds no tensor");
    }
    for (const auto& [name, pair] : pairs) {
        const auto [sums, counts] = pair;
        if (sums == nullptr || counts == nullptr) {
            throw FormatError(label + ": " + name + " has " +
                              (sums == nullptr ? "counts without sums" : "sums without counts"));
        }
        const std::uint64_t columns = sums->ne[0];
        const std::uint64_t experts = columns != 0 ? sums->elements / columns : 0;
        if (experts == 0 || counts->elements != experts) {
            throw FormatError(label + ": " + name + " has " + std::to_string(counts->elements) +
                              " counts for " + std::to_string(experts) + " rows of sums");
        }
        std::vector<float> values = floatsOf(*file, *sums, label);
        const std::vector<float> n = floatsOf(*file, *counts, label);
        for (std::uint64_t e = 0; e < experts; ++e) {
            for (std::uint64_t i = 0; i < columns; ++i) {
                float& v = values[e * columns + i];
                v = n[e] > 0.0f ? v / n[e] : 1.0f;
            }
        }
        matrix.weights.emplace(name, std::move(values));
    }
    return matrix;
}

} // namespace organ
