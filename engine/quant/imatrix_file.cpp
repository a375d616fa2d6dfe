#include "quant/imatrix_file.h"

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "support/byte_reader.h"
#include "support/errors.h"
#include "support/mapped_file.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <cmath>
#include <cstring>

namespace organ {
namespace {

constexpr std::string_view kSumsSuffix = ".in_sum2";
constexpr std::string_view kCountsSuffix = ".counts";

// The weight a tensor of the file belongs to, and whether it holds its sums or its counts;
// nothing for another tensor (llama.cpp passes those over).
struct Part {
    std::string weight;
    bool sums = false;
};

std::optional<Part> partOf(const std::string& tensor) {
    for (const auto& [suffix, sums] : {std::pair{kSumsSuffix, true}, std::pair{kCountsSuffix, false}}) {
        if (tensor.size() > suffix.size() && tensor.ends_with(suffix)) {
            return Part{tensor.substr(0, tensor.size() - suffix.size()), sums};
        }
    }
    return std::nullopt;
}

std::vector<float> floatsOf(const GgufFile& file, const TensorInfo& t) {
    const std::span<const std::byte> bytes = file.tensorData(t);
    std::vector<float> values(static_cast<std::size_t>(t.elements));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
    return values;
}

ImatrixData readGgufImatrix(const RootedPath& path, const std::string& label) {
    const auto file = GgufFile::open(path);
    const MetaValue* type = file->find("general.type");
    const auto typeText = type ? type->asString() : std::nullopt;
    if (!typeText || *typeText != "imatrix") {
        throw FormatError(label + ": not an importance matrix (general.type is " +
                          (typeText ? "'" + escapeText(*typeText) + "'" : std::string("missing")) + ")");
    }
    ImatrixData data;
    if (const MetaValue* datasets = file->find("imatrix.datasets"); datasets && datasets->isArray()) {
        datasets->forEachElement([&](const MetaValue& v) {
            data.datasets.emplace_back(v.asString().value_or(""));
            return true;
        });
    }
    auto count = [&](const char* key) {
        const MetaValue* v = file->find(key);
        const auto n = v ? v->asUInt() : std::nullopt;
        return static_cast<std::uint32_t>(std::min<std::uint64_t>(n.value_or(0), UINT32_MAX));
    };
    data.chunkCount = count("imatrix.chunk_count");
    data.chunkSize = count("imatrix.chunk_size");
    // Sums and counts by weight, each checked to be F32 of the shapes llama-imatrix writes.
    std::map<std::string, std::pair<const TensorInfo*, const TensorInfo*>> parts;
    for (const TensorInfo& t : file->tensors()) {
        const auto part = partOf(t.name);
        if (!part) {
            continue;
        }
        if (t.type != TensorType::F32 || t.ne[2] != 1 || t.ne[3] != 1 || (!part->sums && t.ne[0] != 1)) {
            throw FormatError(label + ": " + escapeText(t.name) + " is " +
                              std::string(tensorTypeName(t.type)) + " " + t.shapeText() + ", expected F32 " +
                              (part->sums ? "columns × matrices" : "1 × matrices"));
        }
        auto& slot = part->sums ? parts[part->weight].first : parts[part->weight].second;
        slot = &t;
    }
    for (const auto& [weight, pair] : parts) {
        const auto& [sums, counts] = pair;
        if (sums == nullptr || counts == nullptr) {
            throw FormatError(label + ": " + escapeText(weight) + " has " +
                              (sums ? "sums (in_sum2)" : "counts") + " but no " +
                              (sums ? "counts" : "sums (in_sum2)"));
        }
        if (sums->ne[1] != counts->ne[1] || sums->elements == 0) {
            throw FormatError(label + ": " + escapeText(weight) + " has " + std::to_string(counts->ne[1]) +
                              " counts for sums of " + sums->shapeText());
        }
        ImatrixEntry entry{floatsOf(*file, *sums), floatsOf(*file, *counts)};
        for (const float c : entry.counts) {
            if (!(c >= 0) || !std::isfinite(c)) {
                throw FormatError(label + ": " + escapeText(weight) + " has a count of " + std::to_string(c));
            }
        }
        data.entries.emplace(weight, std::move(entry));
    }
    if (data.entries.empty()) {
        throw FormatError(label + ": an importance matrix without any weight's sums (no .in_sum2 tensor)");
    }
    return data;
}

// The legacy .dat: i32 entries, then per entry i32 name length, the name, i32 call count, i32
// value count and the values (mean square × calls); then, in later versions, i32 chunks and the
// dataset's name (i32 length and bytes).
ImatrixData readLegacyImatrix(std::span<const std::byte> bytes, const std::string& label) {
    ByteReader in(bytes, label);
    ImatrixData data;
    const auto entries = in.read<std::int32_t>("entry count");
    if (entries < 1) {
        throw FormatError(label + ": no entries (" + std::to_string(entries) + ")");
    }
    // Each entry takes at least 13 bytes: a declared count larger than that is refused before
    // anything is read (the loop would fail at the end of the file anyway, but with a late message).
    if (static_cast<std::uint64_t>(entries) > in.remaining() / 13) {
        throw FormatError(label + ": " + std::to_string(entries) + " entries do not fit in " +
                          std::to_string(bytes.size()) + " bytes: not an importance matrix");
    }
    auto positive = [&](std::string_view what, std::uint64_t limit) {
        const auto n = in.read<std::int32_t>(what);
        if (n < 1 || static_cast<std::uint64_t>(n) > limit) {
            throw FormatError(label + ": " + std::string(what) + " " + std::to_string(n) + " at byte " +
                              std::to_string(in.position() - 4) + " is out of range");
        }
        return static_cast<std::uint64_t>(n);
    };
    for (std::int32_t i = 0; i < entries; ++i) {
        const std::uint64_t length = positive("name length", in.remaining());
        const std::string name(reinterpret_cast<const char*>(bytes.data() + in.position()), length);
        in.seek(in.position() + length);
        const std::uint64_t calls = positive("call count", INT32_MAX);
        const std::uint64_t values = positive("value count", in.remaining() / sizeof(float));
        ImatrixEntry entry;
        entry.sums.resize(static_cast<std::size_t>(values));
        std::memcpy(entry.sums.data(), bytes.data() + in.position(), entry.sums.size() * sizeof(float));
        in.seek(in.position() + values * sizeof(float));
        entry.counts = {static_cast<float>(calls)};
        if (!data.entries.emplace(name, std::move(entry)).second) {
            throw FormatError(label + ": " + escapeText(name) + " appears twice");
        }
    }
    if (in.remaining() > 0) {
        data.chunkCount = static_cast<std::uint32_t>(std::max(0, in.read<std::int32_t>("chunk count")));
        const std::uint64_t length = static_cast<std::uint64_t>(in.read<std::int32_t>("dataset name length"));
        in.require(length, "dataset name");
        data.datasets.emplace_back(reinterpret_cast<const char*>(bytes.data() + in.position()), length);
    }
    return data;
}

} // namespace

std::vector<float> ImatrixEntry::means() const {
    std::vector<float> out(sums.size(), 1.0f);
    const std::size_t n = columns();
    for (std::size_t m = 0; m < counts.size(); ++m) {
        if (counts[m] > 0) {
            for (std::size_t j = m * n; j < (m + 1) * n; ++j) {
                out[j] = sums[j] / counts[m];
            }
        }
    }
    return out;
}

const ImatrixEntry* ImatrixData::find(const std::string& weight) const {
    const auto it = entries.find(weight);
    return it == entries.end() ? nullptr : &it->second;
}

ImatrixData readImatrix(const RootedPath& path) {
    const std::string label = fileLabel(path.path);
    const auto mapping = MappedFile::open(path);
    const std::span<const std::byte> bytes = mapping->bytes();
    if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) {
        return readGgufImatrix(path, label);
    }
    return readLegacyImatrix(bytes, label);
}

JobResult writeImatrix(const RootedPath& path, const ImatrixData& data, const StopToken* stop) {
    if (data.datasets.empty()) {
        return JobResult::failed(fileLabel(path.path) +
                                 ": an importance matrix names the text it was computed on (no dataset)");
    }
    GgufWriteSpec spec;
    spec.set("general.type", MetaValue::fromString("imatrix"));
    spec.set("imatrix.datasets", MetaValue::fromStrings(data.datasets));
    spec.set("imatrix.chunk_count", MetaValue::fromU32(data.chunkCount));
    spec.set("imatrix.chunk_size", MetaValue::fromU32(data.chunkSize));
    for (const auto& [name, entry] : data.entries) {
        const std::size_t matrices = entry.counts.size();
        if (matrices == 0 || entry.sums.empty() || entry.sums.size() % matrices != 0) {
            return JobResult::failed(fileLabel(path.path) + ": " + escapeText(name) + ": " +
                                     std::to_string(entry.sums.size()) + " sums do not fill " +
                                     std::to_string(matrices) + " matrices");
        }
        // As ggml writes them: a dimension of one at the end is not counted.
        const std::uint32_t dims = matrices > 1 ? 2 : 1;
        TensorToWrite sums{
            name + std::string(kSumsSuffix), TensorType::F32, dims, {entry.columns(), matrices, 1, 1}, {}};
        sums.source.bytes = std::as_bytes(std::span<const float>(entry.sums));
        TensorToWrite counts{
            name + std::string(kCountsSuffix), TensorType::F32, dims, {1, matrices, 1, 1}, {}};
        counts.source.bytes = std::as_bytes(std::span<const float>(entry.counts));
        spec.tensors.push_back(std::move(sums));
        spec.tensors.push_back(std::move(counts));
    }
    return writeGguf(path, spec, {}, stop);
}

} // namespace organ
