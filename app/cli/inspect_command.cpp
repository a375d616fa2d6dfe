#include "anatomy/anatomy.h"
#include "cli.h"
#include "organs/organ_directory.h"

#include "anatomy/model_summary.h"
#include "gguf/gguf_model.h"
#include "support/text_safety.h"

#include <cstdio>
#include <iostream>
#include <limits>

namespace organ::cli {

int runInspect(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--tensors", "--metadata", "--json"}, {"--max-array"});
    if (parsed.positional().empty()) {
        throw UsageError{"inspect needs at least one GGUF file"};
    }
    const bool json = parsed.flag("--json");
    const std::uint64_t maxArray =
        parsed.unsignedOption("--max-array", json ? std::numeric_limits<std::uint64_t>::max() : 8);
    bool first = true;
    return forEachModel("inspect", parsed.positional(),
                        [&](const std::string&, const GgufModel& model, nlohmann::json& documents) {
                            const ModelAnatomy anatomy = analyzeAnatomy(model);
                            if (json) {
                                documents.push_back(modelToJson(model, anatomy, maxArray));
                                return kExitOk;
                            }
                            std::cout << (first ? "" : "\n") << summaryText(model, anatomy);
                            if (parsed.flag("--tensors")) {
                                std::cout << "\n" << tensorTableText(model, anatomy);
                            }
                            if (parsed.flag("--metadata")) {
                                std::cout << "\n" << metadataText(model, static_cast<std::size_t>(maxArray));
                            }
                            first = false;
                            return kExitOk;
                        });
}

} // namespace organ::cli
