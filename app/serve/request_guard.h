#pragma once

#include <QByteArray>
#include <QHash>
#include <QTcpServer>

class QTcpSocket;

namespace organ::api {

// Qt's HTTP server (6.4) reads a whole request body into memory before the server sees it.
// The guard sees every byte first: a request whose headers run past kMaxHeaderBytes, that
// declares a body over the cap, or that streams one without Content-Length is answered at once
// (431, 413, 411) with a JSON error, and Qt's server never reads it; so is one whose headers
// could be read two ways (two Content-Length headers, a space before a colon, a folded line:
// 400), since Qt's server might read them the other way. It also bounds what a client can hold:
// a request's headers must arrive within kRequestSeconds of its first byte (of the connection,
// for the first request) and its body within kRequestSeconds more plus a second per
// kSlowestBodyBytesPerSecond bytes, else 408, however steadily bytes trickle in; at most
// kMaxConnections connections are open at once and kMaxConnectionsPerAddress from one address
// (an IPv6 /64), more are answered 503 and closed; a connection that sends nothing for
// kIdleSeconds is closed.
class GuardedTcpServer : public QTcpServer {
    Q_OBJECT
public:
    GuardedTcpServer(QObject* httpServer, qint64 maxBody, QObject* parent = nullptr);

protected:
    void incomingConnection(qintptr descriptor) override;

private:
    QObject* m_httpServer;
    qint64 m_maxBody;
    int m_open = 0;                     // connections handed to Qt's server, still open
    QHash<QByteArray, int> m_byAddress; // of those, by address (an IPv6 /64)
};

inline constexpr qint64 kMaxHeaderBytes = 16 * 1024;
inline constexpr int kMaxConnections = 256;
inline constexpr int kMaxConnectionsPerAddress = 32;
inline constexpr int kIdleSeconds = 60;
inline constexpr int kRequestSeconds = 10;
inline constexpr qint64 kSlowestBodyBytesPerSecond = 64 * 1024;

// The JSON error document every failure answers with.
QByteArray errorBody(int status, const QByteArray& message);

} // namespace organ::api
