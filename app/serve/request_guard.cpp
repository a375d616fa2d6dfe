#include "request_guard.h"

#include "support/text_safety.h"
#include <QTcpSocket>
#include <QTimer>

#include <nlohmann/json.hpp>

namespace organ::api {
namespace {

// Follows the byte stream of one connection request by request (headers, then as many body
// bytes as Content-Length says) without consuming it: Qt's server reads the same bytes next.
class RequestGuard : public QObject {
public:
    RequestGuard(QTcpSocket* socket, QObject* httpServer, qint64 maxBody)
        : QObject(socket), m_socket(socket), m_httpServer(httpServer), m_maxBody(maxBody) {
        connect(socket, &QTcpSocket::readyRead, this, &RequestGuard::inspect);
        m_idle.setSingleShot(true);
        m_idle.setInterval(kIdleSeconds * 1000);
        connect(&m_idle, &QTimer::timeout, socket, &QTcpSocket::disconnectFromHost);
        m_idle.start();
    }

    // Answers `status` with a JSON error and closes the connection.
    void reject(int status, const QByteArray& reason, const QByteArray& message) {
        m_rejected = true;
        // Qt's server stops reading this connection: it never buffers what follows.
        disconnect(m_socket, &QTcpSocket::readyRead, m_httpServer, nullptr);
        const QByteArray body = errorBody(status, message);
        m_socket->write("HTTP/1.1 " + QByteArray::number(status) + " " + reason +
                        "\r\nContent-Type: application/json\r\nContent-Length: " +
                        QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
        m_socket->readAll();
        // Closing while the client still sends would reset the connection before it reads the
        // answer: what it sends is dropped for a moment first.
        QTimer::singleShot(2000, m_socket, [socket = m_socket] { socket->disconnectFromHost(); });
    }

private:
    void inspect() {
        m_idle.start();
        if (m_rejected) {
            m_socket->readAll(); // drained and dropped until the client has read the answer
            return;
        }
        QByteArray fresh = m_socket->peek(m_socket->bytesAvailable());
        while (!fresh.isEmpty() && !m_rejected) {
            if (m_bodyLeft > 0) {
                const qint64 used = std::min<qint64>(m_bodyLeft, fresh.size());
                m_bodyLeft -= used;
                fresh.remove(0, used);
                continue;
            }
            m_header += fresh;
            fresh.clear();
            const qsizetype end = m_header.indexOf("\r\n\r\n");
            if (end < 0) {
                if (m_header.size() > kMaxHeaderBytes) {
                    reject(431, "Request Header Fields Too Large",
                           "the request's headers are longer than 16 KiB");
                }
                return;
            }
            if (end > kMaxHeaderBytes) {
                reject(431, "Request Header Fields Too Large",
                       "the request's headers are longer than 16 KiB");
                return;
            }
            const QByteArray head = m_header.left(end);
            fresh = m_header.mid(end + 4);
            m_header.clear();
            qint64 length = 0;
            for (const QByteArray& line : head.split('\n')) {
                const qsizetype colon = line.indexOf(':');
                if (colon < 0) {
                    continue;
                }
                const QByteArray name = line.left(colon).trimmed().toLower();
                const QByteArray value = line.mid(colon + 1).trimmed();
                if (name == "transfer-encoding") {
                    reject(411, "Length Required", "send the body with Content-Length, not chunked");
                    return;
                }
                if (name == "content-length") {
                    bool ok = false;
                    const qint64 declared = value.toLongLong(&ok);
                    if (!ok || declared < 0 || (length != 0 && declared != length)) {
                        reject(400, "Bad Request", "Content-Length is not one number");
                        return;
                    }
                    length = declared;
                }
            }
            if (length > m_maxBody) {
                reject(413, "Payload Too Large",
                       "the body is " + QByteArray::number(length) + " bytes; at most " +
                           QByteArray::number(m_maxBody) + " are accepted");
                return;
            }
            m_bodyLeft = length;
        }
    }

    QTcpSocket* m_socket;
    QObject* m_httpServer;
    qint64 m_maxBody;
    QByteArray m_header;
    qint64 m_bodyLeft = 0;
    bool m_rejected = false;
    QTimer m_idle;
};

} // namespace

QByteArray errorBody(int status, const QByteArray& message) {
    const nlohmann::json body = {{"error", {{"status", status}, {"message", message.toStdString()}}}};
    return QByteArray::fromStdString(dumpJson(body));
}

GuardedTcpServer::GuardedTcpServer(QObject* httpServer, qint64 maxBody, QObject* parent)
    : QTcpServer(parent), m_httpServer(httpServer), m_maxBody(maxBody) {}

void GuardedTcpServer::incomingConnection(qintptr descriptor) {
    auto* socket = new QTcpSocket(this);
    if (!socket->setSocketDescriptor(descriptor)) {
        delete socket;
        return;
    }
    ++m_open;
    connect(socket, &QObject::destroyed, this, [this] { --m_open; });
    auto* guard =
        new RequestGuard(socket, m_httpServer, m_maxBody); // connected before Qt's server: runs first
    if (m_open > kMaxConnections) {
        // Never handed to Qt's server: answered here, closed, deleted.
        connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
        guard->reject(503, "Service Unavailable", "too many open connections: try again later");
        return;
    }
    addPendingConnection(socket);
}

} // namespace organ::api
