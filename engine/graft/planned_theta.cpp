#include "graft/planned_theta.h"

#include "graft/chimera_spec.h"
#include "measure/zmeasure.h"
#include "support/errors.h"

#include <unordered_map>

namespace organ {
namespace {

std::optional<double> thetaOfTensor(const TensorToWrite& t) {
    std::uint64_t elements = 1;
    for (const std::uint64_t n : t.ne) {
        elements *= n;
    }
    const std::uint64_t size = storedBytes(t.type, elements);
    std::vector<std::byte> buffer;
    std::span<const std::byte> bytes = t.source.bytes;
    if (t.source.generate) {
        buffer.resize(static_cast<std::size_t>(size));
        t.source.generate(0, buffer);
        bytes = buffer;
    } else {
        checkPromise(t.source);
        if (bytes.size() != size) {
            throw FormatError(t.name + ": " + std::to_string(bytes.size()) + " bytes where " +
                              std::to_string(size) + " were expected");
        }
    }
    const auto result = measureTensor(t.type, bytes, elements, ZParams{}, 1, nullptr, t.source.mapping);
    return result ? result->theta : std::nullopt;
}

} // namespace

std::vector<PlannedTheta>
measurePlannedTensors(const GraftPlan& plan, const GraftModels& models, const CompatibilityReport& report,
                      const std::vector<std::string>& names,
                      const std::function<void(const PlannedTheta&, std::size_t done)>& each,
                      const StopToken* stop) {
    const GgufWriteSpec spec = chimeraSpec(plan, models, report.layout, ChimeraSources::Writer);
    std::unordered_map<std::string, const TensorToWrite*> byName;
    for (const TensorToWrite& t : spec.tensors) {
        byName.emplace(t.name, &t);
    }
    std::vector<PlannedTheta> out;
    for (const std::string& name : names) {
        if (stop != nullptr && stop->stopRequested()) {
            break;
        }
        PlannedTheta measured;
        measured.name = name;
        const auto it = byName.find(name);
        if (it == byName.end()) {
            measured.error = "the chimera has no tensor " + name;
        } else {
            try {
                measured.theta = thetaOfTensor(*it->second);
            } catch (const std::exception& e) {
                measured.error = e.what();
            }
        }
        out.push_back(std::move(measured));
        if (each) {
            each(out.back(), out.size());
        }
    }
    return out;
}

} // namespace organ
