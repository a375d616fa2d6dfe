// The fleet and the HTTP API at scale:
//  1. a Kimi-K2-shaped split set (deepseek2, 61 blocks, 384 experts, a trillion parameters in
//     32 parts whose tensor data are sparse holes): time and memory to open the whole set and
//     classify its anatomy (goal: under 100 ms), and to find it in a folder as a fleet does;
//  2. `inspect` over HTTP: 16 clients on loopback, each with a keep-alive connection, for a fixed
//     time: requests per second and latency percentiles;
//  3. `/v1/health` during a slow-client attack (256 connections sending a header byte every 5 s,
//     from one address, then from eight): what the probes were answered, and their latency.
// Usage: bench_scale [FOLDER] [SECONDS]  (organ-serve is taken from beside organ in the build).
#include "anatomy/anatomy.h"
#include "bench_models.h"
#include "fleet/fleet.h"
#include "gguf/gguf_model.h"
#include "gguf/specimen.h"
#include "loopback_client.h"
#include "proc_status.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace organ;
using namespace organ::bench;
using namespace organ::testing;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double ms(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

void openSplitSet(const std::string& first) {
    constexpr int kRuns = 20;
    std::vector<double> times;
    long peakGrowth = 0;
    std::size_t tensors = 0;
    std::uint64_t parameters = 0;
    for (int run = 0; run < kRuns; ++run) {
        resetPeakResident();
        const long before = processStatusKiB("VmRSS:");
        const auto start = Clock::now();
        const auto model = GgufModel::open(first);
        const ModelAnatomy anatomy = analyzeAnatomy(*model);
        const auto stop = Clock::now();
        peakGrowth = std::max(peakGrowth, processStatusKiB("VmHWM:") - before);
        tensors = anatomy.tensors.size();
        parameters = 0;
        for (const TensorInfo& t : model->tensors()) {
            parameters += t.elements;
        }
        times.push_back(ms(stop - start));
    }
    std::sort(times.begin(), times.end());
    std::printf(
        "open + anatomy of the whole set: %zu tensors, %.3f T parameters: best %.1f ms, median %.1f ms, "
        "peak RSS growth %.1f MiB (goal: under 100 ms)\n",
        tensors, double(parameters) / 1e12, times.front(), times[times.size() / 2], peakGrowth / 1024.0);
}

// One HTTP/1.1 client on a keep-alive connection: sends GET `target`, reads the answer.
class Client {
public:
    explicit Client(int port) : m_port(port) {}
    ~Client() { closeSocket(); }

    bool get(const std::string& target) {
        if (m_fd < 0 && (m_fd = connectFrom("127.0.0.1", m_port)) < 0) {
            return false;
        }
        const std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        if (::send(m_fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) {
            closeSocket();
            return false;
        }
        const std::string answer = readAnswer(m_fd);
        const std::size_t headerEnd = answer.find("\r\n\r\n");
        if (answer.find("Connection: close") < headerEnd || headerEnd == std::string::npos) {
            closeSocket();
        }
        return statusOf(answer) == 200;
    }

private:
    void closeSocket() {
        if (m_fd >= 0) {
            ::close(m_fd);
            m_fd = -1;
        }
    }
    int m_port;
    int m_fd = -1;
};

// Starts organ-serve on a free loopback port; returns its pid and port (0 when it failed).
std::pair<pid_t, int> startServer(const std::string& program, const std::string& root) {
    int out[2];
    if (::pipe(out) != 0) {
        return {0, 0};
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(out[1], STDOUT_FILENO);
        ::close(out[0]);
        ::execl(program.c_str(), program.c_str(), "--listen", "127.0.0.1:0", "--root", root.c_str(), nullptr);
        ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    char c = 0;
    while (::read(out[0], &c, 1) == 1 && c != '\n') {
        line += c;
    }
    ::close(out[0]);
    const auto colon = line.find(":", line.find("127.0.0.1"));
    return {pid, colon == std::string::npos ? 0 : std::atoi(line.c_str() + colon + 1)};
}

void inspectOverHttp(const std::string& server, const std::string& folder, double seconds) {
    const std::string root = folder + "/http-root";
    fs::create_directories(root);
    if (!writeSpecimen(root + "/specimen.gguf", 1).isOk()) {
        std::printf("could not write the specimen\n");
        return;
    }
    const auto [pid, port] = startServer(server, root);
    if (port == 0) {
        std::printf("organ-serve did not start (%s)\n", server.c_str());
        return;
    }
    constexpr int kClients = 16;
    std::atomic<bool> stop{false};
    std::mutex mutex;
    std::vector<double> latencies;
    std::atomic<long> failures{0};
    std::vector<std::thread> clients;
    const auto start = Clock::now();
    for (int i = 0; i < kClients; ++i) {
        clients.emplace_back([&, port = port] {
            Client client(port);
            std::vector<double> mine;
            while (!stop.load()) {
                const auto t0 = Clock::now();
                if (client.get("/v1/inspect?path=specimen.gguf")) {
                    mine.push_back(ms(Clock::now() - t0));
                } else {
                    ++failures;
                }
            }
            std::lock_guard lock(mutex);
            latencies.insert(latencies.end(), mine.begin(), mine.end());
        });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
    for (auto& t : clients) {
        t.join();
    }
    const double elapsed = ms(Clock::now() - start) / 1000.0;
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    std::sort(latencies.begin(), latencies.end());
    auto at = [&](double q) {
        return latencies.empty() ? 0.0 : latencies[std::size_t(q * double(latencies.size() - 1))];
    };
    std::printf("inspect over HTTP, %d clients, %.1f s: %zu answers, %.0f requests/s, %ld failed; latency "
                "p50 %.2f ms, "
                "p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
                kClients, elapsed, latencies.size(), double(latencies.size()) / elapsed, failures.load(),
                at(0.5), at(0.9), at(0.99), latencies.empty() ? 0.0 : latencies.back());
}

// Health probes, each on a connection of its own from 127.0.0.1 every 50 ms, while `addresses`
// other addresses (127.0.0.2 on) each hold `perAddress` connections that send one header byte
// every 5 s, reconnecting as soon as the server closes one: the slow-client attack of issue 24.
void healthUnderSlowClients(const std::string& server, const std::string& folder, int addresses,
                            int perAddress, double seconds) {
    const std::string root = folder + "/http-root";
    fs::create_directories(root);
    const auto [pid, port] = startServer(server, root);
    if (port == 0) {
        std::printf("organ-serve did not start (%s)\n", server.c_str());
        return;
    }
    std::atomic<bool> stop{false};
    std::atomic<long> reconnects{0};
    std::thread attacker([&, port = port] {
        std::vector<std::string> from;
        std::vector<pollfd> fds;
        for (int a = 0; a < addresses; ++a) {
            for (int i = 0; i < perAddress; ++i) {
                from.push_back("127.0.0." + std::to_string(2 + a));
                fds.push_back({connectFrom(from.back().c_str(), port), POLLIN, 0});
            }
        }
        auto nextByte = Clock::now();
        while (!stop.load()) {
            ::poll(fds.data(), fds.size(), 100);
            for (std::size_t i = 0; i < fds.size(); ++i) {
                char buffer[4096];
                if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
                    continue;
                }
                if (fds[i].fd >= 0 && ::recv(fds[i].fd, buffer, sizeof buffer, MSG_DONTWAIT) > 0) {
                    continue; // an answer (503, 408): read to its end, then the server closes
                }
                if (fds[i].fd >= 0) {
                    ::close(fds[i].fd);
                }
                fds[i].fd = connectFrom(from[i].c_str(), port);
                ++reconnects;
            }
            if (Clock::now() >= nextByte) {
                for (const pollfd& p : fds) {
                    if (p.fd >= 0) {
                        ::send(p.fd, "G", 1, MSG_NOSIGNAL);
                    }
                }
                nextByte += std::chrono::seconds(5);
            }
        }
        for (const pollfd& p : fds) {
            if (p.fd >= 0) {
                ::close(p.fd);
            }
        }
    });
    std::vector<double> latencies;
    std::map<int, long> statuses;
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < end) {
        const auto t0 = Clock::now();
        const int status =
            statusOf(roundTrip(port, "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        latencies.push_back(ms(Clock::now() - t0));
        ++statuses[status];
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    stop = true;
    attacker.join();
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    std::sort(latencies.begin(), latencies.end());
    auto at = [&](double q) { return latencies[std::size_t(q * double(latencies.size() - 1))]; };
    std::string answered;
    for (const auto& [status, count] : statuses) {
        answered += " " + std::to_string(count) + " × " +
                    (status == 0 ? std::string("none") : std::to_string(status));
    }
    std::printf(
        "health during a slow-client attack (%d address(es) × %d connections, a header byte each every 5 s, "
        "%ld reconnects), %.0f s: %zu probes,%s; latency p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
        addresses, perAddress, reconnects.load(), seconds, latencies.size(), answered.c_str(), at(0.5),
        at(0.99), latencies.back());
}

} // namespace

int main(int argc, char** argv) {
    const std::string folder =
        (argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path()).string() + "/bench-scale";
    const double seconds = argc > 2 ? std::atof(argv[2]) : 5.0;
    fs::remove_all(folder);
    fs::create_directories(folder + "/kimi");
    const auto parts = splitSpec(kimiK2Layout(), 32);
    std::uint64_t total = 0;
    std::string first;
    const auto writeStart = Clock::now();
    for (unsigned p = 0; p < parts.size(); ++p) {
        const std::string path = splitPartPath(folder + "/kimi/Kimi-K2-bench", p + 1, unsigned(parts.size()));
        total += writeSparse(path, parts[p]);
        first = p == 0 ? path : first;
    }
    std::printf(
        "Kimi-K2-shaped split set: %zu parts, %.1f GB as files (data are holes), first header %.1f MiB, "
        "written in %.1f s\n",
        parts.size(), double(total) / 1e9, GgufFile::open(first)->headerSize() / 1048576.0,
        ms(Clock::now() - writeStart) / 1000);
    openSplitSet(first);
    const auto findStart = Clock::now();
    const auto found = findFleetModels({folder + "/kimi"});
    std::printf("found as a fleet: %zu model(s) among %zu files in %.2f ms\n", found.size(), parts.size(),
                ms(Clock::now() - findStart));
    inspectOverHttp(ORGAN_SERVE_PROGRAM, folder, seconds);
    healthUnderSlowClients(ORGAN_SERVE_PROGRAM, folder, 1, 256, 30);
    healthUnderSlowClients(ORGAN_SERVE_PROGRAM, folder, 8, 32, 30);
    fs::remove_all(folder);
    return 0;
}
