#include "vitals/quant_sensitivity.h"

#include "anatomy/anatomy.h"
#include "measure/model_measure.h"
#include "measure/quant_error.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "quant/quantized_source.h"
#include "support/errors.h"
#include "support/text_format.h"

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

// The model's own run on the request's text.
std::optional<SensitivityReference> runReference(const std::string& path, const ModelWeights& original,
                                                 const SensitivityRequest& request, unsigned threads,
                                                 const StopToken* stop) {
    const auto start = std::chrono::steady_clock::now();
    // The text is checked (tokens, chunks) as vital signs check it, and for the logits of every
    // scored position, which are kept: the reference's, and a group's beside them.
    VitalsRequest vitals;
    vitals.text = request.text;
    vitals.chunk = request.chunk;
    vitals.continuation = 0;
    vitals.layerImportance = false;
    const Tokenizer tokenizer = Tokenizer::fromWeights(original);
    Transformer reference(original);
    reference.setThreads(threads);
    checkActivationMemory(original, reference.shape(), vitalsTokens(original, tokenizer, vitals).size(),
                          request.chunk, 0, false, true, ScoredLogits::Kept);
    const std::optional<VitalsReport> own = takeVitals(original, {}, vitals, {}, stop);
    if (!own) {
        return std::nullopt;
    }
    SensitivityReference run;
    run.model = path;
    run.text = request.text;
    run.perplexity = own->perplexity.perplexity;
    run.tokens = own->tokens;
    run.chunk = request.chunk;
    run.bos = tokenizer.leadingBos();
    const bool keep = statesFit(original, reference.shape(), run.tokens.size());
    if (!keep) {
        const TransformerShape& shape = reference.shape();
        run.notes.push_back("the hidden states of the text would take " +
                            humanBytes(std::uint64_t(shape.blocks + 1) * shape.embedding * run.tokens.size() *
                                       sizeof(float)) +
                            ": every group runs from the first layer");
    }
    std::optional<StatesRun> states = runKeepingStates(reference, run.tokens, run.chunk, run.bos, keep, stop);
    if (!states) {
        return std::nullopt;
    }
    static_cast<StatesRun&>(run) = std::move(*states);
    run.seconds = secondsSince(start);
    return run;
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
                                                    const ProgressFn& progress, const StopToken* stop,
                                                    std::shared_ptr<const SensitivityReference>* reference) {
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
    std::shared_ptr<const SensitivityReference> kept =
        reference != nullptr && *reference && (*reference)->matches(*model, request) ? *reference : nullptr;
    if (!kept) {
        auto run = runReference(model->path(), original, request, threads, stop);
        if (!run) {
            return std::nullopt;
        }
        kept = std::make_shared<const SensitivityReference>(std::move(*run));
        report.referenceSeconds = kept->seconds;
        if (reference != nullptr) {
            *reference = kept;
        }
    }
    const SensitivityReference& own = *kept;
    report.tokens = own.tokens.size();
    report.scored = own.scored.targets.size();
    report.perplexity = own.perplexity;
    report.notes.insert(report.notes.end(), own.notes.begin(), own.notes.end());
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
        const auto start = std::chrono::steady_clock::now();
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
            auto at = measureGroup(transformer, own, firstChangedLayer(g, transformer.shape().blocks), stop);
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

bool SensitivityReference::matches(const GgufModel& other, const SensitivityRequest& request) const {
    return model == other.path() && text == request.text && chunk == request.chunk;
}

std::optional<TypeSensitivity> measureMixDivergence(const std::shared_ptr<const GgufModel>& model,
                                                    const QuantizeRecipe& recipe,
                                                    const ImatrixData* importance,
                                                    const SensitivityReference& reference, unsigned threads,
                                                    const StopToken* stop) {
    threads = threads == 0 ? defaultThreadCount() : threads;
    const QuantizePlan plan = planQuantization(*model, recipe, importance, threads);
    ModelWeights planned = ModelWeights::ofModel(model);
    QuantGroup changed{"the mix", {}};
    std::uint64_t bytes = 0;
    std::vector<std::string> notes;
    for (const QuantizedTensor& q : plan.tensors) {
        const TensorInfo& t = *model->findTensor(q.name);
        bytes += q.converted ? storedBytes(q.to, t.elements) : t.bytes;
        if (!q.converted) {
            continue;
        }
        std::vector<float> weights = importance != nullptr && takesImportance(q.to)
                                         ? importanceWeightsOf(*importance, recipe.imatrix, t, notes)
                                         : std::vector<float>();
        planned.replaceTensor(t.name, q.to, encodedSource(*model, t, q.to, std::move(weights), threads));
        changed.tensors.push_back(&t);
    }
    Transformer transformer(std::move(planned));
    transformer.setThreads(threads);
    auto at =
        measureGroup(transformer, reference, firstChangedLayer(changed, transformer.shape().blocks), stop);
    if (at) {
        at->type = defaultTensorType(recipe.fileType);
        at->bytes = bytes;
    }
    return at;
}

} // namespace organ
