#include "merge/tensor_merger.h"

#include "merge/dare_mask.h"
#include "support/errors.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace organ {
namespace {

// Values read per input at a time: 1 MiB of floats each.
constexpr std::size_t kChunk = 1u << 18;
constexpr std::size_t kBins = 1u << 16;

// |v| as an ordered key: the bits of a non-negative float order as its values do (NaN above ∞).
std::uint32_t magnitudeKey(float v) {
    return std::bit_cast<std::uint32_t>(v) & 0x7FFFFFFFu;
}

bool isTaskArithmetic(MergeMethod method) {
    return method == MergeMethod::TaskArithmetic || method == MergeMethod::DareLinear ||
           method == MergeMethod::Breadcrumbs;
}

} // namespace

TensorMerger::TensorMerger(TensorMergeParams params, TensorMergeInputs inputs)
    : m_params(std::move(params)), m_inputs(std::move(inputs)) {
    if (m_inputs.models.size() != m_params.models.size() || m_inputs.models.empty() ||
        (needsBase(m_params.method) && !m_inputs.base)) {
        throw FormatError(m_params.stream + ": the merge's inputs do not fit its parameters");
    }
    for (const ModelTensorParams& p : m_params.models) {
        ModelState state;
        state.weight = static_cast<float>(p.weight);
        m_models.push_back(state);
    }
}

template <typename Visit> bool TensorMerger::scan(const StopToken* stop, Visit visit) {
    for (std::uint64_t first = 0; first < m_inputs.elements; first += kChunk) {
        if (stop != nullptr && stop->stopRequested()) {
            return false;
        }
        const auto count =
            static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, m_inputs.elements - first));
        readChunk(first, count);
        visit(first, count);
    }
    return true;
}

void TensorMerger::readChunk(std::uint64_t first, std::size_t count) {
    if (m_inputs.base) {
        m_base.resize(count);
        m_inputs.base(first, count, m_base.data());
    }
    m_values.resize(m_inputs.models.size());
    for (std::size_t i = 0; i < m_values.size(); ++i) {
        m_values[i].resize(count);
        m_inputs.models[i](first, count, m_values[i].data());
    }
}

void TensorMerger::deltas(std::size_t count) {
    for (auto& values : m_values) {
        for (std::size_t j = 0; j < count; ++j) {
            values[j] -= m_base[j];
        }
    }
}

bool TensorMerger::prepare(const StopToken* stop) {
    if (m_prepared) {
        return true;
    }
    const MergeMethod method = m_params.method;
    double weights = 0;
    for (const ModelTensorParams& p : m_params.models) {
        weights += p.weight;
    }
    if (method == MergeMethod::Linear && m_params.normalize) {
        m_divisor = static_cast<float>(weights);
    } else if (isTaskArithmetic(method) && m_params.normalize && std::abs(weights) >= 1e-8) {
        m_divisor = static_cast<float>(weights);
    }
    if (method == MergeMethod::Slerp) {
        double norm0 = 0;
        double norm1 = 0;
        double dot = 0;
        const bool done = scan(stop, [&](std::uint64_t, std::size_t count) {
            for (std::size_t j = 0; j < count; ++j) {
                const double x0 = m_base[j];
                const double x1 = m_values[0][j];
                norm0 += x0 * x0;
                norm1 += x1 * x1;
                dot += x0 * x1;
            }
        });
        if (!done) {
            return false;
        }
        // A norm of at most 1e-8 leaves its vector as it is (divided by 1).
        const double a = std::sqrt(norm0) > 1e-8 ? std::sqrt(norm0) : 1.0;
        const double b = std::sqrt(norm1) > 1e-8 ? std::sqrt(norm1) : 1.0;
        const double d = dot / (a * b);
        const double t = m_params.t;
        if (std::abs(d) > 0.9995) {
            m_coefficients = {static_cast<float>(1 - t), static_cast<float>(t)};
        } else {
            const double theta = std::acos(d);
            m_coefficients = {static_cast<float>(std::sin((1 - t) * theta) / std::sin(theta)),
                              static_cast<float>(std::sin(t * theta) / std::sin(theta))};
        }
    }
    if (method == MergeMethod::ModelStock) {
        const std::size_t n = m_models.size();
        std::vector<double> dots(n * n, 0.0);
        const bool done = scan(stop, [&](std::uint64_t, std::size_t count) {
            deltas(count);
            for (std::size_t i = 0; i < n; ++i) {
                for (std::size_t k = i; k < n; ++k) {
                    double sum = 0;
                    for (std::size_t j = 0; j < count; ++j) {
                        sum += static_cast<double>(m_values[i][j]) * m_values[k][j];
                    }
                    dots[i * n + k] += sum;
                }
            }
        });
        if (!done) {
            return false;
        }
        double cosines = 0;
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t k = i + 1; k < n; ++k) {
                const double norms = std::max(std::sqrt(dots[i * n + i]) * std::sqrt(dots[k * n + k]), 1e-6);
                cosines += std::clamp(dots[i * n + k] / norms, -1.0, 1.0);
            }
        }
        const double c = cosines / static_cast<double>(n * (n - 1) / 2);
        const double t = static_cast<double>(n) * c / (1 + static_cast<double>(n - 1) * c);
        m_coefficients = {static_cast<float>(t), static_cast<float>(1 - t)};
    }
    if (sparsifyOf(method) == Sparsify::Bernoulli && m_params.rescale) {
        std::vector<double> whole(m_models.size(), 0.0);
        std::vector<double> kept(m_models.size(), 0.0);
        std::vector<DareMask> masks;
        for (std::size_t i = 0; i < m_models.size(); ++i) {
            masks.emplace_back(m_params.seed, m_params.stream, i);
        }
        const bool done = scan(stop, [&](std::uint64_t first, std::size_t count) {
            deltas(count);
            for (std::size_t i = 0; i < m_models.size(); ++i) {
                const double density = m_params.models[i].density;
                for (std::size_t j = 0; j < count; ++j) {
                    const double magnitude = std::abs(m_values[i][j]);
                    whole[i] += magnitude;
                    kept[i] += masks[i].keeps(first + j, density) ? magnitude : 0.0;
                }
            }
        });
        if (!done) {
            return false;
        }
        for (std::size_t i = 0; i < m_models.size(); ++i) {
            if (whole[i] >= 1e-7 && kept[i] >= 1e-7) {
                m_models[i].scale = static_cast<float>(whole[i] / kept[i]);
            }
        }
    }
    const Sparsify sparsify = sparsifyOf(method);
    if ((sparsify == Sparsify::Magnitude || sparsify == Sparsify::Breadcrumbs) && !prepareCuts(stop)) {
        return false;
    }
    m_prepared = true;
    restart();
    return true;
}

bool TensorMerger::prepareCuts(const StopToken* stop) {
    const std::uint64_t n = m_inputs.elements;
    struct Pending {
        std::size_t model = 0;
        Cut* cut = nullptr;
        std::uint64_t rank = 0;
        std::uint32_t bucket = 0;
        std::uint64_t above = 0; // elements in buckets above `bucket`
        Histogram low;
    };
    std::vector<Pending> pending;
    auto place = [&](std::size_t model, Cut& cut, std::uint64_t rank) {
        if (rank == 0) {
            cut.kind = Cut::Kind::None;
        } else if (rank >= n) {
            cut.kind = Cut::Kind::All;
        } else {
            cut.kind = Cut::Kind::Key;
            pending.push_back({model, &cut, rank, 0, 0, {}});
        }
    };
    for (std::size_t i = 0; i < m_models.size(); ++i) {
        const ModelTensorParams& p = m_params.models[i];
        const auto keep = static_cast<std::uint64_t>(std::floor(p.density * static_cast<double>(n)));
        std::uint64_t from = 0;
        if (sparsifyOf(m_params.method) == Sparsify::Breadcrumbs) {
            // The largest ⌊gamma·n⌋ go first, fewer when both cuts would overlap.
            from =
                std::min(static_cast<std::uint64_t>(std::floor(p.gamma * static_cast<double>(n))), n - keep);
        }
        place(i, m_models[i].from, from);
        place(i, m_models[i].to, from + keep);
    }
    if (pending.empty()) {
        return true;
    }
    std::vector<Histogram> high(m_models.size());
    for (const Pending& p : pending) {
        high[p.model].assign(kBins, 0);
    }
    const bool counted = scan(stop, [&](std::uint64_t, std::size_t count) {
        deltas(count);
        for (std::size_t i = 0; i < m_models.size(); ++i) {
            if (!high[i].empty()) {
                for (std::size_t j = 0; j < count; ++j) {
                    ++high[i][magnitudeKey(m_values[i][j]) >> 16];
                }
            }
        }
    });
    if (!counted) {
        return false;
    }
    for (Pending& p : pending) {
        std::uint64_t above = 0;
        for (std::size_t b = kBins; b-- > 0;) {
            if (above + high[p.model][b] > p.rank) {
                p.bucket = static_cast<std::uint32_t>(b);
                p.above = above;
                break;
            }
            above += high[p.model][b];
        }
        p.low.assign(kBins, 0);
    }
    const bool refined = scan(stop, [&](std::uint64_t, std::size_t count) {
        deltas(count);
        for (Pending& p : pending) {
            const std::vector<float>& d = m_values[p.model];
            for (std::size_t j = 0; j < count; ++j) {
                const std::uint32_t key = magnitudeKey(d[j]);
                if ((key >> 16) == p.bucket) {
                    ++p.low[key & 0xFFFFu];
                }
            }
        }
    });
    if (!refined) {
        return false;
    }
    for (Pending& p : pending) {
        std::uint64_t above = p.above;
        for (std::size_t b = kBins; b-- > 0;) {
            if (above + p.low[b] > p.rank) {
                p.cut->key = (p.bucket << 16) | static_cast<std::uint32_t>(b);
                p.cut->tiesBefore = p.rank - above;
                break;
            }
            above += p.low[b];
        }
    }
    return true;
}

bool TensorMerger::ranksBefore(Cut& cut, std::uint32_t key) {
    switch (cut.kind) {
    case Cut::Kind::None:
        return false;
    case Cut::Kind::All:
        return true;
    case Cut::Kind::Key:
        break;
    }
    if (key != cut.key) {
        return key > cut.key;
    }
    return cut.tiesSeen++ < cut.tiesBefore;
}

void TensorMerger::sparsify(std::size_t model, std::uint64_t first, std::size_t count) {
    std::vector<float>& d = m_values[model];
    ModelState& state = m_models[model];
    switch (sparsifyOf(m_params.method)) {
    case Sparsify::None:
        return;
    case Sparsify::Bernoulli: {
        const DareMask mask(m_params.seed, m_params.stream, model);
        const double density = m_params.models[model].density;
        for (std::size_t j = 0; j < count; ++j) {
            d[j] = mask.keeps(first + j, density) ? d[j] * state.scale : 0.0f;
        }
        return;
    }
    case Sparsify::Magnitude:
    case Sparsify::Breadcrumbs:
        for (std::size_t j = 0; j < count; ++j) {
            const std::uint32_t key = magnitudeKey(d[j]);
            // Both counters see every element, whatever the first answers.
            const bool pastFrom = !ranksBefore(state.from, key);
            const bool beforeTo = ranksBefore(state.to, key);
            if (!(pastFrom && beforeTo)) {
                d[j] = 0.0f;
            }
        }
        return;
    }
}

void TensorMerger::next(std::size_t count, float* out) {
    const MergeMethod method = m_params.method;
    const std::size_t models = m_models.size();
    while (count > 0) {
        const std::size_t c = std::min(kChunk, count);
        const std::uint64_t first = m_position;
        readChunk(first, c);
        if (method == MergeMethod::Linear) {
            for (std::size_t j = 0; j < c; ++j) {
                float sum = 0;
                for (std::size_t i = 0; i < models; ++i) {
                    sum += m_models[i].weight * m_values[i][j];
                }
                out[j] = sum / m_divisor;
            }
        } else if (method == MergeMethod::Slerp) {
            for (std::size_t j = 0; j < c; ++j) {
                out[j] = m_coefficients[0] * m_base[j] + m_coefficients[1] * m_values[0][j];
            }
        } else if (method == MergeMethod::ModelStock) {
            const auto n = static_cast<float>(models);
            for (std::size_t j = 0; j < c; ++j) {
                float sum = 0;
                for (std::size_t i = 0; i < models; ++i) {
                    sum += m_values[i][j];
                }
                out[j] = m_coefficients[0] * (sum / n) + m_coefficients[1] * m_base[j];
            }
        } else {
            deltas(c);
            for (std::size_t i = 0; i < models; ++i) {
                sparsify(i, first, c);
            }
            const bool consensus = usesSignConsensus(method);
            for (std::size_t j = 0; j < c; ++j) {
                float sum = 0;
                for (std::size_t i = 0; i < models; ++i) {
                    sum += m_models[i].weight * m_values[i][j];
                }
                if (!consensus) {
                    out[j] = m_base[j] + sum / m_divisor;
                    continue;
                }
                // ties' sign consensus: the sign of the sum (0 counts as +) and the entries that
                // share it (a zero entry has no sign and never does).
                const bool positive = sum >= 0;
                float agreed = 0;
                float divisor = 0;
                for (std::size_t i = 0; i < models; ++i) {
                    const float v = m_models[i].weight * m_values[i][j];
                    if (positive ? v > 0 : v < 0) {
                        agreed += v;
                        divisor += m_models[i].weight;
                    }
                }
                if (m_params.normalize) {
                    out[j] = m_base[j] + agreed / (divisor == 0 ? 1.0f : divisor);
                } else {
                    out[j] = m_base[j] + agreed;
                }
            }
        }
        m_position += c;
        out += c;
        count -= c;
    }
}

void TensorMerger::restart() {
    m_position = 0;
    for (ModelState& m : m_models) {
        m.from.tiesSeen = 0;
        m.to.tiesSeen = 0;
    }
}

std::vector<float> mergeTensorValues(const TensorMergeParams& params, const TensorMergeInputs& inputs) {
    TensorMerger merger(params, inputs);
    merger.prepare();
    std::vector<float> out(static_cast<std::size_t>(inputs.elements));
    merger.next(out.size(), out.data());
    return out;
}

} // namespace organ
