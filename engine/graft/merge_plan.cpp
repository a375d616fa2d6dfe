#include "graft/merge_plan.h"

#include "support/mapped_file.h"

#include <utility>
#include <vector>

namespace organ {

GraftPlan mergePlanOf(const MergeConfig& config, const std::string& output) {
    GraftPlan plan;
    plan.output = output;
    const MergeSpec& spec = config.spec;
    // One file however it is spelled (./a.gguf, an absolute path, a link): named as first seen, so
    // that the base named again among the models is the base (not merged with itself).
    std::vector<std::pair<FileIdentity, std::string>> seen;
    const auto named = [&](const std::string& path) {
        FileIdentity identity;
        if (!identityOf(path, identity)) {
            return path;
        }
        for (const auto& [known, name] : seen) {
            if (known == identity) {
                return name;
            }
        }
        seen.emplace_back(identity, path);
        return path;
    };
    if (!spec.base.empty()) {
        plan.base = named(spec.base);
    } else if (!config.stack.empty()) {
        plan.base = named(config.stack.front().model);
    } else {
        plan.base = named(spec.models.front().model);
    }
    if (config.spec.method == MergeMethod::Passthrough) {
        GraftOperation stack;
        stack.kind = GraftOperation::Kind::StackLayers;
        for (const MergeConfig::LayerRun& run : config.stack) {
            stack.stack.push_back({plan.modelId(named(run.model)), run.first, run.last});
        }
        if (!stack.stack.empty()) {
            plan.operations.push_back(std::move(stack));
        }
    } else {
        GraftOperation merge;
        merge.kind = GraftOperation::Kind::Merge;
        merge.merge = spec;
        merge.merge.renameModels([&](const std::string& path) { return plan.modelId(named(path)); });
        plan.operations.push_back(std::move(merge));
    }
    if (config.outType) {
        GraftOperation quantize;
        quantize.kind = GraftOperation::Kind::Quantize;
        quantize.quantize.fileType = *config.outType;
        plan.operations.push_back(std::move(quantize));
    }
    return plan;
}

std::optional<std::string> mergeConfigProblem(const MergeConfig& config, const GraftModels& models) {
    if (!config.wholeRange) {
        return std::nullopt;
    }
    const GgufModel& base = models.base();
    const std::uint64_t blocks = base.archValue("block_count").value_or(0);
    const auto [first, end] = *config.wholeRange;
    if (first != 0 || end != blocks) {
        return "the slice's layer_range [" + std::to_string(first) + ", " + std::to_string(end) +
               ") is not every block of " + base.name() + " (" + std::to_string(blocks) +
               "): " + std::string(mergeMethodName(config.spec.method)) +
               " merges whole models; cutting layers is passthrough's";
    }
    return std::nullopt;
}

} // namespace organ
