#pragma once

#include "anatomy/tensor_selector.h"
#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"
#include "purify/purification.h"
#include "support/job.h"
#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace organ {

// What purifying a tensor did: its θ before and after (Z-measure v1, default parameters), the
// relative change ‖y − x‖/‖x‖, the share of coefficients kept (fft) and the type it was stored in.
struct PurifiedTensor {
    std::string name;
    TensorType from = TensorType::F32;
    TensorType to = TensorType::F32;
    std::optional<double> thetaBefore;
    std::optional<double> thetaAfter;
    double relativeChange = 0;
    double keptFraction = 1;
};

// The tensors purified so far, in the order they were made (the writer's engine thread adds,
// another thread may read).
class PurifyLog {
public:
    void add(PurifiedTensor tensor);
    std::vector<PurifiedTensor> tensors() const;

private:
    mutable std::mutex m_mutex;
    std::vector<PurifiedTensor> m_tensors;
};

// The type a purified tensor of `type` is stored in: its own when the engine can quantize to it,
// else F16.
TensorType purifiedType(TensorType type);

// Purifies one tensor of `model` whole and encodes it as `target`, with what was done.
struct PurifiedBytes {
    std::vector<std::byte> bytes;
    PurifiedTensor report;
};
PurifiedBytes purifyTensor(const GgufModel& model, const TensorInfo& tensor, TensorType target,
                           const PurifyParams& params);
// Purifies `values` (the tensor `t`'s, in storage order; θ before is measured on `stored`, the
// values as stored in t.type) and encodes them as `target`, with `importance` when given (ne[0]
// weights per expert).
PurifiedBytes purifyValues(const TensorInfo& t, std::vector<float> values, std::span<const std::byte> stored,
                           TensorType target, const PurifyParams& params,
                           std::span<const float> importance = {});

// The bytes of `tensor` purified and stored as `target`, made whole when first asked for and
// then served chunk by chunk. `once`: the bytes are dropped after the last one is served in
// order (the writer reads each tensor once), so that a model is purified one tensor at a time;
// otherwise they stay while the source lives (the vital signs read rows again and again). What
// was done goes to `log` when given, under `name`: the tensor's name in the model written (a
// chimera's layers may be renumbered). `importance`: weights to encode with (a quantized chimera's
// importance matrix, ne[0] per expert), or empty.
TensorSource purifiedSource(const GgufModel& model, const TensorInfo& tensor, const std::string& name,
                            TensorType target, const PurifyParams& params, bool once,
                            std::shared_ptr<PurifyLog> log, std::vector<float> importance = {});

// The organ.purify.* keys a purified model records: version, method, its parameters and the
// tensors purified.
void setPurifyMetadata(GgufWriteSpec& spec, const PurifyParams& params,
                       const std::vector<std::string>& tensors);

struct PurifyOutcome {
    JobResult written;
    std::vector<PurifiedTensor> tensors;
    std::vector<std::string> findings; // e.g. a type without a quantizer stored as F16
};

// Purifies the tensors of `model` that `select` picks (all of them when it is empty) and writes
// the model to `output` — a GGUF, or an organ directory unless the name ends in ".gguf" — with
// the rest untouched, one tensor in memory at a time. A tensor is stored in purifiedType() (a
// finding says when that is F16). The metadata records organ.purify.* (setPurifyMetadata).
PurifyOutcome purifyModel(const GgufModel& model, const TensorSelector& select, const PurifyParams& params,
                          const RootedPath& output, const ProgressFn& progress = {},
                          const StopToken* stop = nullptr);

// θ before and after of each purified tensor, as `organ purify --json`, `organ assemble --json`
// and the HTTP API report them.
nlohmann::json purifiedToJson(const std::vector<PurifiedTensor>& tensors);
// `organ purify --json`: the output, the purified tensors and the notes.
nlohmann::json purifyOutcomeToJson(const PurifyOutcome& outcome, const std::string& output);

} // namespace organ
