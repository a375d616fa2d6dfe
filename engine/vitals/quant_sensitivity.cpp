#include "vitals/quant_sensitivity.h"

#include "anatomy/anatomy.h"
#include "measure/model_measure.h"
#include "measure/quant_error.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "quant/quantized_source.h"
#include "support/errors.h"
#include "support/text_format.h"
#include "vitals/layer_states.h"

#include <chrono>
#include <map>

namespace organ {
namespace {

constexpr std::string_view kGroupingNames[] = {"tensor", "layer", "role"};

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The tensor's bytes in `type` as organ quantize encodes them, made once when first read.
TensorSource encodedSource(const GgufModel& model, const TensorInfo& tensor, TensorType type,
                           std::vector<float> weights, unsigned threads) {
    const std::uint64_t size = storedBytes(type, tensor.elements);
    TensorSource encoder = quantizedSource(model, tensor, type, std::move(weights), threads);
    return madeSource(
        [encoder = std::move(encoder), size] {
            std::vector<std::byte> out(static_cast<std::size_t>(size));
            encoder.generate(0, out);
            return out;
        },
        size, false, tensor.name);
}

// The model's own run on the text: the positions scored and its logits on them, and — when they
// fit in the memory vital signs allow — the hidden states entering each layer of every piece, from
// which a group's run starts at its first changed layer.
std::optional<StatesRun> runReference(const ModelWeights& original, const SensitivityRequest& request,
                                      unsigned threads, SensitivityReport& report, const StopToken* stop) {
    // The text is checked (tokens, chunks, the activations' memory) as vital signs check it.
    VitalsRequest vitals;
    vitals.text = request.text;
    vitals.chunk = request.chunk;
    vitals.continuation = 0;
    vitals.layerImportance = false;
    const std::optional<VitalsReport> own = takeVitals(original, {}, vitals, {}, stop);
    if (!own) {
        return std::nullopt;
    }
    report.tokens = own->tokens.size();
    report.scored = own->scored;
    report.perplexity = own->perplexity.perplexity;
    const Tokenizer tokenizer = Tokenizer::fromWeights(original);
    const auto bos = tokenizer.addsBos() ? std::optional<std::int32_t>(tokenizer.bos()) : std::nullopt;
    Transformer reference(original);
    reference.setThreads(threads);
    const bool keep = statesFit(original, reference.shape(), own->tokens.size());
    if (!keep) {
        const TransformerShape& shape = reference.shape();
        report.notes.push_back("the hidden states of the text would take " +
                               humanBytes(std::uint64_t(shape.blocks + 1) * shape.embedding *
                                          own->tokens.size() * sizeof(float)) +
                               ": every group runs from the first layer");
    }
    return runKeepingStates(reference, own->tokens, request.chunk, bos, keep, stop);
}

// The first layer a group's tensors change: a layer's own number, the number of blocks for the
// output projection (only the output runs again); none for the token embedding and the other
// tensors outside the layers, which change what enters the first layer (the run starts from the
// tokens).
std::optional<std::uint32_t> firstChangedLayer(const QuantGroup& group, std::uint32_t blocks) {
    std::uint32_t first = blocks;
    for (const TensorInfo* t : group.tensors) {
        const TensorAnatomy anatomy = classifyTensor(t->name);
        if (!anatomy.layer && t->name != "output.weight") {
            return std::nullopt;
        }
        first = std::min(first, anatomy.layer.value_or(blocks));
    }
    return first;
}

// KL(model ‖ `transformer`) on the reference's positions, `transformer` run from layer `first` on
// where the reference kept its states (from the tokens without `first`).
std::optional<TypeSensitivity> measureGroup(const Transformer& transformer, const StatesRun& reference,
                                            std::optional<std::uint32_t> first, const StopToken* stop) {
    const auto got = runFromLayer(transformer, reference, first, stop);
    if (!got) {
        return std::nullopt;
    }
    const Divergence d = divergenceOf(reference.scored.logits, got->logits);
    TypeSensitivity at;
    at.klMean = d.meanKl;
    at.klP99 = d.p99Kl;
    at.topAgreement = d.topAgreement;
    return at;
}

} // namespace

std::optional<QuantGrouping> quantGroupingFromName(std::string_view name) {
    for (std::size_t i = 0; i < std::size(kGroupingNames); ++i) {
        if (kGroupingNames[i] == name) {
            return static_cast<QuantGrouping>(i);
        }
    }
    return std::nullopt;
}

std::string_view quantGroupingName(QuantGrouping grouping) {
    return kGroupingNames[static_cast<std::size_t>(grouping)];
}

bool groupFits(const QuantGroup& group, TensorType type) {
    return std::all_of(group.tensors.begin(), group.tensors.end(),
                       [&](const TensorInfo* t) { return t->ne[0] % traitsOf(type).blockSize == 0; });
}

std::vector<QuantGroup> quantGroups(const GgufModel& model, QuantGrouping grouping) {
    std::vector<QuantGroup> groups;
    std::map<std::string, std::size_t> byName;
    for (const TensorInfo* t : quantizableTensors(model)) {
        const TensorAnatomy anatomy = classifyTensor(t->name);
        std::string name = t->name;
        if (anatomy.layer && grouping == QuantGrouping::Layer) {
            name = "blk." + std::to_string(*anatomy.layer);
        } else if (anatomy.layer && grouping == QuantGrouping::Role) {
            name = anatomy.role;
        }
        const auto [it, added] = byName.emplace(name, groups.size());
        if (added) {
            groups.push_back({name, {}});
        }
        groups[it->second].tensors.push_back(t);
    }
    return groups;
}

std::optional<SensitivityReport> measureSensitivity(const std::shared_ptr<const GgufModel>& model,
                                                    const ImatrixData* importance,
                                                    const std::string& imatrixFile,
                                                    const SensitivityRequest& request,
                                                    const ProgressFn& progress, const StopToken* stop) {
    for (TensorType type : request.types) {
        if (!canQuantizeTo(type)) {
            throw FormatError(std::string(tensorTypeName(type)) + ": the engine writes " +
                              writableTypesText());
        }
    }
    const unsigned threads = request.threads == 0 ? defaultThreadCount() : request.threads;
    SensitivityReport report;
    report.model = fileLabel(model->path());
    report.grouping = request.grouping;
    report.types = request.types;
    report.importance = importance != nullptr;
    report.chunk = request.chunk;
    const std::vector<QuantGroup> groups = quantGroups(*model, request.grouping);
    // Each tensor's importance weights, checked before anything runs (as organ quantize does).
    std::map<std::string, std::vector<float>> weights;
    if (importance != nullptr) {
        for (const QuantGroup& g : groups) {
            for (const TensorInfo* t : g.tensors) {
                weights[t->name] = importanceWeightsOf(*importance, imatrixFile, *t, report.notes);
            }
        }
    }
    const ModelWeights original = ModelWeights::ofModel(model);
    auto start = std::chrono::steady_clock::now();
    const std::optional<StatesRun> reference = runReference(original, request, threads, report, stop);
    if (!reference) {
        return std::nullopt;
    }
    report.referenceSeconds = secondsSince(start);
    std::uint64_t runs = 0;
    for (const QuantGroup& g : groups) {
        for (TensorType type : request.types) {
            runs += groupFits(g, type) ? 1 : 0;
        }
    }
    ProgressThrottle throttle(progress);
    std::uint64_t done = 0;
    for (const QuantGroup& g : groups) {
        GroupSensitivity out;
        out.name = g.name;
        for (const TensorInfo* t : g.tensors) {
            out.tensors.push_back(t->name);
            out.elements += t->elements;
            out.bytes += t->bytes;
        }
        start = std::chrono::steady_clock::now();
        for (TensorType type : request.types) {
            if (!groupFits(g, type)) {
                continue;
            }
            throttle.report(done++, runs, "quantizing one group at a time");
            ModelWeights planned = original;
            for (const TensorInfo* t : g.tensors) {
                const auto w = weights.find(t->name);
                std::vector<float> tensorWeights =
                    w != weights.end() && takesImportance(type) ? w->second : std::vector<float>();
                planned.replaceTensor(t->name, type,
                                      encodedSource(*model, *t, type, std::move(tensorWeights), threads));
            }
            Transformer transformer(std::move(planned));
            transformer.setThreads(threads);
            auto at =
                measureGroup(transformer, *reference, firstChangedLayer(g, transformer.shape().blocks), stop);
            if (!at) {
                return std::nullopt;
            }
            at->type = type;
            for (const TensorInfo* t : g.tensors) {
                at->bytes += storedBytes(type, t->elements);
            }
            out.types.push_back(*at);
        }
        out.seconds = secondsSince(start);
        report.groups.push_back(std::move(out));
    }
    throttle.report(runs, runs, "done", true);
    return report;
}

} // namespace organ
