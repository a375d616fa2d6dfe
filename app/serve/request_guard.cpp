#include "request_guard.h"

#include "support/text_safety.h"
#include <QHostAddress>
#include <QTcpSocket>
#include <QTimer>

#include <nlohmann/json.hpp>

namespace organ::api {
namespace {

// What limits of a client count together: its IPv4 address, or the /64 its IPv6 address is in
// (one machine usually has a whole /64 to choose from).
QByteArray addressKey(const QHostAddress& address) {
    bool isV4 = false;
    const quint32 v4 = address.toIPv4Address(&isV4);
    if (isV4) {
        return QByteArray::number(v4);
    }
    const Q_IPV6ADDR v6 = address.toIPv6Address();
    return QByteArray(reinterpret_cast<const char*>(v6.c), 8).toHex();
}

// What a request's headers say of its body: its length, or why they cannot be read one way
// only (Qt's server might read them the other way).
struct BodyDeclaration {
    qint64 length = 0;
    int status = 0; // not 0: the request is refused with this status
    QByteArray problem;
};

BodyDeclaration declaredBody(const QByteArray& head) {
    BodyDeclaration body;
    bool seen = false;
    const QList<QByteArray> lines = head.split('\n');
    for (qsizetype i = 1; i < lines.size(); ++i) { // the request line holds no header
        const QByteArray& line = lines[i];
        if (line.startsWith(' ') || line.startsWith('\t')) {
            return {0, 400, "a header line is folded (it starts with a space)"};
        }
        const qsizetype colon = line.indexOf(':');
        if (colon < 0) {
            continue;
        }
        const QByteArray name = line.left(colon).toLower();
        if (name != name.trimmed()) {
            return {0, 400, "a header name has a space before its colon"};
        }
        if (name == "transfer-encoding") {
            return {0, 411, "send the body with Content-Length, not chunked"};
        }
        if (name != "content-length") {
            continue;
        }
        const QByteArray value = line.mid(colon + 1).trimmed();
        bool digits = !value.isEmpty() && value.size() <= 18;
        for (const char c : value) {
            digits = digits && c >= '0' && c <= '9';
        }
        if (seen || !digits) {
            return {0, 400,
                    seen ? "two Content-Length headers: send one" : "Content-Length is not one number"};
        }
        seen = true;
        body.length = value.toLongLong();
    }
    return body;
}

// Where the headers end, -1 while they have not: the first empty line, its line ends "\r\n" or,
// as Qt's parser also takes them, "\n" alone. `blank` is set to the bytes of the empty line and
// of the line end before it.
qsizetype headerEnd(const QByteArray& bytes, qsizetype* blank) {
    for (qsizetype i = bytes.indexOf('\n'); i >= 0; i = bytes.indexOf('\n', i + 1)) {
        if (bytes.mid(i + 1, 1) == "\n" || bytes.mid(i + 1, 2) == "\r\n") {
            *blank = bytes.at(i + 1) == '\n' ? 2 : 3;
            return i;
        }
    }
    return -1;
}

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
        // Counted from the connection's start for its first request: a client that connects and
        // sends nothing holds a connection no longer than one that sends slowly.
        m_deadline.setSingleShot(true);
        connect(&m_deadline, &QTimer::timeout, this, [this] {
            reject(408, "Request Timeout",
                   "the request did not arrive in time: headers within " +
                       QByteArray::number(kRequestSeconds) + " s, a body within " +
                       QByteArray::number(kRequestSeconds) + " s and a second per " +
                       QByteArray::number(kSlowestBodyBytesPerSecond / 1024) + " KiB");
        });
        m_deadline.start(kRequestSeconds * 1000);
    }

    // Answers `status` with a JSON error and closes the connection.
    void reject(int status, const QByteArray& reason, const QByteArray& message) {
        m_rejected = true;
        m_deadline.stop();
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
                if (m_bodyLeft == 0) {
                    m_deadline.stop();
                }
                continue;
            }
            if (m_header.isEmpty() && !m_deadline.isActive()) {
                m_deadline.start(kRequestSeconds * 1000); // a new request's first byte
            }
            m_header += fresh;
            fresh.clear();
            qsizetype blank = 0;
            const qsizetype end = headerEnd(m_header, &blank);
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
            fresh = m_header.mid(end + blank);
            m_header.clear();
            const BodyDeclaration declared = declaredBody(head);
            if (declared.status != 0) {
                reject(declared.status, declared.status == 411 ? "Length Required" : "Bad Request",
                       declared.problem);
                return;
            }
            const qint64 length = declared.length;
            if (length > m_maxBody) {
                reject(413, "Payload Too Large",
                       "the body is " + QByteArray::number(length) + " bytes; at most " +
                           QByteArray::number(m_maxBody) + " are accepted");
                return;
            }
            m_bodyLeft = length;
            if (length > 0) {
                m_deadline.start(
                    static_cast<int>((kRequestSeconds + length / kSlowestBodyBytesPerSecond) * 1000));
            } else {
                m_deadline.stop();
            }
        }
    }

    QTcpSocket* m_socket;
    QObject* m_httpServer;
    qint64 m_maxBody;
    QByteArray m_header;
    qint64 m_bodyLeft = 0;
    bool m_rejected = false;
    QTimer m_idle;
    QTimer m_deadline;
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
    auto* guard =
        new RequestGuard(socket, m_httpServer, m_maxBody); // connected before Qt's server: runs first
    const QByteArray address = addressKey(socket->peerAddress());
    // Refused connections are not counted: a client that keeps connecting cannot push the count
    // up for others while its refusals linger.
    if (m_open >= kMaxConnections || m_byAddress.value(address) >= kMaxConnectionsPerAddress) {
        // Never handed to Qt's server: answered here, closed, deleted.
        connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
        guard->reject(503, "Service Unavailable",
                      m_open >= kMaxConnections ? "too many open connections: try again later"
                                                : "too many open connections from your address: "
                                                  "close some, or try again later");
        return;
    }
    ++m_open;
    ++m_byAddress[address];
    connect(socket, &QObject::destroyed, this, [this, address] {
        --m_open;
        if (--m_byAddress[address] == 0) {
            m_byAddress.remove(address);
        }
    });
    addPendingConnection(socket);
}

} // namespace organ::api
