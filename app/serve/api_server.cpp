#include "api_server.h"

#include "request_guard.h"

#include "anatomy/model_summary.h"
#include "anatomy/model_validation.h"
#include "fleet/fleet.h"
#include "graft/assembly.h"
#include "graft/graft_check.h"
#include "measure/measure_cache.h"
#include "measure/quant_error.h"
#include "organs/organ_directory.h"
#include "purify/purify_model.h"
#include "quant/quantize_model.h"
#include "support/bounded_json.h"
#include "support/mapped_file.h"
#include "support/safe_files.h"
#include "support/sha256.h"
#include "support/text_safety.h"
#include "surgeon/surgeon.h"
#include "vitals/quant_pareto.h"

#include <algorithm>
#include <optional>

#include <QHttpServerRequest>
#include <QHttpServerResponder>
#include <QTcpServer>
#include <QUrlQuery>
#include <limits>

namespace organ::api {

extern const char* const kOpenApiText; // docs/openapi.json, compiled in

// What a job of the API gives back besides its state: the JSON its client reads.
struct ApiResult {
    mutable std::mutex mutex;
    nlohmann::json result;
    std::string error;
};

namespace {

// Thrown by a job that failed with something to show (a plan's findings).
struct JobFailure {
    std::string message;
    nlohmann::json result;
};

// A request's JSON values: a body of at most --max-body bytes (1 GiB at most) parses to some 50
// bytes a value.
constexpr std::uint64_t kMaxBodyValues = 1u << 21;

// The request body: one JSON object whose keys are all among `allowed`.
nlohmann::json bodyObject(const QHttpServerRequest& request, std::initializer_list<const char*> allowed) {
    const QByteArray body = request.body();
    if (body.trimmed().isEmpty()) {
        throw ApiError{400, "the request needs a JSON object as its body"};
    }
    // Counted, its nesting and keys checked as it is parsed (support/bounded_json.h).
    nlohmann::json j;
    try {
        j = parseBoundedJson(std::string_view(body.constData(), std::size_t(body.size())), kMaxBodyValues,
                             "the body", "a request");
    } catch (const FormatError& error) {
        throw ApiError{400, error.what()};
    }
    if (!j.is_object()) {
        throw ApiError{400, "the body must be a JSON object"};
    }
    for (const auto& [key, value] : j.items()) {
        bool known = false;
        for (const char* name : allowed) {
            known = known || key == name;
        }
        if (!known) {
            throw ApiError{400, "unknown field '" + key + "'"};
        }
    }
    return j;
}

std::string stringField(const nlohmann::json& body, const char* key, bool required = true) {
    const auto it = body.find(key);
    if (it == body.end()) {
        if (required) {
            throw ApiError{400, std::string("the field '") + key + "' is required"};
        }
        return {};
    }
    if (!it->is_string()) {
        throw ApiError{400, std::string("the field '") + key + "' must be a string"};
    }
    return it->get<std::string>();
}

bool booleanField(const nlohmann::json& body, const char* key) {
    const auto it = body.find(key);
    if (it == body.end()) {
        return false;
    }
    if (!it->is_boolean()) {
        throw ApiError{400, std::string("the field '") + key + "' must be true or false"};
    }
    return it->get<bool>();
}

ZParams sampleField(const nlohmann::json& body) {
    ZParams params;
    const auto it = body.find("sample");
    if (it == body.end()) {
        return params;
    }
    if (it->is_string() && it->get<std::string>() == "all") {
        params.sample = kSampleAll;
    } else if (it->is_number_unsigned() && it->get<std::uint64_t>() > 0) {
        params.sample = it->get<std::uint64_t>();
    } else {
        throw ApiError{400, "'sample' is a positive number or \"all\""};
    }
    return params;
}

// A whole number of at least 0 (`fallback` when absent), refused above `max`.
std::uint64_t countField(const nlohmann::json& body, const char* key, std::uint64_t fallback,
                         std::uint64_t max) {
    const auto it = body.find(key);
    if (it == body.end()) {
        return fallback;
    }
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() > max) {
        throw ApiError{400, std::string("the field '") + key + "' is a whole number from 0 to " +
                                std::to_string(max)};
    }
    return it->get<std::uint64_t>();
}

// A finite number in [low, high] (`fallback` when absent).
double numberField(const nlohmann::json& body, const char* key, double fallback, double low, double high) {
    const auto it = body.find(key);
    if (it == body.end()) {
        return fallback;
    }
    if (!it->is_number() || !(it->get<double>() >= low && it->get<double>() <= high)) {
        throw ApiError{400, std::string("the field '") + key + "' is a number from " + std::to_string(low) +
                                " to " + std::to_string(high)};
    }
    return it->get<double>();
}

std::string queryPath(const QHttpServerRequest& request) {
    const QUrlQuery query = request.query();
    if (!query.hasQueryItem(QStringLiteral("path"))) {
        throw ApiError{400, "the query needs ?path=FILE"};
    }
    return query.queryItemValue(QStringLiteral("path"), QUrl::FullyDecoded).toStdString();
}

// A request whose Connection header says "close" is its connection's last (RFC 9112, 9.6): once
// it is answered the server closes the connection, and its slot is free at once, not when the
// client's close arrives, after connections made since may have been refused for want of it.
void closeIfAsked(const QHttpServerRequest& request, QTcpSocket* socket) {
    for (const auto& [name, value] : request.headers()) {
        if (name.compare("connection", Qt::CaseInsensitive) != 0) {
            continue;
        }
        for (const QByteArray& option : value.split(',')) {
            if (option.trimmed().compare("close", Qt::CaseInsensitive) == 0) {
                socket->disconnectFromHost(); // after what is written has been sent
                return;
            }
        }
    }
}

} // namespace

bool sameToken(const QByteArray& given, const QByteArray& expected) {
    // Both hashed first: the comparison then runs over 32 bytes whatever the lengths.
    auto digest = [](const QByteArray& text) {
        Sha256 sha;
        sha.update(std::as_bytes(std::span(text.constData(), static_cast<std::size_t>(text.size()))));
        return sha.finish();
    };
    const auto a = digest(given);
    const auto b = digest(expected);
    unsigned difference = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        difference |= static_cast<unsigned>(a[i] ^ b[i]);
    }
    return difference == 0;
}

ApiServer::ApiServer(ApiConfig config, QObject* parent)
    : QAbstractHttpServer(parent), m_config(std::move(config)), m_paths(m_config.root),
      m_queue(std::make_unique<JobQueue>(std::size_t(std::max(1, m_config.maxJobs)), m_config.keepFinished)) {
}

ApiServer::~ApiServer() = default; // the queue cancels its jobs and waits for them

bool ApiServer::listenOn(const QHostAddress& address, quint16 port, QString* error) {
    m_tcp = new GuardedTcpServer(this, m_config.maxBody, this);
    // Connections refused by a cap reconnect at once: with Qt's 50 the kernel's queue of those
    // not yet accepted overflows, and a dropped connection costs any client a second.
    m_tcp->setListenBacklogSize(1024);
    if (!m_tcp->listen(address, port)) {
        *error = m_tcp->errorString();
        return false;
    }
    bind(m_tcp);
    return true;
}

quint16 ApiServer::port() const {
    return m_tcp != nullptr ? m_tcp->serverPort() : 0;
}

void ApiServer::missingHandler(const QHttpServerRequest& request, QTcpSocket* socket) {
    QHttpServerResponder responder = makeResponder(request, socket);
    responder.write(errorBody(404, "no such endpoint"), "application/json",
                    QHttpServerResponder::StatusCode::NotFound);
}

bool ApiServer::handleRequest(const QHttpServerRequest& request, QTcpSocket* socket) {
    Reply reply;
    try {
        reply = dispatch(request);
    } catch (const ApiError& error) {
        reply = {error.status, {{"error", {{"status", error.status}, {"message", error.message}}}}, {}};
    } catch (const std::bad_alloc&) {
        reply = {500, {{"error", {{"status", 500}, {"message", "out of memory"}}}}, {}};
    } catch (const std::exception& error) {
        reply = {500, {{"error", {{"status", 500}, {"message", error.what()}}}}, {}};
    }
    const QByteArray body = QByteArray::fromStdString(dumpJson(reply.body, 1)) + '\n';
    QHttpServerResponder responder = makeResponder(request, socket);
    responder.writeStatusLine(static_cast<QHttpServerResponder::StatusCode>(reply.status));
    responder.writeHeader("Content-Type", "application/json");
    responder.writeHeader("Content-Length", QByteArray::number(body.size()));
    responder.writeHeader("Cache-Control", "no-store");
    if (reply.status == 401) {
        responder.writeHeader("WWW-Authenticate", "Bearer");
    }
    if (!reply.allow.isEmpty()) {
        responder.writeHeader("Allow", reply.allow);
    }
    responder.writeBody(body);
    closeIfAsked(request, socket);
    return true;
}

void ApiServer::checkToken(const QHttpServerRequest& request) const {
    if (m_config.token.isEmpty()) {
        return;
    }
    QByteArray authorization;
    for (const auto& [name, value] : request.headers()) {
        if (name.compare("authorization", Qt::CaseInsensitive) == 0) {
            authorization = value;
        }
    }
    if (authorization.isEmpty()) {
        throw ApiError{401, "this server needs a token: send Authorization: Bearer TOKEN"};
    }
    if (!authorization.startsWith("Bearer ") || !sameToken(authorization.mid(7).trimmed(), m_config.token)) {
        throw ApiError{401, "the token is wrong"};
    }
}

// One function per route; /v1/jobs/ID is matched by its prefix.
ApiServer::Reply ApiServer::dispatch(const QHttpServerRequest& request) {
    checkToken(request);
    using Method = QHttpServerRequest::Method;
    using Handler = Reply (ApiServer::*)(const QHttpServerRequest&);
    struct Route {
        const char* path;
        Method method;
        Handler handle;
    };
    // A job is started by a POST to its route.
    const auto job = [](const char* path, Handler handle) { return Route{path, Method::Post, handle}; };
    static const Route routes[] = {
        {"/v1/health", Method::Get, &ApiServer::health},
        {"/v1/openapi.json", Method::Get, &ApiServer::openApi},
        {"/v1/inspect", Method::Get, &ApiServer::inspect},
        {"/v1/validate", Method::Get, &ApiServer::validate},
        {"/v1/plan/check", Method::Post, &ApiServer::checkPlan},
        {"/v1/jobs", Method::Get, &ApiServer::listJobs},
        job("/v1/measure", &ApiServer::measure),
        job("/v1/fleet", &ApiServer::fleet),
        job("/v1/assemble", &ApiServer::assemble),
        job("/v1/extract", &ApiServer::extract),
        job("/v1/purify", &ApiServer::purify),
        job("/v1/quantize", &ApiServer::quantize),
        job("/v1/quant-lab", &ApiServer::quantLab),
        job("/v1/surgeon", &ApiServer::surgeon),
    };
    const std::string path = request.url().path(QUrl::FullyDecoded).toStdString();
    for (const Route& route : routes) {
        if (path == route.path) {
            if (request.method() != route.method) {
                throw ApiError{405, std::string("use ") + (route.method == Method::Get ? "GET" : "POST") +
                                        " for " + path};
            }
            return (this->*route.handle)(request);
        }
    }
    if (path.rfind("/v1/jobs/", 0) == 0) {
        return oneJob(request, path.substr(9));
    }
    throw ApiError{404, "no endpoint " + path + " (see docs/http-api.md)"};
}

std::shared_ptr<const GgufModel> ApiServer::openInside(const std::string& given) const {
    const RootedPath path = m_paths.input(given);
    try {
        return openModel(path);
    } catch (const std::exception& error) {
        throw ApiError{422, error.what()};
    }
}

GraftPlan ApiServer::planFrom(const nlohmann::json& body) const {
    GraftPlan plan;
    try {
        if (body.contains("plan") == body.contains("plan_path")) {
            throw ApiError{400, "give the plan inline as 'plan' or as a file as 'plan_path'"};
        }
        if (body.contains("plan_path")) {
            plan = loadGraftPlan(m_paths.input(stringField(body, "plan_path")));
        } else {
            plan = graftPlanFromJson(body.at("plan"), "the request's plan");
        }
    } catch (const ApiError&) {
        throw;
    } catch (const std::exception& error) {
        throw ApiError{422, error.what()};
    }
    plan.base = m_paths.input(plan.base).path;
    for (auto& [id, donor] : plan.donors) {
        donor = m_paths.input(donor).path;
    }
    for (GraftOperation& o : plan.operations) {
        if (!o.quantize.imatrix.empty()) {
            o.quantize.imatrix = m_paths.input(o.quantize.imatrix).path;
        }
    }
    return plan;
}

GraftOperation ApiServer::operationOf(nlohmann::json body, const char* op) const {
    body.erase("path");
    body.erase("output");
    body["op"] = op;
    try {
        return graftPlanFromJson({{"format", "organ-graft-plan"},
                                  {"version", kGraftPlanVersion},
                                  {"base", "model.gguf"},
                                  {"operations", nlohmann::json::array({std::move(body)})}},
                                 "the request")
            .operations.front();
    } catch (const std::exception& error) {
        throw ApiError{400, error.what()};
    }
}

GraftModels ApiServer::openPlanModels(const GraftPlan& plan) const {
    try {
        return GraftModels::open(plan, m_paths.root());
    } catch (const std::exception& error) {
        throw ApiError{422, error.what()};
    }
}

ApiServer::Reply ApiServer::health(const QHttpServerRequest&) {
    return {200, {{"ok", true}, {"service", "organ"}, {"api", 1}}, {}};
}

ApiServer::Reply ApiServer::openApi(const QHttpServerRequest&) {
    return {200, nlohmann::json::parse(kOpenApiText), {}};
}

ApiServer::Reply ApiServer::inspect(const QHttpServerRequest& request) {
    const auto model = openInside(queryPath(request));
    std::uint64_t maxArray = std::numeric_limits<std::uint64_t>::max();
    if (const QString text = request.query().queryItemValue(QStringLiteral("max_array")); !text.isEmpty()) {
        bool ok = false;
        maxArray = text.toULongLong(&ok);
        if (!ok) {
            throw ApiError{400, "max_array is a number"};
        }
    }
    return {200, modelToJson(*model, analyzeAnatomy(*model), maxArray), {}};
}

ApiServer::Reply ApiServer::validate(const QHttpServerRequest& request) {
    const auto model = openInside(queryPath(request));
    return {200, validationToJson(model->path(), validateModel(*model)), {}};
}

ApiServer::Reply ApiServer::checkPlan(const QHttpServerRequest& request) {
    const nlohmann::json body = bodyObject(request, {"plan", "plan_path"});
    const GraftPlan plan = planFrom(body);
    const GraftModels models = openPlanModels(plan);
    try {
        const CompatibilityReport report = checkGraft(plan, models);
        nlohmann::json document = findingsToJson(report.findings);
        document["plan"] = body.contains("plan_path") ? body.at("plan_path") : nlohmann::json("inline");
        return {200, std::move(document), {}};
    } catch (const std::exception& error) {
        throw ApiError{422, error.what()};
    }
}

ApiServer::Reply ApiServer::measure(const QHttpServerRequest& request) {
    const nlohmann::json body = bodyObject(request, {"path", "sample"});
    const ZParams params = sampleField(body);
    auto model = openInside(stringField(body, "path"));
    return startJob("measure",
                    [model, params](const ProgressFn& progress, const StopToken& stop) -> nlohmann::json {
                        MeasuredModel m;
                        m.model = model;
                        m.anatomy = analyzeAnatomy(*model);
                        MeasureOptions options;
                        options.params = params;
                        const MeasurementCache cache;
                        const CachedMeasurement done = measureWithCache(m, options, &cache, progress, &stop);
                        if (!done.result.isOk()) {
                            throw JobFailure{done.result.message, nullptr};
                        }
                        return measurementsDocument({m});
                    });
}

ApiServer::Reply ApiServer::fleet(const QHttpServerRequest& request) {
    const nlohmann::json body = bodyObject(request, {"paths", "sample"});
    const ZParams params = sampleField(body);
    const auto list = body.find("paths");
    if (list == body.end() || !list->is_array() || list->empty()) {
        throw ApiError{400, "'paths' is a list of files and folders"};
    }
    std::vector<std::string> roots;
    for (const auto& item : *list) {
        if (!item.is_string()) {
            throw ApiError{400, "'paths' is a list of strings"};
        }
        roots.push_back(m_paths.input(item.get<std::string>()).path);
    }
    return startJob("fleet",
                    [roots, params, root = m_paths.root()](const ProgressFn& progress,
                                                           const StopToken& stop) -> nlohmann::json {
                        const MeasurementCache cache;
                        FleetOptions options;
                        options.params = params;
                        options.cache = &cache;
                        options.root = root;
                        FleetReport report;
                        const JobResult result =
                            measureFleet(findFleetModels(roots, root), options, report, progress, &stop);
                        if (!result.isOk()) {
                            throw JobFailure{result.message, nullptr};
                        }
                        return fleetToJson(report);
                    });
}

ApiServer::Reply ApiServer::assemble(const QHttpServerRequest& request) {
    const nlohmann::json body = bodyObject(request, {"plan", "plan_path", "output", "keep_invalid"});
    const GraftPlan plan = planFrom(body);
    const std::string given = body.contains("output") ? stringField(body, "output") : plan.output;
    if (given.empty()) {
        throw ApiError{400, "the plan names no output: give 'output'"};
    }
    const OutputTarget output = m_paths.output(given);
    AssemblyOptions options;
    options.keepInvalid = booleanField(body, "keep_invalid");
    auto models = std::make_shared<GraftModels>(openPlanModels(plan));
    return startJob(
        "assemble",
        [plan, models, output, options](const ProgressFn& progress, const StopToken& stop) -> nlohmann::json {
            const GraftOutcome outcome =
                graftChimera(plan, *models, output.path, options, {}, progress, &stop);
            const nlohmann::json result = graftOutcomeToJson(outcome, output.path.path);
            // Kept invalid on request, an assembly with errors is still written: the job is
            // done, and its result names the errors.
            if (!outcome.written.isOk()) {
                throw JobFailure{outcome.written.message, result};
            }
            return result;
        },
        output.claim);
}

ApiServer::Reply ApiServer::extract(const QHttpServerRequest& request) {
    const nlohmann::json body = bodyObject(request, {"path", "output"});
    auto model = openInside(stringField(body, "path"));
    const OutputTarget output = m_paths.output(stringField(body, "output"));
    return startJob(
        "extract",
        [model, output](const ProgressFn& progress, const StopToken& stop) -> nlohmann::json {
            const JobResult done = extractOrgans(*model, output.path, nullptr, progress, &stop);
            if (!done.isOk()) {
                throw JobFailure{done.message, nullptr};
            }
            return extractionToJson(*model, output.path.path);
        },
        output.claim);
}

// The purification is read as a plan's purify operation: one grammar, one set of checks.
ApiServer::Reply ApiServer::purify(const QHttpServerRequest& request) {
    const nlohmann::json body = bodyObject(request, {"path", "output", "method", "keep", "threshold",
                                                     "attenuation", "layers", "system", "roles", "tensors"});
    auto model = openInside(stringField(body, "path"));
    const OutputTarget output = m_paths.output(stringField(body, "output"));
    const GraftOperation parsed = operationOf(body, "purify");
    return startJob(
        "purify",
        [model, output, parsed](const ProgressFn& progress, const StopToken& stop) -> nlohmann::json {
            const PurifyOutcome outcome =
                purifyModel(*model, parsed.select, parsed.purify, output.path, progress, &stop);
            if (!outcome.written.isOk()) {
                throw JobFailure{outcome.written.message, nullptr};
            }
            return purifyOutcomeToJson(outcome, output.path.path);
        },
        output.claim);
}

// The recipe is read as a plan's quantize operation, as `organ quantize` takes its options.
ApiServer::Reply ApiServer::quantize(const QHttpServerRequest& request) {
    const nlohmann::json body =
        bodyObject(request, {"path", "output", "type", "imatrix", "tensor_types", "output_tensor_type",
                             "token_embedding_type", "pure", "leave_output_tensor"});
    auto model = openInside(stringField(body, "path"));
    const OutputTarget output = m_paths.output(stringField(body, "output"));
    const QuantizeRecipe recipe = operationOf(body, "quantize").quantize;
    std::shared_ptr<const ImatrixData> importance;
    if (!recipe.imatrix.empty()) {
        const RootedPath path = m_paths.input(recipe.imatrix);
        try {
            importance = std::make_shared<const ImatrixData>(readImatrix(path));
        } catch (const std::exception& error) {
            throw ApiError{422, error.what()};
        }
    }
    return startJob(
        "quantize",
        [model, output, recipe, importance](const ProgressFn& progress,
                                            const StopToken& stop) -> nlohmann::json {
            const QuantizeOutcome outcome =
                quantizeModel(*model, recipe, importance.get(), output.path, progress, &stop);
            if (!outcome.written.isOk()) {
                throw JobFailure{outcome.written.message, nullptr};
            }
            return quantizeOutcomeToJson(outcome, recipe, output.path.path);
        },
        output.claim);
}

// The quantization lab: the error report (organ quantize --report) and/or the Pareto sweep
// (sensitivity, budget mixes, llama-quantize's mixes measured), as one job.
ApiServer::Reply ApiServer::quantLab(const QHttpServerRequest& request) {
    const nlohmann::json body = bodyObject(request, {"path", "imatrix", "report", "pareto", "text_path",
                                                     "chunk", "groups", "budgets", "measure"});
    const bool report = booleanField(body, "report");
    const bool pareto = booleanField(body, "pareto");
    if (!report && !pareto) {
        throw ApiError{400, "ask for 'report', 'pareto' or both (true)"};
    }
    auto model = openInside(stringField(body, "path"));
    ParetoRequest sweep;
    sweep.sensitivity.types = defaultBudgetTypes();
    sweep.measure = !body.contains("measure") || booleanField(body, "measure");
    if (const std::string groups = stringField(body, "groups", false); !groups.empty()) {
        const auto grouping = quantGroupingFromName(groups);
        if (!grouping) {
            throw ApiError{400, "'groups' is \"tensor\", \"layer\" or \"role\""};
        }
        sweep.sensitivity.grouping = *grouping;
    }
    for (const auto& [key, limit, target] :
         {std::tuple("chunk", std::uint64_t(1) << 20, &sweep.sensitivity.chunk),
          std::tuple("budgets", std::uint64_t(64), &sweep.budgets)}) {
        if (const auto it = body.find(key); it != body.end()) {
            if (!it->is_number_unsigned() || it->get<std::uint64_t>() > limit) {
                throw ApiError{400,
                               std::string("'") + key + "' is a number from 0 to " + std::to_string(limit)};
            }
            *target = it->get<std::size_t>();
        }
    }
    std::shared_ptr<const ImatrixData> importance;
    std::string imatrix;
    try {
        if (const std::string given = stringField(body, "imatrix", false); !given.empty()) {
            const RootedPath path = m_paths.input(given);
            imatrix = path.path;
            importance = std::make_shared<const ImatrixData>(readImatrix(path));
        }
        if (const std::string given = stringField(body, "text_path", false); !given.empty()) {
            sweep.sensitivity.text = readLabText(m_paths.input(given));
        }
    } catch (const ApiError&) {
        throw;
    } catch (const std::exception& error) {
        throw ApiError{422, error.what()};
    }
    return startJob("quant-lab",
                    [model, importance, imatrix, sweep, report,
                     pareto](const ProgressFn& progress, const StopToken& stop) -> nlohmann::json {
                        nlohmann::json result = nlohmann::json::object();
                        if (report) {
                            const auto errors = measureQuantErrors(
                                *model, defaultLabTypes(), importance.get(), imatrix, progress, &stop);
                            if (!errors) {
                                throw JobFailure{"cancelled", nullptr};
                            }
                            result["report"] = quantErrorsToJson(*errors);
                        }
                        if (pareto) {
                            const auto front =
                                measurePareto(model, importance.get(), imatrix, sweep, progress, &stop);
                            if (!front) {
                                throw JobFailure{"cancelled", nullptr};
                            }
                            result["pareto"] = paretoToJson(*front);
                        }
                        return result;
                    });
}

// The search's request as organ surgeon's options say it; the text inline or as a file inside the
// root. The result is the record (every candidate with its plan, the best by index): nothing is
// written. A cancelled search has no result, as every cancelled job; a budget ends it with one.
ApiServer::Reply ApiServer::surgeon(const QHttpServerRequest& request) {
    const nlohmann::json body = bodyObject(request, {"path",
                                                     "goal",
                                                     "donors",
                                                     "reference",
                                                     "text",
                                                     "text_path",
                                                     "holdout",
                                                     "chunk",
                                                     "prune",
                                                     "beam",
                                                     "method",
                                                     "points",
                                                     "offspring",
                                                     "generations",
                                                     "sweeps",
                                                     "seed",
                                                     "budget_evaluations",
                                                     "budget_seconds",
                                                     "max_bytes",
                                                     "max_bpw",
                                                     "max_layers"});
    SurgeonRequest r;
    const std::string goal = stringField(body, "goal");
    const std::string goals[] = {"prune", "merge", "organs"};
    const auto known = std::find(std::begin(goals), std::end(goals), goal);
    if (known == std::end(goals)) {
        throw ApiError{400, "'goal' is prune, merge or organs"};
    }
    r.goal = static_cast<SurgeonGoal>(known - std::begin(goals));
    r.chunk = countField(body, "chunk", 0, kMaxVitalsTokens);
    r.prune = static_cast<std::uint32_t>(countField(body, "prune", 1, kMaxChimeraLayers));
    r.beam = countField(body, "beam", 1, kMaxSurgeonBeam);
    r.controlPoints =
        static_cast<std::uint32_t>(countField(body, "points", r.controlPoints, kMaxSurgeonControlPoints));
    r.offspring = countField(body, "offspring", r.offspring, kMaxSurgeonOffspring);
    r.generations =
        static_cast<std::uint32_t>(countField(body, "generations", r.generations, kMaxSurgeonGenerations));
    r.sweeps = static_cast<std::uint32_t>(countField(body, "sweeps", r.sweeps, kMaxSurgeonSweeps));
    r.seed = countField(body, "seed", 0, std::numeric_limits<std::uint64_t>::max());
    r.maxEvaluations = countField(body, "budget_evaluations", 0, std::numeric_limits<std::uint32_t>::max());
    r.maxSeconds = numberField(body, "budget_seconds", 0, 0, 1e7);
    if (body.contains("max_bytes")) {
        r.constraints.maxBytes = countField(body, "max_bytes", 0, std::numeric_limits<std::uint64_t>::max());
    }
    if (body.contains("max_bpw")) {
        r.constraints.maxBitsPerWeight = numberField(body, "max_bpw", 0, 0, 64);
    }
    if (body.contains("max_layers")) {
        r.constraints.maxLayers =
            static_cast<std::uint32_t>(countField(body, "max_layers", 0, kMaxChimeraLayers));
    }
    if (const std::string method = stringField(body, "method", false); !method.empty()) {
        const auto m = mergeMethodFromName(method);
        if (!m || (*m != MergeMethod::TaskArithmetic && *m != MergeMethod::Ties)) {
            throw ApiError{400, "'method' is task_arithmetic or ties"};
        }
        r.method = *m;
    }
    if (body.contains("text") && body.contains("text_path")) {
        throw ApiError{400, "give the text inline as 'text' or as a file as 'text_path', not both"};
    }
    std::string text = stringField(body, "text", false);
    const double holdout = numberField(body, "holdout", 0, 0, 0.99);
    SurgeonModels models;
    try {
        if (body.contains("text_path")) {
            text = readSmallFile(m_paths.input(stringField(body, "text_path")), 4u << 20);
        }
        std::tie(r.text, r.holdout) = splitHoldout(text, holdout);
    } catch (const ApiError&) {
        throw;
    } catch (const std::exception& error) {
        throw ApiError{422, error.what()};
    }
    const std::string recipient = stringField(body, "path");
    models.recipient = {m_paths.input(recipient).path, openInside(recipient)};
    if (const auto donors = body.find("donors"); donors != body.end()) {
        if (!donors->is_array() || donors->size() > 64) {
            throw ApiError{400, "'donors' is a list of at most 64 models"};
        }
        for (const auto& d : *donors) {
            if (!d.is_string()) {
                throw ApiError{400, "'donors' is a list of strings"};
            }
            models.donors.emplace_back(m_paths.input(d.get<std::string>()).path,
                                       openInside(d.get<std::string>()));
        }
    }
    if (const std::string reference = stringField(body, "reference", false); !reference.empty()) {
        models.reference.emplace(m_paths.input(reference).path, openInside(reference));
    }
    // A request out of range (prune more blocks than there are, a donor of another shape) fails
    // the job with the engine's message.
    return startJob("surgeon",
                    [models, r](const ProgressFn& progress, const StopToken& stop) -> nlohmann::json {
                        return surgeonToJson(runSurgeon(models, r, progress, &stop));
                    });
}

ApiServer::Reply ApiServer::listJobs(const QHttpServerRequest&) {
    nlohmann::json list = nlohmann::json::array();
    for (const JobSnapshot& job : m_queue->snapshots()) {
        nlohmann::json j = jobJson(job);
        j.erase("result");
        list.push_back(std::move(j));
    }
    return {200,
            {{"jobs", std::move(list)}, {"running", m_queue->active()}, {"max_running", m_config.maxJobs}},
            {}};
}

ApiServer::Reply ApiServer::oneJob(const QHttpServerRequest& request, const std::string& idText) {
    const bool numeric =
        !idText.empty() && idText.size() < 19 && idText.find_first_not_of("0123456789") == std::string::npos;
    const std::optional<JobSnapshot> job = numeric ? m_queue->snapshot(std::stoull(idText)) : std::nullopt;
    if (!job) {
        throw ApiError{404, "no job '" + idText + "'"};
    }
    if (request.method() == QHttpServerRequest::Method::Get) {
        return {200, jobJson(*job), {}};
    }
    if (request.method() == QHttpServerRequest::Method::Delete) {
        if (hasEnded(job->state)) {
            throw ApiError{409, "job " + idText + " has already ended (" +
                                    std::string(jobStateName(job->state)) + ")"};
        }
        // Granted, the job is sure to end cancelled; refused, it is past its point of no return.
        if (!m_queue->cancel(job->id)) {
            throw ApiError{409, "job " + idText + " is finishing: its output is already in place"};
        }
        return {202, jobJson(*m_queue->snapshot(job->id)), {}};
    }
    return {405,
            {{"error", {{"status", 405}, {"message", "use GET or DELETE for /v1/jobs/" + idText}}}},
            "GET, DELETE"};
}

// The job runs on the queue's workers; its JSON result is kept beside its snapshot. A job that
// writes names its output's claim, held from now until the job has ended.
ApiServer::Reply ApiServer::startJob(const std::string& kind, ApiWork work, const std::string& claim) {
    std::lock_guard lock(m_startMutex);
    const std::size_t running = m_queue->active();
    if (running >= std::size_t(m_config.maxJobs)) {
        throw ApiError{429, std::to_string(running) + " jobs are running, the most this server runs at once: "
                                                      "wait for one to end or cancel one"};
    }
    if (!claim.empty()) {
        std::lock_guard claimsLock(m_claimsMutex);
        if (const auto it = m_claims.find(claim); it != m_claims.end()) {
            throw ApiError{409, "job " + std::to_string(it->second) +
                                    " is writing that output; one job writes a name at a time"};
        }
        m_claims.emplace(claim, 0);
    }
    auto result = std::make_shared<ApiResult>();
    const JobId id = m_queue->submit(
        kind,
        [work = std::move(work), result](const ProgressFn& progress, const StopToken& stop) {
            try {
                // A file cut short while the job read it gave it zeros past its new end
                // (MappedFile): its result is not the files'.
                const std::uint64_t cutsBefore = MappedFile::cutEvents();
                nlohmann::json done = work(progress, stop);
                std::lock_guard resultLock(result->mutex);
                if (MappedFile::cutEvents() != cutsBefore) {
                    result->error = MappedFile::cutShortMessage() + ": the job read zeros past its new end";
                    return JobResult::failed(result->error);
                }
                result->result = std::move(done);
                return JobResult::ok();
            } catch (const JobFailure& failure) {
                std::lock_guard resultLock(result->mutex);
                result->error = failure.message;
                result->result = failure.result;
                return JobResult::failed(failure.message);
            } catch (const std::bad_alloc&) {
                return JobResult::failed("out of memory");
            }
        },
        // Let go of the claim as the job ends: whoever sees it ended may write that name.
        [this, claim](const JobSnapshot&) {
            if (!claim.empty()) {
                std::lock_guard claimsLock(m_claimsMutex);
                m_claims.erase(claim);
            }
        });
    if (!claim.empty()) {
        std::lock_guard claimsLock(m_claimsMutex);
        if (const auto it = m_claims.find(claim); it != m_claims.end() && it->second == 0) {
            it->second = id;
        }
    }
    {
        std::lock_guard resultsLock(m_resultsMutex);
        m_results[id] = std::move(result);
        std::erase_if(m_results, [this](const auto& entry) { return !m_queue->snapshot(entry.first); });
    }
    return {202, jobJson(*m_queue->snapshot(id)), {}};
}

nlohmann::json ApiServer::jobJson(const JobSnapshot& job) const {
    nlohmann::json j = {{"id", job.id},
                        {"kind", job.kind},
                        {"state", jobStateName(job.state)},
                        {"href", "/v1/jobs/" + std::to_string(job.id)},
                        {"progress",
                         {{"done", job.done},
                          {"total", job.total},
                          {"stage", job.stage},
                          {"fraction", job.total != 0 ? static_cast<double>(job.done) / job.total : 0.0}}}};
    if (job.state == JobState::Cancelled) {
        j["error"] = "cancelled";
        return j; // whatever it computed is not its result
    }
    if (job.state == JobState::Failed) {
        j["error"] = job.message;
    }
    std::shared_ptr<const ApiResult> result;
    {
        std::lock_guard lock(m_resultsMutex);
        if (const auto it = m_results.find(job.id); it != m_results.end()) {
            result = it->second;
        }
    }
    if (result && hasEnded(job.state)) {
        std::lock_guard lock(result->mutex);
        if (!result->result.is_null()) {
            j["result"] = result->result;
        }
    }
    return j;
}

} // namespace organ::api
