#include "api_server.h"

#include "request_guard.h"

#include "anatomy/model_summary.h"
#include "anatomy/model_validation.h"
#include "fleet/fleet.h"
#include "graft/assembly.h"
#include "graft/graft_check.h"
#include "graft/purify_model.h"
#include "measure/measure_cache.h"
#include "organs/organ_directory.h"
#include "quant/quantize_model.h"
#include "support/sha256.h"
#include "support/text_safety.h"

#include <QHttpServerRequest>
#include <QHttpServerResponder>
#include <QTcpServer>
#include <QUrlQuery>
#include <limits>

namespace organ::api {

extern const char* const kOpenApiText; // docs/openapi.json, compiled in

struct ApiJob {
    std::uint64_t id = 0;
    std::string kind;
    StopToken stop;
    mutable std::mutex mutex;
    std::string state = "running"; // running, done, failed, cancelled
    std::uint64_t done = 0;
    std::uint64_t total = 0;
    std::string stage;
    nlohmann::json result;
    std::string error;
    std::thread thread;

    void progress(const Progress& p) {
        std::lock_guard lock(mutex);
        done = p.done;
        total = p.total;
        stage = std::string(p.stage);
    }
    ProgressFn progressFn() {
        return [this](const Progress& p) { progress(p); };
    }
};

namespace {

// Thrown by a job that failed with something to show (a plan's findings).
struct JobFailure {
    std::string message;
    nlohmann::json result;
};

// A nesting deeper than this is refused before parsing: no request recurses without bound.
constexpr int kMaxJsonDepth = 64;

bool tooDeep(const QByteArray& body) {
    int depth = 0;
    bool inString = false;
    for (qsizetype i = 0; i < body.size(); ++i) {
        const char c = body[i];
        if (inString) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                inString = false;
            }
        } else if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth) {
                return true;
            }
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}

// The request body: one JSON object whose keys are all among `allowed`.
nlohmann::json bodyObject(const QHttpServerRequest& request, std::initializer_list<const char*> allowed) {
    const QByteArray body = request.body();
    if (body.trimmed().isEmpty()) {
        throw ApiError{400, "the request needs a JSON object as its body"};
    }
    if (tooDeep(body)) {
        throw ApiError{400, "the body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
    }
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(body.constData(), body.constData() + body.size());
    } catch (const nlohmann::json::exception& error) {
        throw ApiError{400, std::string("the body is not JSON: ") + error.what()};
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

std::string queryPath(const QHttpServerRequest& request) {
    const QUrlQuery query = request.query();
    if (!query.hasQueryItem(QStringLiteral("path"))) {
        throw ApiError{400, "the query needs ?path=FILE"};
    }
    return query.queryItemValue(QStringLiteral("path"), QUrl::FullyDecoded).toStdString();
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
    : QAbstractHttpServer(parent), m_config(std::move(config)), m_paths(m_config.root) {}

ApiServer::~ApiServer() {
    std::lock_guard lock(m_jobsMutex);
    for (auto& [id, job] : m_jobs) {
        job->stop.requestStop();
    }
    for (auto& [id, job] : m_jobs) {
        if (job->thread.joinable()) {
            job->thread.join();
        }
    }
}

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
    return true;
}

ApiServer::Reply ApiServer::dispatch(const QHttpServerRequest& request) {
    if (!m_config.token.isEmpty()) {
        QByteArray authorization;
        for (const auto& [name, value] : request.headers()) {
            if (name.compare("authorization", Qt::CaseInsensitive) == 0) {
                authorization = value;
            }
        }
        if (authorization.isEmpty()) {
            throw ApiError{401, "this server needs a token: send Authorization: Bearer TOKEN"};
        }
        if (!authorization.startsWith("Bearer ") ||
            !sameToken(authorization.mid(7).trimmed(), m_config.token)) {
            throw ApiError{401, "the token is wrong"};
        }
    }
    using Method = QHttpServerRequest::Method;
    const Method method = request.method();
    const std::string path = request.url().path(QUrl::FullyDecoded).toStdString();
    auto only = [&](Method wanted, const char* allow) {
        if (method != wanted) {
            throw ApiError{405, std::string("use ") + allow + " for " + path};
        }
    };
    auto openInside = [&](const std::string& given) {
        const RootedPath path = m_paths.input(given);
        try {
            return openModel(path);
        } catch (const std::exception& error) {
            throw ApiError{422, error.what()};
        }
    };
    auto planFrom = [&](const nlohmann::json& body) {
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
        for (auto& o : plan.operations) {
            if (!o.quantize.imatrix.empty()) {
                o.quantize.imatrix = m_paths.input(o.quantize.imatrix).path;
            }
        }
        return plan;
    };
    auto openPlanModels = [&](const GraftPlan& plan) {
        try {
            return GraftModels::open(plan, m_paths.root());
        } catch (const std::exception& error) {
            throw ApiError{422, error.what()};
        }
    };

    if (path == "/v1/health") {
        only(Method::Get, "GET");
        return {200, {{"ok", true}, {"service", "organ"}, {"api", 1}}, {}};
    }
    if (path == "/v1/openapi.json") {
        only(Method::Get, "GET");
        return {200, nlohmann::json::parse(kOpenApiText), {}};
    }
    if (path == "/v1/inspect") {
        only(Method::Get, "GET");
        const auto model = openInside(queryPath(request));
        std::uint64_t maxArray = std::numeric_limits<std::uint64_t>::max();
        if (const QString text = request.query().queryItemValue(QStringLiteral("max_array"));
            !text.isEmpty()) {
            bool ok = false;
            maxArray = text.toULongLong(&ok);
            if (!ok) {
                throw ApiError{400, "max_array is a number"};
            }
        }
        return {200, modelToJson(*model, analyzeAnatomy(*model), maxArray), {}};
    }
    if (path == "/v1/validate") {
        only(Method::Get, "GET");
        const std::string given = queryPath(request);
        const auto model = openInside(given);
        return {200, validationToJson(model->path(), validateModel(*model)), {}};
    }
    if (path == "/v1/plan/check") {
        only(Method::Post, "POST");
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
    if (path == "/v1/measure") {
        only(Method::Post, "POST");
        const nlohmann::json body = bodyObject(request, {"path", "sample"});
        const ZParams params = sampleField(body);
        auto model = openInside(stringField(body, "path"));
        return startJob("measure", [model, params](ApiJob& job) -> nlohmann::json {
            MeasuredModel m;
            m.model = model;
            m.anatomy = analyzeAnatomy(*model);
            MeasureOptions options;
            options.params = params;
            const MeasurementCache cache;
            const CachedMeasurement done = measureWithCache(m, options, &cache, job.progressFn(), &job.stop);
            if (!done.result.isOk()) {
                throw JobFailure{done.result.message, nullptr};
            }
            return measurementsDocument({m});
        });
    }
    if (path == "/v1/fleet") {
        only(Method::Post, "POST");
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
        return startJob("fleet", [roots, params, root = m_paths.root()](ApiJob& job) -> nlohmann::json {
            const MeasurementCache cache;
            FleetOptions options;
            options.params = params;
            options.cache = &cache;
            options.root = root;
            FleetReport report;
            const JobResult result =
                measureFleet(findFleetModels(roots, root), options, report, job.progressFn(), &job.stop);
            if (!result.isOk()) {
                throw JobFailure{result.message, nullptr};
            }
            return fleetToJson(report);
        });
    }
    if (path == "/v1/assemble") {
        only(Method::Post, "POST");
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
            [plan, models, output, options](ApiJob& job) -> nlohmann::json {
                const GraftOutcome outcome =
                    graftChimera(plan, *models, output.path, options, {}, job.progressFn(), &job.stop);
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
    if (path == "/v1/extract") {
        only(Method::Post, "POST");
        const nlohmann::json body = bodyObject(request, {"path", "output"});
        auto model = openInside(stringField(body, "path"));
        const OutputTarget output = m_paths.output(stringField(body, "output"));
        return startJob(
            "extract",
            [model, output](ApiJob& job) -> nlohmann::json {
                const JobResult done =
                    extractOrgans(*model, output.path, nullptr, job.progressFn(), &job.stop);
                if (!done.isOk()) {
                    throw JobFailure{done.message, nullptr};
                }
                return extractionToJson(*model, output.path.path);
            },
            output.claim);
    }
    if (path == "/v1/purify") {
        only(Method::Post, "POST");
        nlohmann::json body = bodyObject(request, {"path", "output", "method", "keep", "threshold",
                                                   "attenuation", "layers", "system", "roles", "tensors"});
        auto model = openInside(stringField(body, "path"));
        const OutputTarget output = m_paths.output(stringField(body, "output"));
        // The purification is read as a plan's purify operation: one grammar, one set of checks.
        nlohmann::json operation = body;
        operation.erase("path");
        operation.erase("output");
        operation["op"] = "purify";
        GraftOperation parsed;
        try {
            const GraftPlan plan = graftPlanFromJson({{"format", "organ-graft-plan"},
                                                      {"version", kGraftPlanVersion},
                                                      {"base", "model.gguf"},
                                                      {"operations", nlohmann::json::array({operation})}},
                                                     "the request");
            parsed = plan.operations.front();
        } catch (const std::exception& error) {
            throw ApiError{400, error.what()};
        }
        return startJob(
            "purify",
            [model, output, parsed](ApiJob& job) -> nlohmann::json {
                const PurifyOutcome outcome = purifyModel(*model, parsed.select, parsed.purify, output.path,
                                                          job.progressFn(), &job.stop);
                if (!outcome.written.isOk()) {
                    throw JobFailure{outcome.written.message, nullptr};
                }
                return purifyOutcomeToJson(outcome, output.path.path);
            },
            output.claim);
    }
    if (path == "/v1/quantize") {
        only(Method::Post, "POST");
        nlohmann::json body = bodyObject(request, {"path", "output", "type", "imatrix", "tensor_types",
                                                   "output_tensor_type", "token_embedding_type", "pure",
                                                   "leave_output_tensor"});
        auto model = openInside(stringField(body, "path"));
        const OutputTarget output = m_paths.output(stringField(body, "output"));
        // The recipe is read as a plan's quantize operation: one grammar, one set of checks.
        nlohmann::json operation = body;
        operation.erase("path");
        operation.erase("output");
        operation["op"] = "quantize";
        QuantizeRecipe recipe;
        try {
            recipe = graftPlanFromJson({{"format", "organ-graft-plan"},
                                        {"version", kGraftPlanVersion},
                                        {"base", "model.gguf"},
                                        {"operations", nlohmann::json::array({operation})}},
                                       "the request")
                         .operations.front()
                         .quantize;
        } catch (const std::exception& error) {
            throw ApiError{400, error.what()};
        }
        std::shared_ptr<const ImportanceMatrix> importance;
        if (!recipe.imatrix.empty()) {
            try {
                importance = std::make_shared<const ImportanceMatrix>(readImportanceMatrix(m_paths.input(recipe.imatrix)));
            } catch (const std::exception& error) {
                throw ApiError{422, error.what()};
            }
        }
        return startJob(
            "quantize",
            [model, output, recipe, importance](ApiJob& job) -> nlohmann::json {
                const QuantizeOutcome outcome =
                    quantizeModel(*model, recipe, importance.get(), output.path, job.progressFn(), &job.stop);
                if (!outcome.written.isOk()) {
                    throw JobFailure{outcome.written.message, nullptr};
                }
                return quantizeOutcomeToJson(outcome, recipe, output.path.path);
            },
            output.claim);
    }
    if (path == "/v1/jobs") {
        only(Method::Get, "GET");
        std::lock_guard lock(m_jobsMutex);
        nlohmann::json list = nlohmann::json::array();
        int running = 0;
        for (const auto& [id, job] : m_jobs) {
            nlohmann::json j = jobJson(*job);
            running += j["state"] == "running" ? 1 : 0;
            j.erase("result");
            list.push_back(std::move(j));
        }
        return {
            200, {{"jobs", std::move(list)}, {"running", running}, {"max_running", m_config.maxJobs}}, {}};
    }
    if (path.rfind("/v1/jobs/", 0) == 0) {
        const std::string idText = path.substr(9);
        std::uint64_t id = 0;
        const bool numeric = !idText.empty() && idText.size() < 19 &&
                             idText.find_first_not_of("0123456789") == std::string::npos;
        if (numeric) {
            id = std::stoull(idText);
        }
        std::shared_ptr<ApiJob> job;
        {
            std::lock_guard lock(m_jobsMutex);
            const auto it = numeric ? m_jobs.find(id) : m_jobs.end();
            if (it == m_jobs.end()) {
                throw ApiError{404, "no job '" + idText + "'"};
            }
            job = it->second;
        }
        if (method == Method::Get) {
            return {200, jobJson(*job), {}};
        }
        if (method == Method::Delete) {
            {
                // Under the job's lock, as its thread decides how it ended: a job that is not
                // past its point of no return is then sure to end cancelled.
                std::lock_guard lock(job->mutex);
                if (job->state != "running") {
                    throw ApiError{409, "job " + idText + " has already ended (" + job->state + ")"};
                }
                if (!job->stop.requestStop()) {
                    throw ApiError{409, "job " + idText + " is finishing: its output is already in place"};
                }
            }
            return {202, jobJson(*job), {}};
        }
        Reply reply{
            405, {{"error", {{"status", 405}, {"message", "use GET or DELETE for " + path}}}}, "GET, DELETE"};
        return reply;
    }
    throw ApiError{404, "no endpoint " + path + " (see docs/http-api.md)"};
}

ApiServer::Reply ApiServer::startJob(const std::string& kind, std::function<nlohmann::json(ApiJob&)> work,
                                     const std::string& claim) {
    std::shared_ptr<ApiJob> job;
    {
        std::lock_guard lock(m_jobsMutex);
        pruneFinished();
        int running = 0;
        for (const auto& [id, j] : m_jobs) {
            std::lock_guard jobLock(j->mutex);
            running += j->state == "running" ? 1 : 0;
        }
        if (running >= m_config.maxJobs) {
            throw ApiError{429, std::to_string(running) +
                                    " jobs are running, the most this server runs at once: "
                                    "wait for one to end or cancel one"};
        }
        job = std::make_shared<ApiJob>();
        job->id = m_nextJob;
        if (!claim.empty()) {
            std::lock_guard claimsLock(m_claimsMutex);
            if (const auto it = m_claims.find(claim); it != m_claims.end()) {
                throw ApiError{409, "job " + std::to_string(it->second) +
                                        " is writing that output; one job writes a name at a time"};
            }
            m_claims.emplace(claim, job->id);
        }
        ++m_nextJob;
        job->kind = kind;
        m_jobs.emplace(job->id, job);
    }
    job->thread = std::thread([this, job, claim, work = std::move(work)] {
        nlohmann::json result;
        std::string error;
        std::string state = "done";
        try {
            result = work(*job);
        } catch (const JobFailure& failure) {
            state = "failed";
            error = failure.message;
            result = failure.result;
        } catch (const std::bad_alloc&) {
            state = "failed";
            error = "out of memory";
        } catch (const std::exception& e) {
            state = "failed";
            error = e.what();
        }
        if (!claim.empty()) {
            // Let go before the job is seen to end: whoever sees it end may write that name.
            std::lock_guard claimsLock(m_claimsMutex);
            m_claims.erase(claim);
        }
        std::lock_guard lock(job->mutex);
        // Done, it passes its point of no return here if its writer has not (a measurement); a
        // stop that came first, or any stop of a job that did not finish, makes it cancelled.
        if (state == "done" ? !job->stop.beginCommit() : job->stop.stopRequested()) {
            state = "cancelled";
            error = "cancelled";
            result = nullptr;
        }
        job->state = state;
        job->error = error;
        job->result = std::move(result);
    });
    return {202, jobJson(*job), {}};
}

nlohmann::json ApiServer::jobJson(const ApiJob& job) const {
    std::lock_guard lock(job.mutex);
    nlohmann::json j = {{"id", job.id},
                        {"kind", job.kind},
                        {"state", job.state},
                        {"href", "/v1/jobs/" + std::to_string(job.id)},
                        {"progress",
                         {{"done", job.done},
                          {"total", job.total},
                          {"stage", job.stage},
                          {"fraction", job.total != 0 ? static_cast<double>(job.done) / job.total : 0.0}}}};
    if (!job.error.empty()) {
        j["error"] = job.error;
    }
    if (!job.result.is_null()) {
        j["result"] = job.result;
    }
    return j;
}

void ApiServer::pruneFinished() {
    std::size_t finished = 0;
    for (const auto& [id, job] : m_jobs) {
        std::lock_guard lock(job->mutex);
        finished += job->state != "running" ? 1 : 0;
    }
    for (auto it = m_jobs.begin(); it != m_jobs.end() && finished > m_config.keepFinished;) {
        bool ended = false;
        {
            std::lock_guard lock(it->second->mutex);
            ended = it->second->state != "running";
        }
        if (ended) {
            if (it->second->thread.joinable()) {
                it->second->thread.join();
            }
            it = m_jobs.erase(it);
            --finished;
        } else {
            ++it;
        }
    }
}

} // namespace organ::api
