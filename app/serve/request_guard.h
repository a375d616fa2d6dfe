#pragma once

#include <QByteArray>
#include <QTcpServer>

class QTcpSocket;

namespace organ::api {

// Qt's HTTP server (6.4) reads a whole request body into memory before the server sees it.
// The guard sees every byte first: a request whose headers run past kMaxHeaderBytes, that
// declares a body over the cap, or that streams one without Content-Length is answered at once
// (431, 413, 411) with a JSON error, and Qt's server never reads it. It also bounds the
// connections: at most kMaxConnections open at once (more are answered 503 and closed), and a
// connection that sends nothing for kIdleSeconds is closed.
class GuardedTcpServer : public QTcpServer {
    Q_OBJECT
public:
    GuardedTcpServer(QObject* httpServer, qint64 maxBody, QObject* parent = nullptr);

protected:
    void incomingConnection(qintptr descriptor) override;

private:
    QObject* m_httpServer;
    qint64 m_maxBody;
    int m_open = 0;
};

inline constexpr qint64 kMaxHeaderBytes = 16 * 1024;
inline constexpr int kMaxConnections = 256;
inline constexpr int kIdleSeconds = 60;

// The JSON error document every failure answers with.
QByteArray errorBody(int status, const QByteArray& message);

} // namespace organ::api
