#include "surgeon/candidate_evaluator.h"

#include "anatomy/anatomy.h"
#include "support/errors.h"
#include "support/text_safety.h"
#include "vitals/model_weights.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace organ {
namespace {

// Where a chimera tensor's values come from, as text: two tensors with the same text hold the
// same values.
std::string originOf(const ChimeraTensor& t) {
    std::ostringstream out;
    out.precision(17);
    out << t.model << '|' << t.sourceName << '|' << int(t.targetType) << '|' << t.converted;
    if (t.purify) {
        out << "|purify " << int(t.purify->method) << ' ' << t.purify->keep << ' ' << t.purify->threshold
            << ' ' << t.purify->attenuation;
    }
    if (t.merge) {
        const TensorMergeParams& p = t.merge->params;
        out << "|merge " << t.merge->tensor << ' ' << t.merge->base << ' ' << int(p.method) << ' ' << p.t
            << ' ' << p.normalize << ' ' << p.rescale << ' ' << p.seed;
        for (std::size_t i = 0; i < t.merge->models.size() && i < p.models.size(); ++i) {
            out << ' ' << t.merge->models[i] << ':' << p.models[i].weight << ',' << p.models[i].density << ','
                << p.models[i].gamma;
        }
    }
    return out.str();
}

// A layout's tensors by layer (outside the layers: key nullopt), each name with its origin.
using LayerOrigins = std::map<std::optional<std::uint32_t>, std::map<std::string, std::string>>;
LayerOrigins originsByLayer(const ChimeraLayout& layout) {
    LayerOrigins out;
    for (const ChimeraTensor& t : layout.tensors) {
        out[classifyTensor(t.name).layer][t.name] = originOf(t);
    }
    return out;
}

// The plan's check; its first error (and how many more) thrown as a FormatError: the models cannot
// make that chimera (a donor of another vocabulary or shape).
CompatibilityReport checkedPlan(const GraftPlan& plan, const GraftModels& models) {
    CompatibilityReport report = checkGraft(plan, models);
    const auto isError = [](const Finding& f) { return f.severity == Finding::Severity::Error; };
    const auto first = std::find_if(report.findings.begin(), report.findings.end(), isError);
    if (first != report.findings.end()) {
        const auto more = std::count_if(first + 1, report.findings.end(), isError);
        throw FormatError("a candidate plan cannot be made: " + first->message +
                          (more > 0 ? " (and " + std::to_string(more) + " more errors)" : std::string()));
    }
    return report;
}

} // namespace

std::optional<std::uint32_t> firstChangedLayer(const ChimeraLayout& anchor, const ChimeraLayout& candidate) {
    if (anchor.quantize || candidate.quantize || anchor.setMetadata != candidate.setMetadata ||
        anchor.removeMetadata != candidate.removeMetadata) {
        return std::nullopt;
    }
    const LayerOrigins a = originsByLayer(anchor);
    const LayerOrigins b = originsByLayer(candidate);
    const std::uint32_t shallower = std::min(anchor.blocks, candidate.blocks);
    // Outside the layers: the output side changes only the output; anything else (the token
    // embedding, RoPE's factors) what enters the first layer.
    const auto outside = [](const LayerOrigins& o) {
        const auto it = o.find(std::nullopt);
        return it == o.end() ? std::map<std::string, std::string>() : it->second;
    };
    const auto outsideA = outside(a);
    const auto outsideB = outside(b);
    std::map<std::string, std::string> all = outsideA;
    all.insert(outsideB.begin(), outsideB.end());
    for (const auto& [name, origin] : all) {
        const auto x = outsideA.find(name);
        const auto y = outsideB.find(name);
        if (x != outsideA.end() && y != outsideB.end() && x->second == y->second) {
            continue;
        }
        if (!name.starts_with("output")) {
            return std::nullopt;
        }
    }
    for (std::uint32_t l = 0; l < shallower; ++l) {
        const auto x = a.find(l);
        const auto y = b.find(l);
        const bool same = (x == a.end()) == (y == b.end()) && (x == a.end() || x->second == y->second);
        if (!same) {
            return l;
        }
    }
    return shallower;
}

CandidateEvaluator::CandidateEvaluator(GraftModels models, ScoringText text, unsigned threads)
    : m_models(std::move(models)), m_text(std::move(text)), m_threads(threads) {
    m_plain.tokens = m_text.tokens;
    m_plain.chunk = m_text.chunk;
    m_plain.bos = m_text.bos;
}

std::optional<CandidateScore> CandidateEvaluator::score(const GraftPlan& plan, const StopToken* stop) {
    const std::string key = dumpJson(graftPlanToJson(plan));
    if (const auto it = m_cache.find(key); it != m_cache.end()) {
        ++m_hits;
        return it->second;
    }
    const CompatibilityReport report = checkedPlan(plan, m_models);
    ModelWeights weights = ModelWeights::ofPlan(plan, m_models, report);
    CandidateScore out;
    out.layers = report.layout.blocks;
    out.bytes = weights.tensorBytes();
    for (const ChimeraTensor& t : report.layout.tensors) {
        out.parameters += weights.tensor(t.name)->elements;
    }
    Transformer transformer(std::move(weights));
    transformer.setThreads(m_threads);
    const std::optional<std::uint32_t> first =
        m_anchor ? firstChangedLayer(m_anchor->layout, report.layout) : std::nullopt;
    const std::optional<ScoredText> scored =
        runFromLayer(transformer, m_anchor && first ? m_anchor->run : m_plain, first, stop);
    if (!scored) {
        return std::nullopt;
    }
    ++m_runs;
    m_layersRun += out.layers - (m_anchor && !m_anchor->run.entering.empty() ? first.value_or(0) : 0);
    out.objective = m_text.reference ? divergenceOf(*m_text.reference, scored->logits).meanKl
                                     : perplexityOf(*scored).meanNll;
    if (!std::isfinite(out.objective)) {
        out.objective = std::numeric_limits<double>::infinity();
    }
    m_cache.emplace(key, out);
    return out;
}

bool CandidateEvaluator::anchorOn(const GraftPlan& plan, const StopToken* stop) {
    std::string key = dumpJson(graftPlanToJson(plan));
    if (m_anchor && m_anchor->key == key) {
        return true;
    }
    CompatibilityReport report = checkedPlan(plan, m_models);
    ModelWeights weights = ModelWeights::ofPlan(plan, m_models, report);
    Transformer transformer(weights);
    transformer.setThreads(m_threads);
    // States that would not fit are not kept: candidates then run from the tokens.
    const bool keep = statesFit(weights, transformer.shape(), m_text.tokens.size());
    std::optional<StatesRun> run =
        runKeepingStates(transformer, m_text.tokens, m_text.chunk, m_text.bos, keep, stop);
    if (!run) {
        return false;
    }
    m_anchor = Anchor{std::move(key), std::move(report.layout), std::move(*run)};
    return true;
}

} // namespace organ
