#pragma once

#include "graft/assembly.h"
#include "rooted_paths.h"
#include "support/job_queue.h"

#include <QAbstractHttpServer>
#include <QByteArray>
#include <QHostAddress>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

class QTcpServer;

namespace organ::api {

struct ApiConfig {
    std::string root;              // every path is resolved inside it
    QByteArray token;              // empty: no token (loopback only)
    qint64 maxBody = 1 << 20;      // bytes of a request body
    int maxJobs = 2;               // jobs running at once (the queue's workers); more are refused with 429
    std::size_t keepFinished = 64; // finished jobs kept for their results, oldest dropped first
};

// What a job gives its client once done: its JSON result (kept beside the queue's snapshot).
struct ApiResult;

// The HTTP API of `organ serve` (docs/http-api.md): JSON in, JSON out, on Qt's HTTP server.
class ApiServer : public QAbstractHttpServer {
    Q_OBJECT
public:
    explicit ApiServer(ApiConfig config, QObject* parent = nullptr);
    ~ApiServer() override; // cancels running jobs and waits for them

    // Listens through the request guard; false with `error` set when it cannot.
    bool listenOn(const QHostAddress& address, quint16 port, QString* error);
    quint16 port() const;

protected:
    bool handleRequest(const QHttpServerRequest& request, QTcpSocket* socket) override;
    void missingHandler(const QHttpServerRequest& request, QTcpSocket* socket) override;

private:
    struct Reply {
        int status = 200;
        nlohmann::json body;
        QByteArray allow; // for 405
    };
    // A job's work: its JSON result, or JobFailure / an exception.
    using ApiWork = std::function<nlohmann::json(const ProgressFn& progress, const StopToken& stop)>;

    Reply dispatch(const QHttpServerRequest& request);
    void checkToken(const QHttpServerRequest& request) const;
    // The routes (docs/http-api.md).
    Reply health(const QHttpServerRequest& request);
    Reply openApi(const QHttpServerRequest& request);
    Reply inspect(const QHttpServerRequest& request);
    Reply validate(const QHttpServerRequest& request);
    Reply checkPlan(const QHttpServerRequest& request);
    Reply oneJob(const QHttpServerRequest& request, const std::string& id);
    Reply measure(const QHttpServerRequest& request);
    Reply fleet(const QHttpServerRequest& request);
    Reply assemble(const QHttpServerRequest& request);
    Reply extract(const QHttpServerRequest& request);
    Reply purify(const QHttpServerRequest& request);
    Reply quantize(const QHttpServerRequest& request);
    Reply quantLab(const QHttpServerRequest& request);
    Reply surgeon(const QHttpServerRequest& request);
    Reply listJobs(const QHttpServerRequest& request);

    // Inputs, each through m_paths: inside the root or refused.
    std::shared_ptr<const GgufModel> openInside(const std::string& given) const;
    GraftPlan planFrom(const nlohmann::json& body) const;
    GraftModels openPlanModels(const GraftPlan& plan) const;
    // A request's body (but its "path" and "output") read as a plan's `op` operation: one grammar,
    // one set of checks; refused 400 naming the problem.
    GraftOperation operationOf(nlohmann::json body, const char* op) const;

    // Queues `work`. A job that writes names its output's `claim`: until it has ended, another
    // job for the same output is refused (409).
    Reply startJob(const std::string& kind, ApiWork work, const std::string& claim = {});
    nlohmann::json jobJson(const JobSnapshot& job) const;

    ApiConfig m_config;
    RootedPaths m_paths;
    QTcpServer* m_tcp = nullptr;
    std::mutex m_startMutex; // one job starts at a time: the count of running jobs holds
    // Outputs being written, by claim (OutputTarget), and the job writing each.
    std::mutex m_claimsMutex;
    std::map<std::string, JobId> m_claims;
    mutable std::mutex m_resultsMutex;
    std::map<JobId, std::shared_ptr<ApiResult>> m_results;
    // Declared last: destroyed first, so that its workers stop before what they use goes.
    std::unique_ptr<JobQueue> m_queue;
};

// Whether `given` equals `expected`, in time that does not depend on where they differ.
bool sameToken(const QByteArray& given, const QByteArray& expected);

} // namespace organ::api
