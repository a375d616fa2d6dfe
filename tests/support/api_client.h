#pragma once

// organ serve as a client sees it: a real server process on loopback, Qt's HTTP client, and
// plain sockets for what a client library would not send or for other threads (tests that link
// Qt6::Network).
#include "fixtures.h"
#include "loopback_client.h"

#include "gguf/specimen.h"

#include <QDir>
#include <QEventLoop>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QProcess>
#include <QRegularExpression>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <nlohmann/json.hpp>
#include <string>

namespace organ::testing {

struct Answer {
    int status = 0;
    nlohmann::json body;
    QByteArray raw;
    QByteArray authenticate;
};

inline nlohmann::json parsed(const QByteArray& bytes) {
    return nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size(), nullptr, false);
}

// The base of a test of the server: a folder to serve in a temporary folder, root/ with
// models/a.gguf (a specimen) and an empty out/.
class ServedRootTest : public QObject {
protected:
    bool makeRoot() {
        m_root = m_dir.filePath(QStringLiteral("root"));
        return QDir().mkpath(m_root + QStringLiteral("/models")) &&
               QDir().mkpath(m_root + QStringLiteral("/out")) &&
               writeSpecimen(inRoot(QStringLiteral("models/a.gguf")).toStdString(), 1).isOk();
    }
    QString inRoot(const QString& name) const { return m_root + QLatin1Char('/') + name; }

    QTemporaryDir m_dir;
    QString m_root;
};

// A specimen large enough that measuring or purifying all of it takes a while.
inline SpecimenShape slowShape() {
    SpecimenShape shape;
    shape.blocks = 8;
    shape.embedding = 384;
    shape.feedForward = 1024;
    shape.vocabulary = 2048;
    return shape;
}

// A server process on a free loopback port.
class Server {
public:
    explicit Server(const QString& root, QStringList extra = {}) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("ORGAN_CACHE_DIR"), root + QStringLiteral("/.cache"));
        env.remove(QStringLiteral("ORGAN_SERVE_TOKEN"));
        m_process.setProcessEnvironment(env);
        m_process.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                        QStringList{QStringLiteral("serve"), QStringLiteral("--listen"),
                                    QStringLiteral("127.0.0.1:0"), QStringLiteral("--root"), root} +
                            extra);
        if (!m_process.waitForStarted(10000)) {
            return;
        }
        QByteArray out;
        for (int i = 0; i < 100 && !out.contains('\n'); ++i) {
            m_process.waitForReadyRead(100);
            out += m_process.readAllStandardOutput();
        }
        const auto match = QRegularExpression(QStringLiteral(":(\\d+)/v1/")).match(QString::fromUtf8(out));
        m_port = match.hasMatch() ? match.captured(1).toUShort() : 0;
    }
    ~Server() {
        m_process.terminate();
        m_process.waitForFinished(5000);
    }
    quint16 port() const { return m_port; }
    bool running() const { return m_process.state() == QProcess::Running; }

private:
    QProcess m_process;
    quint16 m_port = 0;
};

inline Answer request(quint16 port, const QByteArray& method, const QString& pathAndQuery,
                      const QByteArray& body = {}, const QByteArray& token = {}) {
    QNetworkAccessManager manager;
    QNetworkRequest req(QUrl(QStringLiteral("http://127.0.0.1:%1%2").arg(port).arg(pathAndQuery)));
    req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    if (!token.isEmpty()) {
        req.setRawHeader("Authorization", "Bearer " + token);
    }
    QNetworkReply* reply = manager.sendCustomRequest(req, method, body);
    QEventLoop loop;
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    QTimer::singleShot(60000, &loop, &QEventLoop::quit);
    loop.exec();
    Answer a;
    a.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    a.raw = reply->readAll();
    a.body = parsed(a.raw);
    a.authenticate = reply->rawHeader("WWW-Authenticate");
    reply->deleteLater();
    return a;
}

inline Answer get(quint16 port, const QString& path, const QByteArray& token = {}) {
    return request(port, "GET", path, {}, token);
}
inline Answer post(quint16 port, const QString& path, const nlohmann::json& body) {
    return request(port, "POST", path, QByteArray::fromStdString(body.dump()));
}

// Bytes as they are sent, and the status line of the answer.
inline int rawStatus(quint16 port, const QByteArray& bytes, QByteArray* answer = nullptr) {
    QTcpSocket socket;
    socket.connectToHost(QStringLiteral("127.0.0.1"), port);
    if (!socket.waitForConnected(5000)) {
        return -1;
    }
    socket.write(bytes);
    socket.waitForBytesWritten(5000);
    QByteArray got;
    for (int i = 0; i < 100 && !got.contains("\r\n\r\n"); ++i) {
        socket.waitForReadyRead(100);
        got += socket.readAll();
    }
    for (int i = 0; i < 10; ++i) {
        socket.waitForReadyRead(50);
        got += socket.readAll();
    }
    if (answer != nullptr) {
        *answer = got;
    }
    const auto match = QRegularExpression(QStringLiteral("^HTTP/1.1 (\\d+)")).match(QString::fromLatin1(got));
    return match.hasMatch() ? match.captured(1).toInt() : 0;
}

// Polls a job until it has ended (every 50 ms, `polls` times at most).
inline nlohmann::json waitForJob(quint16 port, const nlohmann::json& started, int polls = 600) {
    const QString href = QString::fromStdString(started.value("href", std::string()));
    for (int i = 0; i < polls; ++i) {
        const Answer a = get(port, href);
        const std::string state = a.body.value("state", "");
        if (a.status != 200 || (state != "queued" && state != "running" && state != "cancelling")) {
            return a.body;
        }
        QTest::qWait(50);
    }
    return {};
}

// The JSON body of a raw answer (null when it has none).
inline nlohmann::json bodyOf(const std::string& answer) {
    const std::size_t end = answer.find("\r\n\r\n");
    return end == std::string::npos ? nlohmann::json()
                                    : parsed(QByteArray::fromStdString(answer.substr(end + 4)));
}

} // namespace organ::testing
