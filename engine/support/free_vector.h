#pragma once

#include <vector>

namespace organ {

// Empties `v` and gives its memory back. `v = {}` does not: it picks the initializer-list
// assignment, which keeps the capacity, as clear() does.
template <typename T, typename Allocator> void freeVector(std::vector<T, Allocator>& v) {
    std::vector<T, Allocator>().swap(v);
}

} // namespace organ
