#pragma once

#include "support/job.h"

#include <cstddef>
#include <functional>

namespace organ {

// Runs work(i) for every i < count on `threads` threads (0: one per core; the caller's is one of
// them), each taking the next item as it comes free. No item is started once `stop` is requested
// or an item has thrown; the first failure is rethrown once every thread has ended. False when
// stopped before every item was done.
bool forEachItem(std::size_t count, unsigned threads, const StopToken* stop,
                 const std::function<void(std::size_t)>& work);

} // namespace organ
