#include "measure/measure_report.h"

#include "support/text_safety.h"

#include "support/text_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace organ {
namespace {

std::string fixed(const std::optional<double>& v, int digits) {
    return v ? fixedDecimals(*v, digits) : "—";
}

nlohmann::json groupJson(const ThetaGroup& g) {
    const bool any = g.measured != 0;
    return {{"key", g.key},
            {"tensors", g.tensors},
            {"measured", g.measured},
            {"parameters", g.parameters},
            {"theta_mean", any ? nlohmann::json(g.thetaMean) : nlohmann::json(nullptr)},
            {"theta_min", any ? nlohmann::json(g.thetaMin) : nlohmann::json(nullptr)},
            {"theta_max", any ? nlohmann::json(g.thetaMax) : nlohmann::json(nullptr)},
            {"signal_mean", any ? nlohmann::json(g.signalMean) : nlohmann::json(nullptr)}};
}

std::optional<double> groupTheta(const ThetaGroup& g) {
    return g.measured ? std::optional(g.thetaMean) : std::nullopt;
}

// Indices of measured tensors, lowest θ first.
std::vector<std::size_t> byTheta(const MeasuredModel& m) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < m.measurement.tensors.size(); ++i) {
        if (m.reported(i) && m.measurement.tensors[i].hasTheta()) {
            order.push_back(i);
        }
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return *m.measurement.tensors[a].theta < *m.measurement.tensors[b].theta;
    });
    return order;
}

// The models' measurements, not copied: ranking needs only pointers.
std::vector<const ModelMeasurement*> measurementsOf(const std::vector<MeasuredModel>& models) {
    std::vector<const ModelMeasurement*> out;
    for (const auto& m : models) {
        out.push_back(&m.measurement);
    }
    return out;
}

// A name in Markdown: escaped for people, in a code span whose fence is longer than any run
// of backticks in it, with table bars escaped (GFM splits cells on | even in code spans).
std::string markdownCode(const std::string& raw) {
    std::string text = escapeText(raw);
    std::size_t longest = 0;
    std::size_t run = 0;
    for (char c : text) {
        run = c == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    std::string escaped;
    for (char c : text) {
        escaped += c == '|' ? std::string("\\|") : std::string(1, c);
    }
    const std::string fence(longest + 1, '`');
    const bool pad = longest != 0;
    return fence + (pad ? " " : "") + escaped + (pad ? " " : "") + fence;
}

std::string sampleText(const ZParams& p) {
    return p.sample == kSampleAll ? std::string("every value") : groupDigits(p.sample) + " values";
}

} // namespace

// Plain text in Markdown: escaped for people, with the characters Markdown acts on escaped.
std::string markdownText(const std::string& raw) {
    std::string out;
    for (char c : escapeText(raw)) {
        if (std::string_view("\\|`*_[]<>#").find(c) != std::string_view::npos) {
            out += '\\';
        }
        out += c;
    }
    return out;
}

nlohmann::json optionalNumber(const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::optional<double> numberOrNothing(const nlohmann::json& j, const char* key, double min, double max) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
        return std::nullopt;
    }
    const double value = it->is_number() ? it->get<double>() : std::nan("");
    if (!std::isfinite(value)) {
        throw std::runtime_error(std::string(key) + " is " + it->dump() + ", not a finite number");
    }
    if (value < min || value > max) {
        throw std::runtime_error(std::string(key) + " is " + it->dump() + ", not a number in [" +
                                 csvNumber(min) + ", " + csvNumber(max) + "]");
    }
    return value;
}

std::uint64_t unsignedAt(const nlohmann::json& j, const char* key) {
    const auto& value = j.at(key);
    if (!value.is_number_unsigned()) {
        throw std::runtime_error(std::string(key) + " is " + value.dump() +
                                 ", not a whole number of 0 or more");
    }
    return value.get<std::uint64_t>();
}

nlohmann::json sampleJson(const ZParams& p) {
    return p.sample == kSampleAll ? nlohmann::json("all") : nlohmann::json(p.sample);
}

ZParams readReportPreamble(const nlohmann::json& document, const char* format, int version,
                           const char* what) {
    if (!document.is_object() || document.value("format", "") != format) {
        throw std::runtime_error(std::string("not a ") + what + " (no \"format\": \"" + format + "\")");
    }
    if (document.at("version").get<int>() != version) {
        throw std::runtime_error(std::string(what) + " version " + document.at("version").dump() +
                                 ", this organ reads " + std::to_string(version));
    }
    if (document.at("z_measure").get<std::string>() != kZMeasureVersion) {
        throw std::runtime_error("measured with Z-measure " + document.at("z_measure").get<std::string>() +
                                 ", this organ measures " + kZMeasureVersion);
    }
    const auto& sample = document.at("parameters").at("sample");
    ZParams params;
    params.sample = sample.is_string() && sample.get<std::string>() == "all"
                        ? kSampleAll
                        : unsignedAt(document.at("parameters"), "sample");
    return params;
}

std::string csvNumber(const std::optional<double>& v) {
    if (!v) {
        return std::string();
    }
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.10g", *v);
    return std::string(buffer);
}

std::string csvQuoted(const std::string& raw) {
    std::string q = "\"";
    // A spreadsheet runs a cell that starts like a formula; a leading quote makes it text.
    const std::string text = escapeText(raw);
    if (!text.empty() && std::string_view("=+-@").find(text.front()) != std::string_view::npos) {
        q += '\'';
    }
    for (char c : text) {
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    }
    return q + "\"";
}

nlohmann::json zResultToJson(const ZResult& z) {
    return {{"n", z.n},
            {"N", z.N},
            {"constant", z.constant},
            {"non_finite", z.nonFinite},
            {"H", optionalNumber(z.H)},
            {"K", optionalNumber(z.K)},
            {"C", optionalNumber(z.C)},
            {"sH", optionalNumber(z.sH)},
            {"sK", optionalNumber(z.sK)},
            {"sC", optionalNumber(z.sC)},
            {"theta", optionalNumber(z.theta)},
            {"signal", optionalNumber(z.signal)},
            {"beta", optionalNumber(z.beta)},
            {"energies", z.levelEnergies},
            {"spectrum_non_finite", z.spectrumNonFinite}};
}

ZResult zResultFromJson(const nlohmann::json& j) {
    ZResult z;
    z.n = unsignedAt(j, "n");
    z.N = unsignedAt(j, "N");
    z.constant = j.at("constant").get<bool>();
    z.nonFinite = unsignedAt(j, "non_finite");
    z.H = numberOrNothing(j, "H");
    z.K = numberOrNothing(j, "K");
    z.C = numberOrNothing(j, "C");
    z.sH = numberOrNothing(j, "sH");
    z.sK = numberOrNothing(j, "sK");
    z.sC = numberOrNothing(j, "sC");
    z.theta = numberOrNothing(j, "theta");
    z.signal = numberOrNothing(j, "signal");
    z.beta = numberOrNothing(j, "beta");
    z.levelEnergies = j.at("energies").get<std::vector<double>>();
    z.spectrumNonFinite = unsignedAt(j, "spectrum_non_finite");
    return z;
}

nlohmann::json measurementToJson(const MeasuredModel& m) {
    const ModelMeasurement& mm = m.measurement;
    nlohmann::json tensors = nlohmann::json::array();
    for (std::size_t i = 0; i < mm.tensors.size(); ++i) {
        if (!m.reported(i)) {
            continue;
        }
        const TensorInfo& t = m.model->tensors()[i];
        const TensorAnatomy& a = m.anatomy.tensors[i];
        nlohmann::json entry = zResultToJson(mm.tensors[i]);
        entry["name"] = t.name;
        entry["system"] = systemName(a.system);
        entry["role"] = a.role;
        entry["layer"] = a.layer ? nlohmann::json(*a.layer) : nlohmann::json(nullptr);
        entry["dtype"] = tensorTypeName(t.type);
        tensors.push_back(std::move(entry));
    }
    auto groups = [](const std::vector<ThetaGroup>& list) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& g : list) {
            out.push_back(groupJson(g));
        }
        return out;
    };
    nlohmann::json document{{"path", mm.path},
                            {"name", mm.name},
                            {"architecture", mm.architecture},
                            {"z_measure", kZMeasureVersion},
                            {"parameters", {{"sample", sampleJson(mm.params)}}},
                            {"from_cache", mm.fromCache},
                            {"model", groupJson(mm.model)},
                            {"systems", groups(mm.bySystem)},
                            {"roles", groups(mm.byRole)},
                            {"layers", groups(mm.byLayer)},
                            {"tensors", std::move(tensors)}};
    // A measurement reads samples, not every byte: an organ directory's digests are not checked.
    if (m.model->hasTensorFiles()) {
        document["tensor_digests"] = "not checked";
    }
    return document;
}

nlohmann::json measurementsDocument(const std::vector<MeasuredModel>& models) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& m : models) {
        list.push_back(measurementToJson(m));
    }
    nlohmann::json ranking = nlohmann::json::array();
    int rank = 0;
    for (const ModelMeasurement* r : zRanking(measurementsOf(models))) {
        auto row = groupJson(r->model);
        row["rank"] = ++rank;
        row["path"] = r->path;
        row["name"] = r->name;
        ranking.push_back(std::move(row));
    }
    const ZParams params = models.empty() ? ZParams{} : models.front().measurement.params;
    return {{"z_measure", kZMeasureVersion},
            {"parameters", {{"sample", sampleJson(params)}}},
            {"models", std::move(list)},
            {"ranking", std::move(ranking)}};
}

std::string measurementsCsv(const std::vector<MeasuredModel>& models) {
    std::ostringstream out;
    out << "model,tensor,system,role,layer,dtype,n,N,H,K,C,sH,sK,sC,theta,signal,beta,constant,non_finite,z_"
           "measure,"
           "sample\n";
    for (const auto& m : models) {
        for (std::size_t i = 0; i < m.measurement.tensors.size(); ++i) {
            if (!m.reported(i)) {
                continue;
            }
            const ZResult& z = m.measurement.tensors[i];
            const TensorInfo& t = m.model->tensors()[i];
            const TensorAnatomy& a = m.anatomy.tensors[i];
            out << csvQuoted(m.measurement.name) << ',' << csvQuoted(t.name) << ',' << systemName(a.system)
                << ',' << csvQuoted(a.role) << ',' << (a.layer ? std::to_string(*a.layer) : std::string())
                << ',' << tensorTypeName(t.type) << ',' << z.n << ',' << z.N << ',' << csvNumber(z.H) << ','
                << csvNumber(z.K) << ',' << csvNumber(z.C) << ',' << csvNumber(z.sH) << ',' << csvNumber(z.sK)
                << ',' << csvNumber(z.sC) << ',' << csvNumber(z.theta) << ',' << csvNumber(z.signal) << ','
                << csvNumber(z.beta) << ',' << (z.constant ? "true" : "false") << ',' << z.nonFinite << ','
                << kZMeasureVersion << ','
                << (m.measurement.params.sample == kSampleAll ? std::string("all")
                                                              : std::to_string(m.measurement.params.sample))
                << '\n';
        }
    }
    return out.str();
}

std::string measurementsMarkdown(const std::vector<MeasuredModel>& models) {
    std::ostringstream out;
    const ZParams params = models.empty() ? ZParams{} : models.front().measurement.params;
    out << "# Z-measure report\n\n";
    out << "Z-measure " << kZMeasureVersion << ", " << sampleText(params)
        << " per tensor. θ runs from 0° (noise) to 90° (structure); signal = sin θ.\n\n";
    out << "## Ranking\n\n| # | model | θ mean | signal | tensors | parameters "
           "|\n|---|---|---|---|---|---|\n";
    int rank = 0;
    for (const ModelMeasurement* r : zRanking(measurementsOf(models))) {
        out << "| " << ++rank << " | " << markdownText(r->name) << " | " << fixed(groupTheta(r->model), 2)
            << "° | " << fixed(r->model.measured ? std::optional(r->model.signalMean) : std::nullopt, 3)
            << " | " << r->model.measured << " | " << humanCount(r->model.parameters) << " |\n";
    }
    for (const auto& m : models) {
        const ModelMeasurement& mm = m.measurement;
        out << "\n## " << markdownText(mm.name) << "\n\n"
            << markdownCode(fileLabel(mm.path)) << " · "
            << (mm.architecture.empty() ? "?" : markdownText(mm.architecture)) << " · "
            << humanCount(mm.model.parameters) << " parameters · θ mean " << fixed(groupTheta(mm.model), 2)
            << "° over " << mm.model.measured << " of " << mm.model.tensors << " tensors\n\n";
        out << "### By anatomical system\n\n| system | tensors | θ mean | θ min | θ max | signal "
               "|\n|---|---|---|---|---|---|\n";
        for (const auto& g : mm.bySystem) {
            const bool any = g.measured != 0;
            out << "| " << g.key << " | " << g.measured << " | " << fixed(groupTheta(g), 2) << "° | "
                << fixed(any ? std::optional(g.thetaMin) : std::nullopt, 2) << "° | "
                << fixed(any ? std::optional(g.thetaMax) : std::nullopt, 2) << "° | "
                << fixed(any ? std::optional(g.signalMean) : std::nullopt, 3) << " |\n";
        }
        if (!mm.byLayer.empty()) {
            out << "\n### By layer\n\n| layer | θ mean | θ min | θ max |\n|---|---|---|---|\n";
            for (const auto& g : mm.byLayer) {
                const bool any = g.measured != 0;
                out << "| " << g.key << " | " << fixed(groupTheta(g), 2) << "° | "
                    << fixed(any ? std::optional(g.thetaMin) : std::nullopt, 2) << "° | "
                    << fixed(any ? std::optional(g.thetaMax) : std::nullopt, 2) << "° |\n";
            }
        }
        out << "\n### Lowest θ (closest to noise)\n\n| tensor | system | role | dtype | θ | H | K | C |\n"
               "|---|---|---|---|---|---|---|---|\n";
        const auto order = byTheta(m);
        for (std::size_t k = 0; k < std::min<std::size_t>(10, order.size()); ++k) {
            const std::size_t i = order[k];
            const ZResult& z = mm.tensors[i];
            out << "| " << markdownCode(m.model->tensors()[i].name) << " | "
                << systemName(m.anatomy.tensors[i].system) << " | " << markdownText(m.anatomy.tensors[i].role)
                << " | " << tensorTypeName(m.model->tensors()[i].type) << " | " << fixed(z.theta, 2) << "° | "
                << fixed(z.H, 3) << " | " << fixed(z.K, 2) << " | " << fixed(z.C, 2) << " |\n";
        }
        std::vector<std::string> constant;
        std::vector<std::string> flagged;
        for (std::size_t i = 0; i < mm.tensors.size(); ++i) {
            if (!m.reported(i)) {
                continue;
            }
            if (mm.tensors[i].constant) {
                constant.push_back(m.model->tensors()[i].name);
            }
            if (mm.tensors[i].nonFinite != 0 || mm.tensors[i].spectrumNonFinite != 0) {
                flagged.push_back(markdownCode(m.model->tensors()[i].name) + " (" +
                                  groupDigits(mm.tensors[i].nonFinite) + ")");
            }
        }
        if (!constant.empty()) {
            out << "\nConstant tensors (no θ): " << constant.size() << ", e.g. "
                << markdownCode(constant.front()) << ".\n";
        }
        if (!flagged.empty()) {
            out << "\n**Non-finite values (NaN or ±∞), left out of the statistics:** ";
            for (std::size_t k = 0; k < flagged.size(); ++k) {
                out << (k ? ", " : "") << flagged[k];
            }
            out << "\n";
        }
    }
    return out.str();
}

std::string measurementHeadline(const ModelMeasurement& m) {
    return "Z-measure " + std::string(kZMeasureVersion) + " · " + sampleText(m.params) +
           " per tensor · θ mean " + fixed(groupTheta(m.model), 2) + "° over " +
           std::to_string(m.model.measured) + " of " + std::to_string(m.model.tensors) + " tensors";
}

std::string tensorThetaTable(const MeasuredModel& m) {
    std::size_t width = 6;
    for (const auto& t : m.model->tensors()) {
        width = std::max(width, escapeText(t.name).size());
    }
    std::ostringstream out;
    out << padText("tensor", width + 2) << padText("system", 10) << padText("role", 18)
        << padText("layer", 6, true) << "  " << padText("dtype", 8) << padText("θ", 7, true)
        << padText("H", 7, true) << padText("K", 9, true) << padText("C", 9, true) << padText("β", 7, true)
        << "\n";
    for (std::size_t i = 0; i < m.measurement.tensors.size(); ++i) {
        if (!m.reported(i)) {
            continue;
        }
        const ZResult& z = m.measurement.tensors[i];
        const TensorAnatomy& a = m.anatomy.tensors[i];
        std::string theta = z.constant ? "const" : fixed(z.theta, 2);
        if (z.nonFinite != 0) {
            theta += "!";
        }
        out << padText(escapeText(m.model->tensors()[i].name), width + 2)
            << padText(std::string(systemName(a.system)), 10) << padText(escapeText(a.role), 18)
            << padText(a.layer ? std::to_string(*a.layer) : "-", 6, true) << "  "
            << padText(std::string(tensorTypeName(m.model->tensors()[i].type)), 8) << padText(theta, 7, true)
            << padText(fixed(z.H, 3), 7, true) << padText(fixed(z.K, 2), 9, true)
            << padText(fixed(z.C, 2), 9, true) << padText(fixed(z.beta, 2), 7, true) << "\n";
    }
    return out.str();
}

std::string systemThetaTable(const MeasuredModel& m) {
    std::ostringstream out;
    out << padText("system", 10) << padText("tensors", 8, true) << padText("θ mean", 9, true)
        << padText("θ min", 8, true) << padText("θ max", 8, true) << padText("signal", 8, true) << "\n";
    auto row = [&](const ThetaGroup& g) {
        const bool any = g.measured != 0;
        out << padText(g.key, 10) << padText(std::to_string(g.measured), 8, true)
            << padText(fixed(groupTheta(g), 2), 9, true)
            << padText(fixed(any ? std::optional(g.thetaMin) : std::nullopt, 2), 8, true)
            << padText(fixed(any ? std::optional(g.thetaMax) : std::nullopt, 2), 8, true)
            << padText(fixed(any ? std::optional(g.signalMean) : std::nullopt, 3), 8, true) << "\n";
    };
    for (const auto& g : m.measurement.bySystem) {
        row(g);
    }
    ThetaGroup whole = m.measurement.model;
    whole.key = "model";
    row(whole);
    return out.str();
}

std::string rankingTable(const std::vector<MeasuredModel>& models) {
    std::size_t width = 5;
    for (const auto& m : models) {
        width = std::max(width, escapeText(m.measurement.name).size());
    }
    std::ostringstream out;
    out << padText("#", 3, true) << "  " << padText("model", width + 2) << padText("θ mean", 9, true)
        << padText("signal", 8, true) << padText("tensors", 9, true) << padText("parameters", 12, true)
        << "\n";
    int rank = 0;
    for (const ModelMeasurement* r : zRanking(measurementsOf(models))) {
        out << padText(std::to_string(++rank), 3, true) << "  " << padText(escapeText(r->name), width + 2)
            << padText(fixed(groupTheta(r->model), 2) + "°", 9, true)
            << padText(fixed(r->model.measured ? std::optional(r->model.signalMean) : std::nullopt, 3), 8,
                       true)
            << padText(std::to_string(r->model.measured), 9, true)
            << padText(humanCount(r->model.parameters), 12, true) << "\n";
    }
    return out.str();
}

} // namespace organ
