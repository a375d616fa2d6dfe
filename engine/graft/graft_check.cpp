// The compatibility report: the plan applied to the chimera's layout, every tensor checked.
#include "graft/graft_check.h"
#include "graft/chimera_spec.h"

#include "support/text_safety.h"

#include "anatomy/model_validation.h"
#include "graft/layer_metadata.h"
#include "graft/merge_layout.h"
#include "graft/quantize_chimera.h"
#include "organs/organ_directory.h"
#include "purify/purify_model.h"
#include "quant/quantize.h"
#include "support/text_format.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace organ {
namespace {

// One tensor position in the chimera while the plan is applied.
struct Slot {
    std::string suffix;                 // the name without "blk.N." (the whole name outside layers)
    std::string model;                  // where the bytes come from
    std::string sourceName;             // the tensor there
    std::string expected;               // the base tensor whose shape and type it must have ("": none)
    int operation = -1;                 // the operation that set its source
    std::optional<PurifyParams> purify; // purified as it stands after `purifyOperation`
    int purifyOperation = -1;
    int mergeOperation = -1; // merged by it, from the tensors named `mergeInput`, sitting at `mergePlace`
    std::string mergeInput;
    TensorPlace mergePlace;
    // The model's own tensor `name`, at the position `suffix` names.
    static Slot of(std::string suffix, std::string model, const std::string& name) {
        Slot slot;
        slot.suffix = std::move(suffix);
        slot.model = std::move(model);
        slot.sourceName = name;
        slot.expected = name;
        return slot;
    }
    // Other bytes: what purify and merge operations did to the slot is undone.
    void take(std::string fromModel, std::string name, int index) {
        model = std::move(fromModel);
        sourceName = std::move(name);
        operation = index;
        purify.reset();
        mergeOperation = -1;
    }
};

struct Layer {
    std::vector<Slot> slots;
    ChimeraLayerOrigin origin; // whose per-layer metadata it carries
};

struct Body {
    std::vector<Slot> before; // outside layers, before the first layer tensor of the base
    std::vector<Layer> layers;
    std::vector<Slot> after;
};

Body bodyOf(const GgufModel& model, const std::string& id) {
    Body body;
    bool seenLayer = false;
    for (const auto& t : model.tensors()) {
        if (const auto parsed = parseLayerName(t.name)) {
            const std::uint32_t layer = parsed->layer;
            const std::string suffix(parsed->rest);
            seenLayer = true;
            if (layer >= body.layers.size()) {
                const auto first = static_cast<std::uint32_t>(body.layers.size());
                body.layers.resize(layer + 1);
                for (std::uint32_t k = first; k <= layer; ++k) {
                    body.layers[k].origin.whole = {id, k};
                }
            }
            body.layers[layer].slots.push_back(Slot::of(suffix, id, t.name));
        } else {
            (seenLayer ? body.after : body.before).push_back(Slot::of(t.name, id, t.name));
        }
    }
    return body;
}

std::set<std::string> suffixesOf(const Layer& layer) {
    std::set<std::string> out;
    for (const auto& s : layer.slots) {
        out.insert(s.suffix);
    }
    return out;
}

class Resolver {
public:
    Resolver(const GraftPlan& plan, const GraftModels& models) : m_plan(plan), m_models(models) {
        m_body = bodyOf(models.base(), "base");
        m_report.layout.baseBlocks = static_cast<std::uint32_t>(m_body.layers.size());
        for (const auto& layer : m_body.layers) {
            m_baseLayerShapes.insert(suffixesOf(layer));
        }
    }

    CompatibilityReport run() {
        for (std::size_t i = 0; i < m_plan.operations.size(); ++i) {
            apply(m_plan.operations[i], static_cast<int>(i));
        }
        checkLayers();
        rewriteMetadata();
        buildLayout();
        checkModels();
        checkOutput();
        predictLoad();
        return std::move(m_report);
    }

private:
    void add(Finding::Severity severity, int operation, std::string message,
             std::vector<std::string> tensors = {}) {
        m_report.findings.push_back({severity, std::move(message), std::move(tensors), operation});
    }

    // Calls visit(slot, chimeraName) for every slot with its name in the chimera as it stands.
    template <typename Visit> void forEachSlot(Visit visit) {
        for (auto& s : m_body.before) {
            visit(s, s.suffix);
        }
        for (std::uint32_t j = 0; j < m_body.layers.size(); ++j) {
            for (auto& s : m_body.layers[j].slots) {
                visit(s, layerTensorName(j, s.suffix));
            }
        }
        for (auto& s : m_body.after) {
            visit(s, s.suffix);
        }
    }

    void apply(const GraftOperation& o, int index) {
        using Kind = GraftOperation::Kind;
        switch (o.kind) {
        case Kind::Replace:
            replace(o, index);
            break;
        case Kind::MapLayer:
            mapLayer(o, index);
            break;
        case Kind::StackLayers:
            stack(o, index);
            break;
        case Kind::DuplicateLayer:
            if (o.toLayer >= m_body.layers.size()) {
                add(Finding::Severity::Error, index,
                    "duplicate_layer: there is no layer " + std::to_string(o.toLayer));
                return;
            }
            if (m_body.layers.size() >= kMaxChimeraLayers) {
                add(Finding::Severity::Error, index,
                    "duplicate_layer: a chimera may have at most " + std::to_string(kMaxChimeraLayers) +
                        " layers");
                return;
            }
            m_body.layers.insert(m_body.layers.begin() + o.toLayer + 1, m_body.layers[o.toLayer]);
            break;
        case Kind::RemoveLayer:
            if (o.toLayer >= m_body.layers.size() || m_body.layers.size() == 1) {
                add(Finding::Severity::Error, index,
                    m_body.layers.size() == 1
                        ? std::string("remove_layer: the last layer cannot be removed")
                        : "remove_layer: there is no layer " + std::to_string(o.toLayer));
                return;
            }
            m_body.layers.erase(m_body.layers.begin() + o.toLayer);
            break;
        case Kind::SetMetadata:
            if (o.key == "general.alignment") {
                const auto v = o.value.asUInt();
                if (o.value.type() != ValueType::U32 || !v || *v == 0 || (*v & (*v - 1)) != 0 ||
                    *v > kGgufMaxAlignment) {
                    add(Finding::Severity::Error, index,
                        "set_metadata: general.alignment must be a u32 power of two of at most " +
                            std::to_string(kGgufMaxAlignment) + " (ggml uses 32)");
                    return;
                }
            }
            m_report.layout.setMetadata.emplace_back(o.key, o.value);
            break;
        case Kind::RemoveMetadata:
            if (m_models.base().find(o.key) == nullptr) {
                add(Finding::Severity::Warning, index,
                    "remove_metadata: the base has no key '" + o.key + "'");
            }
            m_report.layout.removeMetadata.push_back(o.key);
            break;
        case Kind::Purify:
            purify(o, index);
            break;
        case Kind::Merge:
            merge(o, index);
            break;
        case Kind::Quantize:
            if (m_quantizeOperation >= 0) {
                add(Finding::Severity::Error, index,
                    "quantize: a plan quantizes the chimera once (operation " +
                        std::to_string(m_quantizeOperation + 1) + " does)");
                return;
            }
            m_quantizeOperation = index;
            break;
        }
    }

    // Marks the tensors the selection picks, as they stand now: a later operation that gives a slot
    // other bytes takes the mark away.
    void purify(const GraftOperation& o, int index) {
        if (const auto problem = purifyParamsProblem(o.purify)) {
            add(Finding::Severity::Error, index, "purify: " + *problem);
            return;
        }
        auto& shared = m_report.layout.purify;
        if (shared &&
            (shared->method != o.purify.method || purifyParamsText(*shared) != purifyParamsText(o.purify))) {
            add(Finding::Severity::Error, index,
                "purify: every purify operation of a plan uses the same method and parameters (" +
                    purifyMethodName(shared->method) + ", " + purifyParamsText(*shared) +
                    "); the chimera records one");
            return;
        }
        shared = o.purify;
        std::size_t selected = 0;
        forEachSlot([&](Slot& slot, const std::string& name) {
            if (o.select.matches(name, classifyTensor(name))) {
                ++selected;
                slot.purify = o.purify;
                slot.purifyOperation = index;
            }
        });
        if (selected == 0) {
            add(Finding::Severity::Error, index, "purify: the selection matches no tensor of the chimera");
        }
    }

    // Marks the tensors the selection picks, as they stand now, to be merged from the tensors of the
    // names their bytes come from; a later operation that gives a slot other bytes takes the mark away.
    void merge(const GraftOperation& o, int index) {
        if (m_mergeOperation >= 0) {
            add(Finding::Severity::Error, index,
                "merge: a plan merges once (operation " + std::to_string(m_mergeOperation + 1) + " does)");
            return;
        }
        if (const auto problem = mergeSpecProblem(o.merge)) {
            add(Finding::Severity::Error, index, "merge: " + *problem);
            return;
        }
        // A plan read from JSON names only its own models; one built in code is checked here.
        for (const std::string& id : o.merge.modelIds()) {
            if (m_models.find(id) == nullptr) {
                add(Finding::Severity::Error, index, "merge: the plan has no model called \"" + id + "\"");
                return;
            }
        }
        for (const std::string& noOp : mergeSpecNoOps(o.merge)) {
            add(Finding::Severity::Warning, index, "merge: " + noOp);
        }
        m_mergeOperation = index;
        m_report.layout.merge = o.merge;
        const auto blocks = static_cast<std::uint32_t>(m_body.layers.size());
        std::size_t selected = 0;
        forEachSlot([&](Slot& slot, const std::string& name) {
            if (o.select.matches(name, classifyTensor(name))) {
                ++selected;
                slot.purify.reset();
                slot.mergeOperation = index;
                slot.mergeInput = slot.sourceName;
                slot.mergePlace = TensorPlace::of(name, blocks);
            }
        });
        if (selected == 0) {
            add(Finding::Severity::Error, index, "merge: the selection matches no tensor of the chimera");
        }
        const std::uint64_t rules = mergeRuleLookups(o.merge);
        if (const std::uint64_t lookups = std::uint64_t(selected) * rules; lookups > kMaxMergeRuleLookups) {
            add(Finding::Severity::Error, index,
                "merge: " + groupDigits(selected) + " tensors, each resolved through up to " +
                    groupDigits(rules) + " filter rules, make " + groupDigits(lookups) +
                    " look-ups, more than the " + groupDigits(kMaxMergeRuleLookups) +
                    " a plan may ask for: give fewer filtered values or merge fewer tensors");
            forEachSlot([&](Slot& slot, const std::string&) {
                if (slot.mergeOperation == index) {
                    slot.mergeOperation = -1;
                }
            });
        }
    }

    // The merge of a marked slot, checked: it stays as it stands when a model lacks its tensor.
    void resolveMergedTensor(const Slot& slot, const TensorInfo& expected, ChimeraTensor& out) {
        const GraftOperation& o = m_plan.operations[static_cast<std::size_t>(slot.mergeOperation)];
        const MergeResolution r = resolveMerge(o.merge, m_models, slot.mergeInput, slot.mergePlace, expected);
        if (r.error) {
            // One finding for the tensors a problem shares (a model without a weight lacks it for
            // each), the first tensor's message standing for them.
            std::string shared = *r.error;
            if (const auto at = shared.find(out.name); at != std::string::npos) {
                shared.replace(at, out.name.size(), "{}");
            }
            const auto same = std::find_if(m_mergeErrors.begin(), m_mergeErrors.end(),
                                           [&](const MergeError& e) { return e.shared == shared; });
            if (same != m_mergeErrors.end()) {
                same->tensors.push_back(out.name);
            } else {
                m_mergeErrors.push_back({shared, *r.error, {out.name}});
            }
        } else if (r.keptAsItStands) {
            if (m_keptFromMerge.empty()) {
                m_firstKeptBecause = out.name + ": " + r.keptBecause;
            }
            m_keptFromMerge.push_back(out.name);
        } else {
            out.merge = r.merge;
            out.mergeOperation = slot.mergeOperation;
            if (!canQuantizeTo(out.targetType)) {
                m_mergedAsF16.push_back(out.name);
                out.targetType = TensorType::F16;
            }
            ++m_report.layout.tensorsMerged;
        }
    }

    void mergeFindings() {
        if (m_mergeOperation < 0 || !m_report.layout.merge) {
            return;
        }
        const auto& merge = *m_report.layout.merge;
        add(Finding::Severity::Info, m_mergeOperation,
            mergeSummary(merge, m_models, m_report.layout.tensorsMerged));
        if (m_report.layout.tensorsMerged == 0 && m_mergeErrors.empty()) {
            add(Finding::Severity::Error, m_mergeOperation,
                "merge: no tensor is merged: none of the selected tensors is in every model with the "
                "base's shape");
        }
        for (const MergeError& e : m_mergeErrors) {
            add(Finding::Severity::Error, m_mergeOperation,
                "merge: " + e.first +
                    (e.tensors.size() == 1 ? std::string()
                                           : " (and so for " + std::to_string(e.tensors.size() - 1) +
                                                 " more tensor" + (e.tensors.size() == 2 ? "" : "s") + ")"),
                e.tensors);
        }
        if (!m_keptFromMerge.empty()) {
            add(Finding::Severity::Warning, m_mergeOperation,
                "merge: " + std::to_string(m_keptFromMerge.size()) + " tensor" +
                    (m_keptFromMerge.size() == 1 ? " is" : "s are") +
                    " not in every model with the same shape and kept as " +
                    (m_keptFromMerge.size() == 1 ? "it stands" : "they stand") + " (the base's); " +
                    (m_keptFromMerge.size() == 1 ? "" : "the first, ") + m_firstKeptBecause,
                m_keptFromMerge);
        }
        if (!m_mergedAsF16.empty()) {
            add(Finding::Severity::Warning, m_mergeOperation,
                "merge: " + std::to_string(m_mergedAsF16.size()) + " merged tensor" +
                    (m_mergedAsF16.size() == 1 ? "" : "s") +
                    " stored as F16: the engine cannot write the base's type",
                m_mergedAsF16);
        }
        for (const std::string& id : merge.modelIds()) {
            if (id != "base" && m_report.layout.tensorsMerged > 0) {
                m_donorsUsed.insert(id);
            }
        }
    }

    void replace(const GraftOperation& o, int index) {
        const GgufModel* donor = m_models.find(o.donor);
        std::vector<std::string> missing;
        std::size_t selected = 0;
        forEachSlot([&](Slot& slot, const std::string& name) {
            if (!o.select.matches(name, classifyTensor(name))) {
                return;
            }
            ++selected;
            if (donor->findTensor(name) == nullptr) {
                missing.push_back(name);
                return;
            }
            slot.take(o.donor, name, index);
        });
        // The donor's per-layer values follow its tensors into each layer they went to.
        for (std::uint32_t j = 0; j < m_body.layers.size(); ++j) {
            for (const Slot& slot : m_body.layers[j].slots) {
                if (slot.operation == index) {
                    m_body.layers[j].origin.bySystem[classifyTensor(layerTensorName(j, slot.suffix)).system] =
                        {o.donor, j};
                }
            }
        }
        if (selected == 0) {
            add(Finding::Severity::Error, index, "replace: the selection matches no tensor of the chimera");
        }
        if (!missing.empty()) {
            add(Finding::Severity::Error, index,
                "replace: donor '" + o.donor + "' has no tensor " + missing.front() +
                    (missing.size() > 1 ? " (and " + std::to_string(missing.size() - 1) + " more)" : ""),
                missing);
        }
    }

    void mapLayer(const GraftOperation& o, int index) {
        const GgufModel* donor = m_models.find(o.donor);
        if (o.toLayer >= m_body.layers.size()) {
            add(Finding::Severity::Error, index,
                "map_layer: the chimera has no layer " + std::to_string(o.toLayer));
            return;
        }
        std::vector<std::string> missing;
        std::size_t selected = 0;
        for (auto& slot : m_body.layers[o.toLayer].slots) {
            const std::string target = layerTensorName(o.toLayer, slot.suffix);
            if (!o.select.matches(target, classifyTensor(target))) {
                continue;
            }
            ++selected;
            const std::string source = layerTensorName(o.fromLayer, slot.suffix);
            if (donor->findTensor(source) == nullptr) {
                missing.push_back(source);
                continue;
            }
            slot.take(o.donor, source, index);
            m_body.layers[o.toLayer].origin.bySystem[classifyTensor(target).system] = {o.donor, o.fromLayer};
        }
        if (selected == 0) {
            add(Finding::Severity::Error, index,
                "map_layer: the selection matches no tensor of layer " + std::to_string(o.toLayer));
        }
        if (!missing.empty()) {
            add(Finding::Severity::Error, index,
                "map_layer: donor '" + o.donor + "' has no tensor " + missing.front() +
                    (missing.size() > 1 ? " (and " + std::to_string(missing.size() - 1) + " more)" : ""),
                missing);
        }
    }

    void stack(const GraftOperation& o, int index) {
        std::uint64_t total = 0;
        for (const auto& range : o.stack) {
            total += std::uint64_t(range.last) - range.first + 1;
        }
        if (total > kMaxChimeraLayers) {
            add(Finding::Severity::Error, index,
                "stack_layers: " + std::to_string(total) + " layers, more than the " +
                    std::to_string(kMaxChimeraLayers) + " a chimera may have");
            return;
        }
        std::vector<Layer> layers;
        std::map<std::string, Body> bodies; // each model's layers, built once however many runs
        for (const auto& range : o.stack) {
            const GgufModel* model = m_models.find(range.model);
            auto [it, fresh] = bodies.try_emplace(range.model);
            if (fresh) {
                it->second = bodyOf(*model, range.model);
            }
            const Body& source = it->second;
            for (std::uint32_t k = range.first; k <= range.last; ++k) {
                if (k >= source.layers.size() || source.layers[k].slots.empty()) {
                    add(Finding::Severity::Error, index,
                        "stack_layers: model '" + range.model + "' has no layer " + std::to_string(k));
                    return;
                }
                Layer layer = source.layers[k];
                const std::uint32_t reference = std::min<std::uint32_t>(k, m_report.layout.baseBlocks - 1);
                for (auto& slot : layer.slots) {
                    slot.take(slot.model, slot.sourceName, index);
                    slot.expected =
                        range.model == "base" ? slot.sourceName : layerTensorName(reference, slot.suffix);
                }
                layers.push_back(std::move(layer));
            }
        }
        m_body.layers = std::move(layers);
    }

    // Layer-indexed metadata follows the chimera's layers (layer_metadata.h); computed before
    // the plan's own set_metadata, which wins over it.
    void rewriteMetadata() {
        std::vector<ChimeraLayerOrigin> origins;
        for (const Layer& layer : m_body.layers) {
            ChimeraLayerOrigin origin = layer.origin;
            origin.experts = std::any_of(layer.slots.begin(), layer.slots.end(), [](const Slot& s) {
                return s.suffix.starts_with("ffn_gate_inp") || s.suffix.find("_exps.") != std::string::npos;
            });
            origins.push_back(std::move(origin));
        }
        LayerMetadata rewritten =
            rewriteLayerMetadata([this](const std::string& id) { return m_models.find(id); }, origins);
        auto& set = m_report.layout.setMetadata;
        set.insert(set.begin(), rewritten.set.begin(), rewritten.set.end());
        for (Finding& f : rewritten.findings) {
            m_report.findings.push_back(std::move(f));
        }
    }

    // Every layer must have the tensors of some layer of the base.
    void checkLayers() {
        for (std::uint32_t j = 0; j < m_body.layers.size(); ++j) {
            const auto have = suffixesOf(m_body.layers[j]);
            if (m_baseLayerShapes.count(have) != 0) {
                continue;
            }
            const auto& want = *m_baseLayerShapes.begin();
            std::vector<std::string> lacking;
            std::set_difference(want.begin(), want.end(), have.begin(), have.end(),
                                std::back_inserter(lacking));
            add(Finding::Severity::Error,
                m_body.layers[j].slots.empty() ? -1 : m_body.layers[j].slots.front().operation,
                "layer " + std::to_string(j) + " is incomplete" +
                    (lacking.empty()
                         ? std::string(": its tensors differ from every layer of the base")
                         : ": it lacks " + lacking.front() +
                               (lacking.size() > 1 ? " and " + std::to_string(lacking.size() - 1) + " more"
                                                   : "")));
        }
    }

    void checkTensor(const Slot& slot, const std::string& name) {
        const GgufModel& model = *m_models.find(slot.model);
        const TensorInfo* source = model.findTensor(slot.sourceName);
        const TensorInfo* expected =
            slot.expected.empty() ? nullptr : m_models.base().findTensor(slot.expected);
        ChimeraTensor out;
        out.name = name;
        out.model = slot.model;
        out.sourceName = slot.sourceName;
        out.targetType = source->type;
        out.operation = slot.operation;
        out.purify = slot.purify;
        out.purifyOperation = slot.purifyOperation;
        if (expected == nullptr) {
            add(Finding::Severity::Error, slot.operation,
                name + ": the base has no tensor to compare it with", {name});
        } else {
            if (source->nDims != expected->nDims || source->ne != expected->ne) {
                add(Finding::Severity::Error, slot.operation,
                    name + ": shape " + source->shapeText() + " (" + slot.model + ") ≠ " +
                        expected->shapeText() + " (base)",
                    {name});
            }
            out.targetType = expected->type;
            if (slot.mergeOperation >= 0) {
                resolveMergedTensor(slot, *expected, out);
            }
        }
        if (out.merge) {
            // Made from the inputs' values and encoded as targetType (purified first when marked).
            if (out.purify) {
                m_purified.push_back(name);
            }
        } else if (out.purify) {
            // Purified from the source's values whatever its type, and stored in the base's type
            // when the engine can write it.
            if (purifiedType(out.targetType) != out.targetType) {
                m_storedAsF16.push_back(name);
                out.targetType = TensorType::F16;
            }
            m_purified.push_back(name);
        } else if (out.targetType != source->type) {
            const auto& traits = traitsOf(out.targetType);
            if (canQuantizeTo(out.targetType) && source->ne[0] % traits.blockSize == 0) {
                out.converted = true;
            } else {
                add(Finding::Severity::Error, slot.operation,
                    name + ": " + slot.model + " has it as " + std::string(tensorTypeName(source->type)) +
                        ", the base as " + std::string(tensorTypeName(out.targetType)) +
                        "; the engine converts only to " + writableTypesText(),
                    {name});
            }
        }
        if (slot.model != "base") {
            ++m_report.layout.tensorsFromDonors;
            m_report.layout.bytesFromDonors += source->bytes;
            m_donorsUsed.insert(slot.model);
            if (classifyTensor(name).system == System::Embed) {
                m_embedFrom.insert(slot.model);
            }
        }
        m_report.layout.tensors.push_back(std::move(out));
    }

    void buildLayout() {
        for (const auto& s : m_body.before) {
            checkTensor(s, s.suffix);
        }
        for (std::uint32_t j = 0; j < m_body.layers.size(); ++j) {
            for (const auto& s : m_body.layers[j].slots) {
                checkTensor(s, layerTensorName(j, s.suffix));
            }
        }
        for (const auto& s : m_body.after) {
            checkTensor(s, s.suffix);
        }
        m_report.layout.blocks = static_cast<std::uint32_t>(m_body.layers.size());
        mergeFindings();
        if (m_quantizeOperation >= 0 && !m_report.hasErrors()) {
            const GraftOperation& o = m_plan.operations[static_cast<std::size_t>(m_quantizeOperation)];
            for (Finding& f : quantizeLayout(m_report.layout, o.quantize, m_models, m_quantizeOperation)) {
                m_report.findings.push_back(std::move(f));
            }
        }
        std::map<std::pair<TensorType, TensorType>, std::vector<std::string>> conversions; // → chimera names
        for (const ChimeraTensor& t : m_report.layout.tensors) {
            if (t.converted) {
                const TensorType from = m_models.find(t.model)->findTensor(t.sourceName)->type;
                conversions[{from, t.targetType}].push_back(t.name);
            }
        }
        if (!m_purified.empty()) {
            add(Finding::Severity::Info, -1,
                std::to_string(m_purified.size()) + " tensor" + (m_purified.size() == 1 ? "" : "s") +
                    " purified (" + purifyMethodName(m_report.layout.purify->method) + ", " +
                    purifyParamsText(*m_report.layout.purify) + ")",
                m_purified);
        }
        if (!m_storedAsF16.empty()) {
            add(Finding::Severity::Warning, -1,
                std::to_string(m_storedAsF16.size()) + " purified tensor" +
                    (m_storedAsF16.size() == 1 ? "" : "s") +
                    " stored as F16: the engine cannot write the base's type",
                m_storedAsF16);
        }
        for (const auto& [types, names] : conversions) {
            add(Finding::Severity::Info, -1,
                std::to_string(names.size()) + " tensor" + (names.size() == 1 ? "" : "s") +
                    " converted from " + std::string(tensorTypeName(types.first)) + " to " +
                    std::string(tensorTypeName(types.second)),
                names);
        }
    }

    void checkModels() {
        const GgufModel& base = m_models.base();
        for (const auto& id : m_donorsUsed) {
            const GgufModel& donor = *m_models.find(id);
            if (donor.architecture() != base.architecture()) {
                add(Finding::Severity::Warning, -1,
                    "architectures differ: " + base.architecture() + " (base) and " + donor.architecture() +
                        " (" + id + ")");
            }
            const auto a = base.archValue("embedding_length");
            const auto b = donor.archValue("embedding_length");
            if (a && b && *a != *b) {
                add(Finding::Severity::Warning, -1,
                    "embedding widths differ: " + std::to_string(*a) + " (base) and " + std::to_string(*b) +
                        " (" + id + ")");
            }
        }
        for (const auto& id : m_embedFrom) {
            const MetaValue* ours = base.find("tokenizer.ggml.tokens");
            const MetaValue* theirs = m_models.find(id)->find("tokenizer.ggml.tokens");
            if (ours == nullptr || theirs == nullptr || !(*ours == *theirs)) {
                add(Finding::Severity::Error, -1,
                    "embed graft from '" + id + "': the vocabularies differ (" +
                        std::to_string(ours != nullptr ? ours->arraySize() : 0) + " tokens in the base, " +
                        std::to_string(theirs != nullptr ? theirs->arraySize() : 0) + " in '" + id +
                        "'); token ids would mean other tokens");
            }
        }
    }

    // The chimera validated as llama.cpp would load it, from its metadata and tensor shapes,
    // before a byte is written: a plan whose result would not load is refused here.
    void predictLoad() {
        if (m_report.hasErrors()) {
            return;
        }
        const ModelFacts facts = ModelFacts::of(
            chimeraSpec(m_plan, m_models, m_report.layout, ChimeraSources::None), fileLabel(m_plan.output));
        for (Finding f : validateFacts(facts)) {
            if (f.severity == Finding::Severity::Error) {
                f.message = "the chimera would not load: " + f.message;
                f.fromValidation = true;
                m_report.findings.push_back(std::move(f));
            }
        }
    }

    void checkOutput() {
        if (m_plan.output.empty()) {
            return;
        }
        FileIdentity out;
        if (!identityOf(m_plan.output, out)) {
            return;
        }
        for (const auto& id : m_models.ids()) {
            for (const auto& file : m_models.find(id)->files()) {
                if (file->identity() == out) {
                    add(Finding::Severity::Error, -1,
                        "the output " + fileLabel(m_plan.output) + " is an input ('" + id +
                            "'): choose another file");
                }
            }
        }
    }

    const GraftPlan& m_plan;
    const GraftModels& m_models;
    Body m_body;
    std::set<std::set<std::string>> m_baseLayerShapes;
    int m_quantizeOperation = -1;
    int m_mergeOperation = -1;
    std::vector<std::string> m_keptFromMerge;
    struct MergeError {
        std::string shared; // the message with the tensor's name taken out
        std::string first;  // as the first tensor had it
        std::vector<std::string> tensors;
    };
    std::vector<MergeError> m_mergeErrors;
    std::string m_firstKeptBecause; // the first kept tensor and why
    std::vector<std::string> m_mergedAsF16;
    std::vector<std::string> m_purified;
    std::vector<std::string> m_storedAsF16;
    std::set<std::string> m_donorsUsed;
    std::set<std::string> m_embedFrom;
    CompatibilityReport m_report;
};

} // namespace

CompatibilityReport checkGraft(const GraftPlan& plan, const GraftModels& models) {
    return Resolver(plan, models).run();
}

GraftModels GraftModels::open(const GraftPlan& plan, const std::shared_ptr<const FileRoot>& root) {
    GraftModels models;
    models.m_models.emplace_back("base", openModel({root, plan.base}));
    for (const auto& [id, path] : plan.donors) {
        models.m_models.emplace_back(id, openModel({root, path}));
    }
    models.loadImportance(plan, root);
    return models;
}

GraftModels GraftModels::fromModels(NamedModels models) {
    GraftModels out;
    out.m_models = std::move(models);
    return out;
}

void GraftModels::loadImportance(const GraftPlan& plan, const std::shared_ptr<const FileRoot>& root) {
    const GraftOperation* quantize = plan.quantizeOperation();
    m_importance.reset();
    if (quantize != nullptr && !quantize->quantize.imatrix.empty()) {
        m_importance = std::make_shared<const ImatrixData>(readImatrix({root, quantize->quantize.imatrix}));
    }
}

const GgufModel* GraftModels::find(const std::string& id) const {
    for (const auto& [modelId, model] : m_models) {
        if (modelId == id) {
            return model.get();
        }
    }
    return nullptr;
}

std::vector<std::string> GraftModels::ids() const {
    std::vector<std::string> out;
    for (const auto& entry : m_models) {
        out.push_back(entry.first);
    }
    return out;
}

bool CompatibilityReport::hasErrors() const {
    return count(Finding::Severity::Error) != 0;
}

std::size_t CompatibilityReport::count(Finding::Severity severity) const {
    return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(),
                                                  [&](const Finding& f) { return f.severity == severity; }));
}

std::string reportText(const CompatibilityReport& report, const GraftPlan& plan) {
    std::string text;
    for (const auto& f : report.findings) {
        std::string prefix;
        if (f.operation >= 0) {
            prefix =
                "[operation " + std::to_string(f.operation + 1) + " " +
                std::string(operationKindName(plan.operations[static_cast<std::size_t>(f.operation)].kind)) +
                "] ";
        }
        text += findingLine(f, prefix) + "\n";
    }
    const ChimeraLayout& l = report.layout;
    text += std::to_string(l.tensors.size()) + " tensors, " + std::to_string(l.tensorsFromDonors) +
            " from donors (" + humanBytes(l.bytesFromDonors) + "), ";
    if (l.tensorsMerged > 0) {
        text += std::to_string(l.tensorsMerged) + " merged, ";
    }
    text += std::to_string(l.blocks) + " blocks";
    if (l.blocks != l.baseBlocks) {
        text += " (base: " + std::to_string(l.baseBlocks) + ")";
    }
    text += "; " + std::to_string(report.count(Finding::Severity::Error)) + " error(s), " +
            std::to_string(report.count(Finding::Severity::Warning)) + " warning(s)\n";
    return text;
}

} // namespace organ
