// Whole-model measurement: aggregates on a real model, the ranking, cancel, corrupt
// payloads, and the cache that must never serve a changed file.
#include "fixtures.h"
#include "measure/measure_cache.h"
#include "shared_models.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

using namespace organ;
using namespace organ::testing;

namespace {

MeasuredModel measure(const std::string& path, const MeasureOptions& options = {}) {
    MeasuredModel m;
    m.model = GgufModel::open(path);
    m.anatomy = analyzeAnatomy(*m.model);
    const JobResult result = measureModel(*m.model, m.anatomy, options, m.measurement);
    if (!result.isOk()) {
        qWarning("%s", result.message.c_str());
    }
    return m;
}

const ThetaGroup& group(const std::vector<ThetaGroup>& groups, const std::string& key) {
    for (const auto& g : groups) {
        if (g.key == key) {
            return g;
        }
    }
    static const ThetaGroup none;
    return none;
}

} // namespace

class TestMeasure : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void aggregatesOnRealModel() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const MeasuredModel m = measure(path.toStdString());
        const ModelMeasurement& mm = m.measurement;
        QCOMPARE(mm.model.tensors, std::uint64_t(48));
        QCOMPARE(mm.model.measured, std::uint64_t(48));
        QCOMPARE(mm.model.parameters, std::uint64_t(292800));
        // The group means are the means of their tensors' θ.
        double organSum = 0;
        double minTheta = 90;
        int organs = 0;
        for (std::size_t i = 0; i < mm.tensors.size(); ++i) {
            minTheta = std::min(minTheta, *mm.tensors[i].theta);
            if (m.anatomy.tensors[i].system == System::Organ) {
                organSum += *mm.tensors[i].theta;
                ++organs;
            }
        }
        const ThetaGroup& organ = group(mm.bySystem, "organ");
        QCOMPARE(organ.measured, std::uint64_t(15));
        QVERIFY(std::abs(organ.thetaMean - organSum / organs) < 1e-9);
        QCOMPARE(mm.model.thetaMin, minTheta);
        QCOMPARE(mm.bySystem.size(), std::size_t(4));
        QCOMPARE(mm.byLayer.size(), std::size_t(5));
        QCOMPARE(group(mm.byLayer, "2").tensors, std::uint64_t(9));
        QCOMPARE(group(mm.byRole, "ffn_down").tensors, std::uint64_t(5));
        QCOMPARE(mm.byRole.front().key, std::string("token_embd")); // anatomical order
        // The spec's ordering of systems on trained models: norms above organs.
        QVERIFY(group(mm.bySystem, "norm").thetaMean > organ.thetaMean);
        // Measuring with 1 thread or 2 gives the same numbers.
        MeasureOptions single;
        single.threads = 1;
        const MeasuredModel again = measure(path.toStdString(), single);
        QCOMPARE(again.measurement.model.thetaMean, mm.model.thetaMean);
    }

    // A report over some tensors (the window's filtered tree): only those rows, and groups
    // aggregated over only those tensors.
    void reportsASelection() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        MeasuredModel m = measure(path.toStdString());
        const std::string everything = measurementsCsv({m});
        m.include.assign(m.model->tensors().size(), false);
        double sum = 0;
        int selected = 0;
        for (std::size_t i = 0; i < m.include.size(); ++i) {
            if (m.model->tensors()[i].name.find("ffn_down") != std::string::npos) {
                m.include[i] = true;
                sum += *m.measurement.tensors[i].theta;
                ++selected;
            }
        }
        QCOMPARE(selected, 5);
        aggregateMeasurement(*m.model, m.anatomy, m.measurement, m.include);
        QCOMPARE(m.measurement.model.tensors, std::uint64_t(5));
        QVERIFY(std::abs(m.measurement.model.thetaMean - sum / selected) < 1e-9);
        QCOMPARE(m.measurement.bySystem.size(), std::size_t(1));
        QCOMPARE(m.measurement.byRole.size(), std::size_t(1));
        const nlohmann::json j = measurementToJson(m);
        QCOMPARE(j.at("tensors").size(), std::size_t(5));
        for (const auto& t : j.at("tensors")) {
            QVERIFY(t.at("name").get<std::string>().find("ffn_down") != std::string::npos);
        }
        const std::string csv = measurementsCsv({m});
        QCOMPARE(std::count(csv.begin(), csv.end(), '\n'), 6L); // header + 5
        QVERIFY(std::count(everything.begin(), everything.end(), '\n') == 49L);
        const std::string markdown = measurementsMarkdown({m});
        QVERIFY(markdown.find("attn_q") == std::string::npos);
        QVERIFY(markdown.find("ffn_down") != std::string::npos);
    }

    void damagedOrgansRankLower() {
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthy);
        ORGAN_REQUIRE_SHARED(damaged);
        std::vector<ModelMeasurement> both{measure(damaged.toStdString()).measurement,
                                           measure(healthy.toStdString()).measurement};
        const auto ranking = zRanking(both);
        QCOMPARE(ranking.front()->path, healthy.toStdString());
        const auto& h = both[1];
        const auto& d = both[0];
        // The noise replaced blocks 1-3's organs: those tensors' θ drop, every other stays.
        const auto healthyModel = GgufModel::open(healthy.toStdString());
        const auto damagedModel = GgufModel::open(damaged.toStdString());
        int lower = 0;
        for (std::size_t i = 0; i < d.tensors.size(); ++i) {
            const std::string& name = damagedModel->tensors()[i].name;
            const TensorInfo* twin = healthyModel->findTensor(name);
            const double healthyTheta =
                *h.tensors[static_cast<std::size_t>(twin - healthyModel->tensors().data())].theta;
            const bool replaced =
                name.find("ffn_") != std::string::npos && name.find("norm") == std::string::npos &&
                (name.starts_with("blk.1.") || name.starts_with("blk.2.") || name.starts_with("blk.3."));
            if (replaced) {
                lower += *d.tensors[i].theta < healthyTheta;
            } else {
                QCOMPARE(*d.tensors[i].theta, healthyTheta);
            }
        }
        QCOMPARE(lower, 9);
        QVERIFY(group(d.bySystem, "organ").thetaMean < group(h.bySystem, "organ").thetaMean);
        QCOMPARE(group(d.bySystem, "skeleton").thetaMean, group(h.bySystem, "skeleton").thetaMean);
    }

    void cancelMidMeasurement() {
        const QString path = sharedModel(QStringLiteral("quant/wide-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto model = GgufModel::open(path.toStdString());
        const ModelAnatomy anatomy = analyzeAnatomy(*model);
        StopToken stop;
        MeasureOptions options;
        options.params.sample = kSampleAll;
        ModelMeasurement out;
        int reports = 0;
        const JobResult result = measureModel(
            *model, anatomy, options, out,
            [&](const Progress& p) {
                ++reports;
                if (p.done > 0) {
                    stop.requestStop();
                }
            },
            &stop);
        QCOMPARE(result.status, JobResult::Status::Cancelled);
        QVERIFY(reports >= 1);
    }

    // NaN and infinite values, and an F16 scale that is infinite, in an otherwise valid file.
    void corruptPayloadIsFlagged() {
        GgufWriteSpec spec;
        spec.set("general.architecture", MetaValue::fromString("llama"));
        std::vector<float> values(4096);
        for (std::size_t i = 0; i < values.size(); ++i) {
            values[i] = std::sin(0.37f * i) * (1.0f + (i % 7));
        }
        values[10] = std::numeric_limits<float>::quiet_NaN();
        values[11] = std::numeric_limits<float>::infinity();
        auto floats = std::make_shared<std::vector<float>>(values);
        TensorToWrite f32;
        f32.name = "blk.0.ffn_up.weight";
        f32.type = TensorType::F32;
        f32.nDims = 2;
        f32.ne = {64, 64, 1, 1};
        f32.source.bytes = std::as_bytes(std::span<const float>(*floats));
        f32.source.owner = floats;
        spec.tensors.push_back(f32);
        TensorToWrite q8 = patternTensor("blk.0.ffn_down.weight", TensorType::Q8_0, {64, 64}, 3);
        auto blocks =
            std::make_shared<std::vector<std::byte>>(q8.source.bytes.begin(), q8.source.bytes.end());
        const std::uint16_t infiniteHalf = 0x7C00;
        std::memcpy(blocks->data() + 34 * 5, &infiniteHalf, 2); // block 5's scale
        q8.source.bytes = *blocks;
        q8.source.owner = blocks;
        spec.tensors.push_back(q8);
        spec.tensors.push_back(patternTensor("blk.0.ffn_gate.weight", TensorType::F32, {64, 64}, 4));
        const QString path = m_dir.filePath(QStringLiteral("corrupt-payload.gguf"));
        QVERIFY(writeFixture(path, spec));
        MeasureOptions options;
        options.params.sample = kSampleAll;
        const MeasuredModel m = measure(path.toStdString(), options);
        const auto& tensors = m.measurement.tensors;
        QCOMPARE(tensors[0].nonFinite, std::uint64_t(2));
        QCOMPARE(tensors[0].n, std::uint64_t(4094));
        QVERIFY(tensors[0].hasTheta() && std::isfinite(*tensors[0].theta));
        QCOMPARE(tensors[0].spectrumNonFinite, std::uint64_t(2));
        QVERIFY(tensors[1].nonFinite > 0); // an infinite scale times zero quants is NaN, else ±∞
        QVERIFY(tensors[1].hasTheta() && std::isfinite(*tensors[1].theta));
        QCOMPARE(tensors[2].nonFinite, std::uint64_t(0));
        QVERIFY(std::isfinite(m.measurement.model.thetaMean));
        const std::string markdown = measurementsMarkdown({m});
        QVERIFY(markdown.find("Non-finite values") != std::string::npos);
        QVERIFY(markdown.find("`blk.0.ffn_up.weight` (2)") != std::string::npos);
    }

    void cacheServesOnlyUnchangedFiles() {
        const QString cacheFolder = m_dir.filePath(QStringLiteral("cache"));
        const MeasurementCache cache(cacheFolder.toStdString());
        const QString path = m_dir.filePath(QStringLiteral("cached.gguf"));
        GgufWriteSpec spec;
        spec.tensors.push_back(patternTensor("blk.0.attn_q.weight", TensorType::F32, {32, 32}, 1));
        spec.tensors.push_back(patternTensor("blk.0.attn_k.weight", TensorType::F16, {32, 32}, 2));
        QVERIFY(writeFixture(path, spec));
        MeasuredModel m = measure(path.toStdString());
        QVERIFY(cache.store(m));
        MeasuredModel served;
        served.model = GgufModel::open(path.toStdString());
        served.anatomy = analyzeAnatomy(*served.model);
        QVERIFY(cache.load(served, ZParams{}));
        QVERIFY(served.measurement.fromCache);
        QCOMPARE(served.measurement.model.thetaMean, m.measurement.model.thetaMean);
        QCOMPARE(*served.measurement.tensors[1].theta, *m.measurement.tensors[1].theta);
        QCOMPARE(served.measurement.tensors[0].levelEnergies, m.measurement.tensors[0].levelEnergies);
        // Other parameters: another entry.
        ZParams other;
        other.sample = 500;
        QVERIFY(!cache.load(served, other));
        // A rewritten file (other weights, same size and header) is not served. The models
        // are closed first: the writer refuses to overwrite a file that is open.
        const double before = m.measurement.model.thetaMean;
        m = {};
        served = {};
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        spec.tensors[0] = patternTensor("blk.0.attn_q.weight", TensorType::F32, {32, 32}, 9);
        QVERIFY(writeFixture(path, spec));
        MeasuredModel changed;
        changed.model = GgufModel::open(path.toStdString());
        changed.anatomy = analyzeAnatomy(*changed.model);
        QVERIFY(!cache.load(changed, ZParams{}));
        QVERIFY(measure(path.toStdString()).measurement.model.thetaMean != before); // stale would be wrong
        // A damaged entry is ignored, not trusted.
        QVERIFY(cache.store(measure(path.toStdString())));
        const std::string entry =
            cacheFolder.toStdString() + "/" + cache.keyFor(*changed.model, ZParams{}) + ".json";
        std::ofstream(entry, std::ios::trunc) << "{ not json";
        QVERIFY(!cache.load(changed, ZParams{}));
    }

    // The cache-else-measure workflow the command line and the window share.
    void measureWithCacheMeasuresThenServes() {
        const QString cacheFolder = m_dir.filePath(QStringLiteral("workflow-cache"));
        const MeasurementCache cache(cacheFolder.toStdString());
        const QString path = m_dir.filePath(QStringLiteral("workflow.gguf"));
        GgufWriteSpec spec;
        spec.tensors.push_back(patternTensor("blk.0.attn_q.weight", TensorType::F32, {32, 32}, 3));
        spec.tensors.push_back(patternTensor("blk.0.ffn_up.weight", TensorType::F16, {32, 16}, 4));
        QVERIFY(writeFixture(path, spec));
        auto fresh = [&] {
            MeasuredModel m;
            m.model = GgufModel::open(path.toStdString());
            m.anatomy = analyzeAnatomy(*m.model);
            return m;
        };
        std::atomic<int> perTensor = 0;
        MeasureOptions options;
        options.onTensor = [&](std::size_t, const ZResult&) { ++perTensor; };

        MeasuredModel first = fresh();
        const CachedMeasurement measured = measureWithCache(first, options, &cache);
        QVERIFY(measured.result.isOk());
        QVERIFY(measured.cacheWarning.empty() && measured.storeError.empty());
        QVERIFY(!first.measurement.fromCache);
        QCOMPARE(perTensor.load(), 2);

        MeasuredModel second = fresh();
        QVERIFY(measureWithCache(second, options, &cache).result.isOk());
        QVERIFY(second.measurement.fromCache);
        QCOMPARE(perTensor.load(), 2); // served whole: no per-tensor results
        QCOMPARE(second.measurement.model.thetaMean, first.measurement.model.thetaMean);

        MeasuredModel uncached = fresh();
        QVERIFY(measureWithCache(uncached, options, nullptr).result.isOk());
        QVERIFY(!uncached.measurement.fromCache);
        QCOMPARE(perTensor.load(), 4);

        // A damaged entry: said, measured afresh, stored again.
        std::ofstream(cacheFolder.toStdString() + "/" + cache.keyFor(*first.model, ZParams{}) + ".json",
                      std::ios::trunc)
            << "{ not json";
        MeasuredModel third = fresh();
        const CachedMeasurement again = measureWithCache(third, options, &cache);
        QVERIFY(again.result.isOk());
        QVERIFY(!again.cacheWarning.empty());
        QVERIFY(!third.measurement.fromCache);
        MeasuredModel fourth = fresh();
        QVERIFY(measureWithCache(fourth, options, &cache).result.isOk());
        QVERIFY(fourth.measurement.fromCache);

        // Stopped before it starts: cancelled, nothing stored.
        const MeasurementCache empty(m_dir.filePath(QStringLiteral("workflow-empty")).toStdString());
        StopToken stop;
        stop.requestStop();
        MeasuredModel stopped = fresh();
        QCOMPARE(measureWithCache(stopped, options, &empty, {}, &stop).result.status,
                 JobResult::Status::Cancelled);
        MeasuredModel probe = fresh();
        QVERIFY(!empty.load(probe, ZParams{}));
    }

    void jsonRoundTrip() {
        ZResult z;
        z.n = 10;
        z.N = 20;
        z.H = 0.5;
        z.K = 1.0;
        z.C = 2.0;
        scoreResult(z);
        z.beta = 0.25;
        z.levelEnergies = {1.0, 0.5};
        z.nonFinite = 3;
        const ZResult back = zResultFromJson(zResultToJson(z));
        QCOMPARE(*back.theta, *z.theta);
        QCOMPARE(*back.beta, 0.25);
        QCOMPARE(back.levelEnergies, z.levelEnergies);
        QCOMPARE(back.nonFinite, std::uint64_t(3));
        ZResult constant;
        constant.constant = true;
        constant.n = constant.N = 8;
        const ZResult c = zResultFromJson(zResultToJson(constant));
        QVERIFY(c.constant && !c.theta && !c.H);
    }
};

QTEST_APPLESS_MAIN(TestMeasure)
#include "tst_measure.moc"
