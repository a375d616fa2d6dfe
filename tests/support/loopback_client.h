#pragma once

// A plain HTTP/1.1 client over loopback sockets, without Qt: usable from any thread, and from
// any address of 127/8 (each is this machine, and the server tells clients apart by address).
// For the API tests' hostile clients and for the benchmarks.
#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace organ::testing {

// A blocking TCP connection from `from` to 127.0.0.1:`port`; -1 when it cannot be made.
inline int connectFrom(const char* from, int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, from, &local.sin_addr);
    sockaddr_in server{};
    server.sin_family = AF_INET;
    server.sin_port = htons(static_cast<std::uint16_t>(port));
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int one = 1;
    if (fd < 0 || ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof server) != 0) {
        if (fd >= 0) {
            ::close(fd);
        }
        return -1;
    }
    return fd;
}

// One answer read from `fd`: its headers and as many body bytes as its Content-Length says, or
// what came before the connection closed (empty: nothing).
inline std::string readAnswer(int fd) {
    std::string answer;
    char buffer[65536];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) {
        answer.append(buffer, static_cast<std::size_t>(n));
        const std::size_t end = answer.find("\r\n\r\n");
        if (end == std::string::npos) {
            continue;
        }
        std::size_t length = 0;
        for (std::size_t line = answer.find("\r\n"); line < end; line = answer.find("\r\n", line + 2)) {
            if (::strncasecmp(answer.c_str() + line + 2, "content-length:", 15) == 0) {
                length = std::strtoull(answer.c_str() + line + 17, nullptr, 10);
            }
        }
        if (answer.size() >= end + 4 + length) {
            break;
        }
    }
    return answer;
}

// One request on a connection of its own, the answer as it came (empty when none came within 60 s).
inline std::string roundTrip(int port, const std::string& request, const char* from = "127.0.0.1") {
    const int fd = connectFrom(from, port);
    if (fd < 0) {
        return {};
    }
    timeval timeout{60, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    std::string answer;
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
        answer = readAnswer(fd);
    }
    ::close(fd);
    return answer;
}

// One request on a connection of its own, as roundTrip, and whether the server closed the
// connection once it had answered (within 5 s), without waiting for the client to.
struct Exchange {
    std::string answer;
    bool closedByServer = false;
};

inline Exchange exchange(int port, const std::string& request, const char* from = "127.0.0.1") {
    Exchange result;
    const int fd = connectFrom(from, port);
    if (fd < 0) {
        return result;
    }
    timeval timeout{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
        result.answer = readAnswer(fd);
        char byte = 0;
        result.closedByServer = !result.answer.empty() && ::recv(fd, &byte, 1, 0) == 0;
    }
    ::close(fd);
    return result;
}

// Whether a connection is still open and the server has sent nothing on it.
inline bool untouched(int fd) {
    char byte = 0;
    return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// The status of an answer, 0 when there is none.
inline int statusOf(const std::string& answer) {
    return answer.compare(0, 9, "HTTP/1.1 ") == 0 ? std::atoi(answer.c_str() + 9) : 0;
}

} // namespace organ::testing
