#include "allocation_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<std::size_t> g_live{0};
std::atomic<std::size_t> g_base{0};
std::atomic<std::size_t> g_peak{0};

constexpr std::size_t kHeader = alignof(std::max_align_t);

void* allocate(std::size_t size) {
    auto* raw = static_cast<unsigned char*>(std::malloc(size + kHeader));
    if (raw == nullptr) {
        throw std::bad_alloc();
    }
    *reinterpret_cast<std::size_t*>(raw) = size;
    const std::size_t live = g_live.fetch_add(size) + size;
    std::size_t peak = g_peak.load();
    while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
    }
    return raw + kHeader;
}

void release(void* p) noexcept {
    if (p == nullptr) {
        return;
    }
    auto* raw = static_cast<unsigned char*>(p) - kHeader;
    g_live.fetch_sub(*reinterpret_cast<std::size_t*>(raw));
    std::free(raw);
}

} // namespace

void* operator new(std::size_t size) {
    return allocate(size);
}
void* operator new[](std::size_t size) {
    return allocate(size);
}
void operator delete(void* p) noexcept {
    release(p);
}
void operator delete[](void* p) noexcept {
    release(p);
}
void operator delete(void* p, std::size_t) noexcept {
    release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    release(p);
}

namespace organ::testing {

void resetPeakAllocation() {
    g_base = g_live.load();
    g_peak = g_live.load();
}

std::size_t peakAllocationSinceReset() {
    return g_peak.load() - g_base.load();
}

} // namespace organ::testing
