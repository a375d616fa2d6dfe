#pragma once

#include "rooted_paths.h"

#include <QAbstractHttpServer>
#include <QByteArray>
#include <QHostAddress>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

class QTcpServer;

namespace organ {
class StopToken;
struct Progress;
} // namespace organ

namespace organ::api {

struct ApiConfig {
    std::string root;              // every path is resolved inside it
    QByteArray token;              // empty: no token (loopback only)
    qint64 maxBody = 1 << 20;      // bytes of a request body
    int maxJobs = 2;               // jobs running at once; more are refused with 429
    std::size_t keepFinished = 64; // finished jobs kept for their results, oldest dropped first
};

// One long operation run on its own thread: its progress, then its result or error.
struct ApiJob;

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
    Reply dispatch(const QHttpServerRequest& request);
    // Starts `work` on a thread of its own. A job that writes names its output's `claim`: while it
    // runs, another job for the same output is refused (409).
    Reply startJob(const std::string& kind, std::function<nlohmann::json(ApiJob&)> work,
                   const std::string& claim = {});
    nlohmann::json jobJson(const ApiJob& job) const;
    void pruneFinished();

    ApiConfig m_config;
    RootedPaths m_paths;
    QTcpServer* m_tcp = nullptr;
    std::mutex m_jobsMutex;
    std::map<std::uint64_t, std::shared_ptr<ApiJob>> m_jobs;
    std::uint64_t m_nextJob = 1;
    // Outputs being written, by claim (OutputTarget), and the job writing each. Its own mutex: a
    // job thread lets go of its claim while the destructor may hold m_jobsMutex to join it.
    std::mutex m_claimsMutex;
    std::map<std::string, std::uint64_t> m_claims;
};

// Whether `given` equals `expected`, in time that does not depend on where they differ.
bool sameToken(const QByteArray& given, const QByteArray& expected);

} // namespace organ::api
