#pragma once

#include "measure/measure_report.h"
#include "support/rooted_files.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace organ {

inline constexpr int kShardReportVersion = 1;
// The most parts a split set has: its file names count them in five digits.
inline constexpr unsigned kMaxSplitParts = 99999;

// The measurement of one file of a split model, made while the other files may be absent
// (docs/scale.md): its identity in the set, its own header (so that the whole model can be
// rebuilt from the reports) and the θ of each of its tensors.
struct ShardReport {
    std::string path;             // the part as measured
    unsigned part = 0;            // 1-based, from split.no
    unsigned count = 0;           // split.count
    std::uint64_t setTensors = 0; // split.tensors.count
    ZParams params;
    std::vector<std::byte> header; // the part's header: metadata and tensor infos
    std::uint64_t fileSize = 0;
    // From the first part's header when it was readable beside this part (or is this part);
    // empty: unknown until merged.
    std::string firstHeaderSha256;
    std::string architecture;
    std::string name;
    std::vector<std::pair<std::string, ZResult>> tensors; // in the part's order
    std::vector<std::string> warnings;                    // said while measuring, not stored

    bool identityKnown() const { return !firstHeaderSha256.empty(); }
};

// Measures the split part at `path` by itself. Throws FormatError or IoError (the file is not
// a readable part of a split model); a failed or cancelled measurement is returned.
JobResult measureShard(const std::string& path, const MeasureOptions& options, ShardReport& out,
                       const ProgressFn& progress = {}, const StopToken* stop = nullptr);

nlohmann::json shardReportToJson(const ShardReport& report);
// Throws std::runtime_error naming what is wrong; also refuses a header that does not parse or
// whose tensors are not the report's.
ShardReport shardReportFromJson(const nlohmann::json& document);

// The shard report at `path`, within 128 MiB (it carries its part's header, a large vocabulary
// included) and 4 194 304 JSON values (a part of 100 000 tensors is about 1.3 million):
// IoError or FormatError naming the file.
ShardReport readShardReport(const RootedPath& path);

// The whole model's measurement from the reports of all its parts: equal, tensor for tensor, to
// measuring the complete set. Throws std::runtime_error saying which parts are missing, given
// twice or from another set.
MeasuredModel mergeShardReports(const std::vector<ShardReport>& reports);

// The parts 1 … count not among `reports`.
std::vector<unsigned> missingParts(const std::vector<ShardReport>& reports);

} // namespace organ
