#include "plan_run.h"

#include <atomic>
#include <csignal>

namespace organ::cli {
namespace {

std::atomic<StopToken*> interrupted{nullptr};

extern "C" void requestStopOnInterrupt(int) {
    if (StopToken* stop = interrupted.load()) {
        stop->requestStop(); // a lock-free atomic: safe in a signal handler
    }
}

} // namespace

struct StopOnInterrupt::Saved {
    struct sigaction interrupt {};
    struct sigaction terminate {};
};

StopOnInterrupt::StopOnInterrupt(StopToken& stop) : m_saved(std::make_unique<Saved>()) {
    interrupted.store(&stop);
    struct sigaction action {};
    action.sa_handler = requestStopOnInterrupt;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &m_saved->interrupt);
    sigaction(SIGTERM, &action, &m_saved->terminate);
}

StopOnInterrupt::~StopOnInterrupt() {
    sigaction(SIGINT, &m_saved->interrupt, nullptr);
    sigaction(SIGTERM, &m_saved->terminate, nullptr);
    interrupted.store(nullptr);
}

} // namespace organ::cli
