#include "measure/model_measure.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

namespace organ {
namespace {

// A sample above this many values is measured by all threads at once.
constexpr std::uint64_t kLargeSample = 4u << 20;

class GroupBuilder {
public:
    void add(const TensorInfo& tensor, const ZResult& z) {
        ++m_group.tensors;
        m_group.parameters += tensor.elements;
        if (!z.hasTheta()) {
            return;
        }
        const double theta = *z.theta;
        m_group.thetaMin = m_group.measured == 0 ? theta : std::min(m_group.thetaMin, theta);
        m_group.thetaMax = m_group.measured == 0 ? theta : std::max(m_group.thetaMax, theta);
        ++m_group.measured;
        m_thetaSum += theta;
        m_signalSum += *z.signal;
    }
    ThetaGroup finish(std::string key) const {
        ThetaGroup g = m_group;
        g.key = std::move(key);
        if (g.measured != 0) {
            g.thetaMean = m_thetaSum / static_cast<double>(g.measured);
            g.signalMean = m_signalSum / static_cast<double>(g.measured);
        }
        return g;
    }

private:
    ThetaGroup m_group;
    double m_thetaSum = 0;
    double m_signalSum = 0;
};

// Serialises progress reports from the workers and throttles them.
class SharedProgress {
public:
    SharedProgress(const ProgressFn& fn, std::uint64_t total) : m_throttle(fn), m_total(total) {}
    void add(std::uint64_t values) {
        const std::uint64_t done = m_done += values;
        std::lock_guard lock(m_mutex);
        m_throttle.report(done, m_total, "measuring", done == m_total);
    }

private:
    std::mutex m_mutex;
    ProgressThrottle m_throttle;
    std::atomic<std::uint64_t> m_done{0};
    std::uint64_t m_total;
};

} // namespace

unsigned defaultThreadCount() {
    return std::max(1u, std::thread::hardware_concurrency());
}

JobResult measureModel(const GgufModel& model, const ModelAnatomy& anatomy, const MeasureOptions& options,
                       ModelMeasurement& out, const ProgressFn& progress, const StopToken* stop) {
    const auto& tensors = model.tensors();
    const unsigned threads = options.threads == 0 ? defaultThreadCount() : options.threads;
    out = ModelMeasurement{};
    out.path = model.path();
    out.name = model.name();
    out.architecture = model.architecture();
    out.params = options.params;
    out.tensors.assign(tensors.size(), ZResult{});

    auto sampleOf = [&](const TensorInfo& t) {
        return options.params.sample == kSampleAll ? t.elements : std::min(t.elements, options.params.sample);
    };
    std::vector<std::size_t> large;
    std::vector<std::size_t> small;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        total += sampleOf(tensors[i]);
        (sampleOf(tensors[i]) > kLargeSample ? large : small).push_back(i);
    }
    // Largest first, so that the last tensors to finish are small ones.
    std::sort(small.begin(), small.end(),
              [&](std::size_t a, std::size_t b) { return tensors[a].bytes > tensors[b].bytes; });
    SharedProgress shared(progress, total);
    std::atomic<bool> cancelled{false};
    std::mutex resultMutex;

    auto measureOne = [&](std::size_t i, unsigned tensorThreads) {
        const TensorInfo& t = tensors[i];
        auto result = measureTensor(t.type, model.tensorData(t), t.elements, options.params, tensorThreads,
                                    stop, model.tensorMapping(t));
        if (!result) {
            cancelled = true;
            return;
        }
        out.tensors[i] = std::move(*result);
        if (options.onTensor) {
            std::lock_guard lock(resultMutex);
            options.onTensor(i, out.tensors[i]);
        }
        shared.add(sampleOf(t));
    };
    for (std::size_t i : large) {
        if (cancelled || (stop != nullptr && stop->stopRequested())) {
            return JobResult::cancelled();
        }
        measureOne(i, threads);
    }
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t k = next++; k < small.size() && !cancelled; k = next++) {
            if (stop != nullptr && stop->stopRequested()) {
                cancelled = true;
                return;
            }
            measureOne(small[k], 1);
        }
    };
    {
        std::vector<std::jthread> pool;
        for (unsigned w = 1; w < threads; ++w) {
            pool.emplace_back(worker);
        }
        worker();
    }
    if (cancelled || (stop != nullptr && stop->stopRequested())) {
        return JobResult::cancelled();
    }
    aggregateMeasurement(model, anatomy, out);
    return JobResult::ok();
}

void aggregateMeasurement(const GgufModel& model, const ModelAnatomy& anatomy, ModelMeasurement& m,
                          const std::vector<bool>& include) {
    const auto& tensors = model.tensors();
    GroupBuilder whole;
    std::map<std::size_t, GroupBuilder> systems;
    std::map<std::pair<std::size_t, std::string>, GroupBuilder> roles; // (anatomical order, role)
    std::map<std::uint32_t, GroupBuilder> layers;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (!include.empty() && !include[i]) {
            continue;
        }
        const TensorAnatomy& a = anatomy.tensors[i];
        const ZResult& z = m.tensors[i];
        whole.add(tensors[i], z);
        systems[static_cast<std::size_t>(a.system)].add(tensors[i], z);
        roles[{a.order, a.role}].add(tensors[i], z);
        if (a.layer) {
            layers[*a.layer].add(tensors[i], z);
        }
    }
    m.model = whole.finish(m.name);
    m.bySystem.clear();
    for (const auto& [system, builder] : systems) {
        m.bySystem.push_back(builder.finish(std::string(systemName(static_cast<System>(system)))));
    }
    m.byRole.clear();
    for (const auto& [key, builder] : roles) {
        m.byRole.push_back(builder.finish(key.second));
    }
    m.byLayer.clear();
    for (const auto& [layer, builder] : layers) {
        m.byLayer.push_back(builder.finish(std::to_string(layer)));
    }
}

std::vector<const ModelMeasurement*> zRanking(std::vector<const ModelMeasurement*> models) {
    std::stable_sort(models.begin(), models.end(), [](const ModelMeasurement* a, const ModelMeasurement* b) {
        return a->model.thetaMean > b->model.thetaMean;
    });
    return models;
}

std::vector<const ModelMeasurement*> zRanking(const std::vector<ModelMeasurement>& models) {
    std::vector<const ModelMeasurement*> rows;
    for (const auto& m : models) {
        rows.push_back(&m);
    }
    return zRanking(std::move(rows));
}

} // namespace organ
