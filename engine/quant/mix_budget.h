#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace organ {

// A choice the budget mix makes: one option per group (a group of tensors that take one type
// together), each with its bytes and its predicted cost (the KL divergence the model shows with
// only that group in that option's type).
struct BudgetOption {
    std::uint64_t bytes = 0;
    double cost = 0;
};

struct BudgetSolution {
    std::vector<std::size_t> choice; // per group, the index of its option
    std::uint64_t bytes = 0;         // Σ the chosen options' bytes: never above the budget
    double cost = 0;                 // Σ their costs
    // True when the solution is the least total cost of all that fit (the sizes were counted
    // exactly); false when the sizes had to be rounded up to `unit` bytes to bound the table (the
    // budget still holds, the optimum may be missed by less than a unit per group).
    bool exact = true;
    std::uint64_t unit = 1;
};

// The states the knapsack's table may hold (groups × budget / unit): 2^25, 32 MiB of choices.
inline constexpr std::uint64_t kMaxBudgetStates = 1ull << 25;

// The multiple-choice knapsack: one option per group, Σ bytes ≤ `budget`, Σ cost least. Solved
// exactly by dynamic programming over the byte total counted in the greatest common divisor of
// all the options' sizes (rounded up to a coarser unit only when groups × budget / unit would
// exceed kMaxBudgetStates). Nullopt when even the smallest options exceed the budget, or a group
// has no option; at most 256 options a group (std::invalid_argument).
std::optional<BudgetSolution> solveBudget(const std::vector<std::vector<BudgetOption>>& groups,
                                          std::uint64_t budget);

} // namespace organ
