#pragma once

#include "anatomy/anatomy.h"
#include "gguf/gguf_model.h"
#include "graft/graft_plan.h"
#include "merge/merge_spec.h"
#include "quant/imatrix_file.h"
#include "support/finding.h"

#include <memory>
#include <string>
#include <vector>

namespace organ {

// Models by plan id: "base" first, then each donor id.
using NamedModels = std::vector<std::pair<std::string, std::shared_ptr<const GgufModel>>>;

// The models a plan names, opened: "base" and each donor id.
class GraftModels {
public:
    // Opens every model of the plan (beneath `root` when given); throws FormatError or IoError
    // naming the file.
    static GraftModels open(const GraftPlan& plan, const std::shared_ptr<const FileRoot>& root = {});
    // Models already open (the window's): "base" first, then each donor id.
    static GraftModels fromModels(NamedModels models);
    // Reads the importance matrix of the plan's quantize operation, when it names one (open() does).
    // Throws FormatError or IoError naming the file.
    void loadImportance(const GraftPlan& plan, const std::shared_ptr<const FileRoot>& root = {});
    // The matrix read, or null.
    const ImatrixData* importance() const { return m_importance.get(); }

    const GgufModel& base() const { return *m_models.front().second; }
    const GgufModel* find(const std::string& id) const;
    std::vector<std::string> ids() const;

private:
    NamedModels m_models;
    std::shared_ptr<const ImatrixData> m_importance;
};

// What a merged tensor of the chimera is made from: the tensor of this name in each model, and its
// resolved parameters.
struct ChimeraMerge {
    std::string tensor;              // the inputs' name
    std::string base;                // model id, or "" (linear)
    std::vector<std::string> models; // model ids, in params' order
    TensorMergeParams params;
};

// One tensor of the chimera: where its bytes come from and what type they are written as.
struct ChimeraTensor {
    std::string name;       // in the chimera (layers renumbered)
    std::string model;      // "base" or a donor id
    std::string sourceName; // in that model
    TensorType targetType = TensorType::F32;
    bool converted = false;                    // dequantized and requantized to targetType
    int operation = -1;                        // the plan operation that set its source (-1: the base's own)
    std::optional<PurifyParams> purify;        // purified (whole, then stored as targetType)
    int purifyOperation = -1;                  // the plan operation that purifies it
    int quantizeOperation = -1;                // the quantize operation, when it gave it another type
    std::shared_ptr<const ChimeraMerge> merge; // merged (then purified when `purify` is set), as targetType
    int mergeOperation = -1;
};

// What the plan will produce, computed before anything is written.
struct ChimeraLayout {
    std::vector<ChimeraTensor> tensors;
    std::uint32_t blocks = 0;
    std::uint32_t baseBlocks = 0;
    std::vector<std::pair<std::string, MetaValue>> setMetadata;
    std::vector<std::string> removeMetadata;
    std::uint64_t tensorsFromDonors = 0;
    std::uint64_t bytesFromDonors = 0;
    std::optional<PurifyParams> purify;     // the plan's purification (one for every purify operation)
    std::optional<QuantizeRecipe> quantize; // the plan's quantize operation, applied to the whole
    std::optional<MergeSpec> merge;         // the plan's merge operation
    std::uint64_t tensorsMerged = 0;
};

struct CompatibilityReport {
    std::vector<Finding> findings;
    ChimeraLayout layout;
    bool hasErrors() const;
    std::size_t count(Finding::Severity severity) const;
};

// Resolves the plan against the opened models and checks every operation: shapes,
// architectures, embedding widths, vocabularies for embed grafts, dtypes (converted or
// refused), complete layers, the output not being an input.
CompatibilityReport checkGraft(const GraftPlan& plan, const GraftModels& models);

// A plain-text report, one finding a line.
std::string reportText(const CompatibilityReport& report, const GraftPlan& plan);

} // namespace organ
