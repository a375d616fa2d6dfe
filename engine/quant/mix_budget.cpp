#include "quant/mix_budget.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace organ {

std::optional<BudgetSolution> solveBudget(const std::vector<std::vector<BudgetOption>>& groups,
                                          std::uint64_t budget) {
    std::uint64_t unit = 0;
    std::uint64_t least = 0;
    for (const auto& options : groups) {
        if (options.empty()) {
            return std::nullopt;
        }
        if (options.size() > 256) {
            throw std::invalid_argument("solveBudget: more than 256 options in a group");
        }
        std::uint64_t smallest = std::numeric_limits<std::uint64_t>::max();
        for (const BudgetOption& o : options) {
            unit = std::gcd(unit, o.bytes);
            smallest = std::min(smallest, o.bytes);
        }
        least += smallest;
    }
    if (least > budget) {
        return std::nullopt;
    }
    BudgetSolution solution;
    unit = std::max<std::uint64_t>(unit, 1);
    const std::uint64_t count = std::max<std::size_t>(groups.size(), 1);
    if (budget / unit > kMaxBudgetStates / count) {
        const std::uint64_t coarser = (budget / unit * count + kMaxBudgetStates - 1) / kMaxBudgetStates;
        unit *= coarser;
        solution.exact = false;
    }
    solution.unit = unit;
    // Sizes in units, rounded up: a total that fits in units fits in bytes.
    const auto units = [unit](std::uint64_t bytes) {
        return static_cast<std::size_t>((bytes + unit - 1) / unit);
    };
    const std::size_t capacity = static_cast<std::size_t>(budget / unit);
    constexpr double kNone = std::numeric_limits<double>::infinity();
    // best[b]: the least cost of the groups so far at exactly b units; pick[g][b]: group g's option there.
    std::vector<double> best(capacity + 1, kNone);
    best[0] = 0;
    std::vector<std::vector<std::uint8_t>> pick(groups.size(), std::vector<std::uint8_t>(capacity + 1, 0));
    std::vector<double> next(capacity + 1);
    for (std::size_t g = 0; g < groups.size(); ++g) {
        std::fill(next.begin(), next.end(), kNone);
        for (std::size_t o = 0; o < groups[g].size(); ++o) {
            const std::size_t size = units(groups[g][o].bytes);
            const double cost = groups[g][o].cost;
            for (std::size_t b = size; b <= capacity; ++b) {
                const double total = best[b - size] + cost;
                if (total < next[b]) {
                    next[b] = total;
                    pick[g][b] = static_cast<std::uint8_t>(o);
                }
            }
        }
        best.swap(next);
    }
    std::size_t at = 0;
    for (std::size_t b = 1; b <= capacity; ++b) {
        if (best[b] < best[at]) {
            at = b;
        }
    }
    if (best[at] == kNone) {
        return std::nullopt;
    }
    solution.choice.assign(groups.size(), 0);
    for (std::size_t g = groups.size(); g-- > 0;) {
        const std::size_t o = pick[g][at];
        solution.choice[g] = o;
        solution.bytes += groups[g][o].bytes;
        solution.cost += groups[g][o].cost;
        at -= units(groups[g][o].bytes);
    }
    return solution;
}

} // namespace organ
