// libFuzzer target: arbitrary bytes as a graft plan (the JSON of `organ assemble --plan`). A
// FormatError (or JSON that does not parse) is the right answer to bad bytes; anything else
// is a bug. A plan that loads must write back to JSON that loads to the same plan.
#include "graft/graft_plan.h"
#include "support/errors.h"
#include "support/text_safety.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace organ;
    if (size > kMaxPlanBytes) {
        return 0; // refused before parsing, as loadGraftPlan does
    }
    const auto json = nlohmann::json::parse(data, data + size, nullptr, false);
    if (json.is_discarded()) {
        return 0;
    }
    try {
        const GraftPlan plan = graftPlanFromJson(json, "fuzz.json");
        const std::string written = dumpJson(graftPlanToJson(plan));
        const GraftPlan again = graftPlanFromJson(nlohmann::json::parse(written), "fuzz.json");
        if (dumpJson(graftPlanToJson(again)) != written) {
            std::abort(); // a plan that does not survive its own round trip
        }
    } catch (const FormatError&) {
    }
    return 0;
}
