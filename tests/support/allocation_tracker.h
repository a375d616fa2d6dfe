#pragma once

#include <cstddef>

// Counts the bytes that operator new hands out in this test binary, so that a test can
// assert that opening a malformed file never allocates more than a few MiB.
namespace organ::testing {

void resetPeakAllocation();
std::size_t peakAllocationSinceReset(); // peak live bytes above the level at reset

} // namespace organ::testing
