#include "plan_run.h"

#include <atomic>
#include <csignal>
#include <iterator>

namespace organ::cli {
namespace {

std::atomic<StopToken*> interrupted{nullptr};

extern "C" void requestStopOnInterrupt(int) {
    if (StopToken* stop = interrupted.load()) {
        stop->requestStop(); // a lock-free atomic: safe in a signal handler
    }
}

} // namespace

// SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal closed, an ssh session dropped) stop the job;
// SIGPIPE (stdout a pipe whose reader left) is ignored, so that the job ends as it would have. It
// stays ignored after the job: what the job printed last is still buffered in std::cout, and is
// flushed when the process exits.
constexpr int kStopping[] = {SIGINT, SIGTERM, SIGHUP};

struct StopOnInterrupt::Saved {
    struct sigaction stopping[std::size(kStopping)]{};
};

StopOnInterrupt::StopOnInterrupt(StopToken& stop) : m_saved(std::make_unique<Saved>()) {
    interrupted.store(&stop);
    struct sigaction action {};
    action.sa_handler = requestStopOnInterrupt;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < std::size(kStopping); ++i) {
        sigaction(kStopping[i], &action, &m_saved->stopping[i]);
    }
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, nullptr);
}

StopOnInterrupt::~StopOnInterrupt() {
    for (std::size_t i = 0; i < std::size(kStopping); ++i) {
        sigaction(kStopping[i], &m_saved->stopping[i], nullptr);
    }
    interrupted.store(nullptr);
}

} // namespace organ::cli
