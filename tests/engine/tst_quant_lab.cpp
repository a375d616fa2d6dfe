// The quantization lab's engine: the error report against errors computed here from the
// writers' bytes (with and without the family's importance matrix; only the types whose block
// fits the rows; only the tensors llama-quantize quantizes), the knapsack against every
// combination of small random problems, and on stories260K a budget mix against every mix of its
// role groups, the budget never exceeded by what organ quantize writes.
#include "gguf/gguf_model.h"
#include "measure/quant_error.h"
#include "measure/zmeasure.h"
#include "quant/dequant.h"
#include "quant/mix_budget.h"
#include "quant/quant_mix.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "quant/quantized_source.h"
#include "shared_models.h"
#include "support/errors.h"
#include "vitals/budget_mix.h"
#include "vitals/quant_pareto.h"
#include "vitals/quant_sensitivity.h"
#include "vitals/tokenizer.h"
#include "vitals/vitals_report.h"

#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <random>

using namespace organ;
using namespace organ::testing;

namespace {

std::vector<float> valuesOf(const GgufModel& model, const TensorInfo& t) {
    std::vector<float> values(static_cast<std::size_t>(t.elements));
    dequantizeRange(t.type, model.tensorData(t), 0, values.size(), values.data());
    return values;
}

const TypeError* errorOf(const TensorErrors& t, TensorType type) {
    for (const TypeError& e : t.types) {
        if (e.type == type) {
            return &e;
        }
    }
    return nullptr;
}

// The least cost of one option per group within the budget, by trying every combination.
double enumeratedBest(const std::vector<std::vector<BudgetOption>>& groups, std::uint64_t budget) {
    double best = std::numeric_limits<double>::infinity();
    std::vector<std::size_t> at(groups.size(), 0);
    while (true) {
        std::uint64_t bytes = 0;
        double cost = 0;
        for (std::size_t g = 0; g < groups.size(); ++g) {
            bytes += groups[g][at[g]].bytes;
            cost += groups[g][at[g]].cost;
        }
        if (bytes <= budget) {
            best = std::min(best, cost);
        }
        std::size_t g = 0;
        while (g < groups.size() && ++at[g] == groups[g].size()) {
            at[g++] = 0;
        }
        if (g == groups.size()) {
            return best;
        }
    }
}

} // namespace

class TestQuantLab : public QObject {
    Q_OBJECT

private slots:
    // Every quantizable tensor of the family base in every default type: the relative RMS error,
    // cosine and θ that the writers' bytes give when computed here.
    void reportAgainstComputed_data() {
        QTest::addColumn<bool>("withMatrix");
        QTest::newRow("without a matrix") << false;
        QTest::newRow("with the family's matrix") << true;
    }
    void reportAgainstComputed() {
        QFETCH(bool, withMatrix);
        const QString path = familyModel("family-base-f16.gguf");
        ORGAN_REQUIRE_SHARED(path);
        ORGAN_REQUIRE_SHARED(familyImatrix());
        const auto opened = GgufModel::open(path.toStdString());
        const GgufModel& model = *opened;
        const ImatrixData matrix = readImatrix(familyImatrix().toStdString());
        const ImatrixData* importance = withMatrix ? &matrix : nullptr;
        const std::vector<TensorType> types{TensorType::Q4_K, TensorType::IQ4_XS, TensorType::F16};
        const auto report =
            measureQuantErrors(model, types, importance, familyImatrix().toStdString(), {}, nullptr, 2);
        QVERIFY(report);
        // 6 layers of 7 matrices, token_embd and output (llama-quantize leaves the 13 norms alone).
        QCOMPARE(report->tensors.size(), std::size_t(44));
        for (const TensorErrors& t : report->tensors) {
            QVERIFY2(t.name.find("norm") == std::string::npos, t.name.c_str());
        }
        for (const char* name : {"blk.2.attn_v.weight", "blk.5.ffn_down.weight", "output.weight"}) {
            const auto it = std::find_if(report->tensors.begin(), report->tensors.end(),
                                         [&](const TensorErrors& t) { return t.name == name; });
            QVERIFY(it != report->tensors.end());
            const TensorInfo& info = *model.findTensor(name);
            const std::vector<float> x = valuesOf(model, info);
            const ImatrixEntry* entry = matrix.find(name);
            const std::vector<float> w =
                withMatrix && entry != nullptr ? entry->means() : std::vector<float>();
            QCOMPARE(it->weighted, !w.empty());
            for (TensorType type : types) {
                const TypeError* e = errorOf(*it, type);
                QVERIFY(e != nullptr);
                std::vector<std::byte> bytes(static_cast<std::size_t>(storedBytes(type, info.elements)));
                quantizeRows(type, x.data(), info.elements / info.ne[0], info.ne[0],
                             !w.empty() && takesImportance(type) ? w.data() : nullptr, bytes.data());
                std::vector<float> q(x.size());
                dequantizeRange(type, bytes, 0, q.size(), q.data());
                long double dd = 0, xx = 0, qq = 0, xq = 0, wdd = 0, wxx = 0;
                for (std::size_t i = 0; i < x.size(); ++i) {
                    const long double d = (long double)q[i] - x[i];
                    dd += d * d;
                    xx += (long double)x[i] * x[i];
                    qq += (long double)q[i] * q[i];
                    xq += (long double)x[i] * q[i];
                    if (!w.empty()) {
                        wdd += w[i % info.ne[0]] * d * d;
                        wxx += w[i % info.ne[0]] * (long double)x[i] * x[i];
                    }
                }
                QVERIFY(std::abs(e->relativeRms - double(std::sqrt(dd / xx))) < 1e-9);
                QVERIFY(std::abs(e->cosine - double(xq / std::sqrt(xx * qq))) < 1e-9);
                QCOMPARE(e->weightedRelativeRms.has_value(), !w.empty());
                if (!w.empty()) {
                    QVERIFY(std::abs(*e->weightedRelativeRms - double(std::sqrt(wdd / wxx))) < 1e-9);
                }
                QCOMPARE(e->theta, measureTensor(type, bytes, info.elements, ZParams{})->theta);
                QCOMPARE(e->bytes, std::uint64_t(bytes.size()));
            }
            // The model is F16: in F16 nothing is lost and θ is as it was.
            QCOMPARE(errorOf(*it, TensorType::F16)->relativeRms, 0.0);
            QCOMPARE(errorOf(*it, TensorType::F16)->theta, it->thetaBefore);
        }
    }

    // stories260K's rows of 64 fit Q8_0 but no K-quant (blocks of 256); its ffn_down's 172 fit
    // nothing but F16: a type is tried only where its block fits.
    void reportOnlyTypesThatFit() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto opened = GgufModel::open(path.toStdString());
        const GgufModel& model = *opened;
        const std::vector<TensorType> types{TensorType::Q4_K, TensorType::Q8_0, TensorType::F16};
        const auto report = measureQuantErrors(model, types, nullptr, {}, {}, nullptr, 1);
        QVERIFY(report);
        for (const TensorErrors& t : report->tensors) {
            QVERIFY(errorOf(t, TensorType::Q4_K) == nullptr);
            QCOMPARE(errorOf(t, TensorType::Q8_0) != nullptr, t.rowLength % 32 == 0);
            QVERIFY(errorOf(t, TensorType::F16) != nullptr);
            QVERIFY(errorOf(t, TensorType::F16)->relativeRms < 1e-3);
        }
        QVERIFY_THROWS_EXCEPTION(
            FormatError,
            measureQuantErrors(model, std::vector<TensorType>{TensorType::IQ2_XXS}, nullptr, {}));
    }

    // The knapsack against every combination: random problems of 6 groups of up to 5 options, at
    // budgets from the least to the most they can take.
    void knapsackAgainstEnumeration() {
        std::mt19937 random(29);
        for (int problem = 0; problem < 40; ++problem) {
            std::vector<std::vector<BudgetOption>> groups(6);
            std::uint64_t least = 0;
            std::uint64_t most = 0;
            for (auto& options : groups) {
                options.resize(1 + random() % 5);
                std::uint64_t small = UINT64_MAX;
                std::uint64_t large = 0;
                for (BudgetOption& o : options) {
                    o.bytes = 34 * (1 + random() % 40) + (problem % 2 == 0 ? 0 : random() % 7);
                    o.cost = std::uniform_real_distribution<double>(0, 1)(random);
                    small = std::min(small, o.bytes);
                    large = std::max(large, o.bytes);
                }
                least += small;
                most += large;
            }
            QVERIFY(!solveBudget(groups, least - 1));
            for (std::uint64_t budget = least; budget <= most; budget += 1 + (most - least) / 25) {
                const auto solution = solveBudget(groups, budget);
                QVERIFY(solution);
                QVERIFY(solution->exact);
                QVERIFY(solution->bytes <= budget);
                std::uint64_t bytes = 0;
                double cost = 0;
                for (std::size_t g = 0; g < groups.size(); ++g) {
                    bytes += groups[g][solution->choice[g]].bytes;
                    cost += groups[g][solution->choice[g]].cost;
                }
                QCOMPARE(bytes, solution->bytes);
                QVERIFY(std::abs(cost - solution->cost) < 1e-12);
                QVERIFY2(std::abs(solution->cost - enumeratedBest(groups, budget)) < 1e-12,
                         qPrintable(QStringLiteral("problem %1, budget %2").arg(problem).arg(budget)));
            }
        }
    }

    // A table too large to hold exactly is solved on coarser sizes: still within the budget.
    void knapsackCoarseStaysWithinBudget() {
        std::vector<std::vector<BudgetOption>> groups(64);
        std::mt19937 random(7);
        for (auto& options : groups) {
            for (int o = 0; o < 4; ++o) {
                options.push_back({1'000'003 + random() % 10'000'000, double(random() % 1000)});
            }
        }
        const std::uint64_t budget = 64ull * 6'000'000;
        const auto solution = solveBudget(groups, budget);
        QVERIFY(solution);
        QVERIFY(!solution->exact);
        QVERIFY(solution->unit > 1);
        QVERIFY(solution->bytes <= budget);
    }

    // A run from the hidden states entering a layer gives the logits of the whole run, for every layer.
    void resumedRunIsTheWholeRun() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const Transformer transformer(GgufModel::open(path.toStdString()));
        const std::vector<std::int32_t> tokens{1, 403, 407, 261, 378, 429, 300, 267, 299, 280};
        std::vector<Eigen::MatrixXf> hidden;
        const Eigen::MatrixXf whole = TransformerSession(transformer).run(tokens, nullptr, &hidden);
        QCOMPARE(hidden.size(), std::size_t(transformer.shape().blocks + 1));
        for (std::uint32_t layer = 0; layer <= transformer.shape().blocks; ++layer) {
            QVERIFY2(transformer.logitsFrom(layer, hidden[layer]) == whole,
                     qPrintable(QString::number(layer)));
        }
        QVERIFY_THROWS_EXCEPTION(FormatError,
                                 transformer.logitsFrom(transformer.shape().blocks + 1, hidden[0]));
    }

    // The lab keeps every scored position's logits (the model's, and a group's beside them): a
    // text whose two sets would pass the activation budget is refused before anything runs, though
    // vital signs would score it a chunk at a time.
    void textsWhoseLogitsDoNotFitAreRefused() {
        const QString path = sharedModel(QStringLiteral("zoo/tiny-gpt2-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto model = GgufModel::open(path.toStdString());
        const Tokenizer tokenizer = Tokenizer::fromWeights(ModelWeights::ofModel(model));
        SensitivityRequest request;
        request.chunk = 64;
        request.types = {TensorType::Q4_0};
        while (tokenizer.encode(request.text).size() / 64 * 31 * 2 * 50257 * sizeof(float) <=
               kVitalsActivationFloor) {
            request.text += "Once upon a time, a little fox found a red ball in the tall grass. ";
        }
        // Asked to stop from the start: refused from the numbers, before any run could be cancelled.
        StopToken stop;
        stop.requestStop();
        try {
            measureSensitivity(model, nullptr, {}, request, {}, &stop);
            QFAIL("not refused");
        } catch (const FormatError& error) {
            QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("would hold")), error.what());
        }
        VitalsRequest vitals;
        vitals.text = request.text;
        vitals.chunk = 64;
        vitals.continuation = 0;
        vitals.layerImportance = false;
        QVERIFY(takeVitals(ModelWeights::ofModel(model), {}, vitals));
    }

    // The KL of a group measured from its first changed layer on is the KL of the whole planned
    // model run from the tokens, computed here: the token embedding (the run starts from the
    // tokens), a layer's tensor (from that layer) and the output (only the output again).
    void sensitivityAgainstWholeRuns() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto model = GgufModel::open(path.toStdString());
        SensitivityRequest request;
        request.types = {TensorType::Q4_0};
        request.threads = 2;
        const auto sensitivity = measureSensitivity(model, nullptr, {}, request);
        QVERIFY(sensitivity);
        const ModelWeights original = ModelWeights::ofModel(model);
        const std::vector<std::int32_t> tokens =
            vitalsTokens(original, Tokenizer::fromWeights(original), VitalsRequest{});
        const Eigen::MatrixXf expected = Transformer(original).logits(tokens);
        for (const char* name : {"token_embd.weight", "blk.3.attn_v.weight", "output.weight"}) {
            const auto g = std::find_if(sensitivity->groups.begin(), sensitivity->groups.end(),
                                        [&](const GroupSensitivity& x) { return x.name == name; });
            QVERIFY(g != sensitivity->groups.end() && g->types.size() == 1);
            ModelWeights planned = original;
            planned.replaceTensor(name, TensorType::Q4_0,
                                  quantizedSource(*model, *model->findTensor(name), TensorType::Q4_0));
            const Divergence d = divergenceOf(expected, Transformer(planned).logits(tokens));
            QVERIFY2(d.meanKl > 0 && std::abs(g->types[0].klMean - d.meanKl) <= 1e-12 * d.meanKl,
                     qPrintable(QStringLiteral("%1: %2, not %3")
                                    .arg(QLatin1String(name))
                                    .arg(g->types[0].klMean)
                                    .arg(d.meanKl)));
        }
    }

    // On stories260K, by role (7 groups with three types, ffn_down with F16 only): the mix chosen
    // at each budget is the best of all 3^7 mixes, and organ quantize writes it within the budget.
    void budgetMixOnAModel() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto model = GgufModel::open(path.toStdString());
        SensitivityRequest request;
        request.types = {TensorType::Q4_0, TensorType::Q8_0, TensorType::F16};
        request.grouping = QuantGrouping::Role;
        request.threads = 2;
        const auto sensitivity = measureSensitivity(model, nullptr, {}, request);
        QVERIFY(sensitivity);
        QCOMPARE(sensitivity->groups.size(), std::size_t(9)); // 7 roles, token_embd, output
        std::vector<std::vector<BudgetOption>> options;
        for (const GroupSensitivity& g : sensitivity->groups) {
            QVERIFY(!g.types.empty());
            options.emplace_back();
            for (const TypeSensitivity& t : g.types) {
                QVERIFY(t.klMean >= 0 && std::isfinite(t.klMean));
                options.back().push_back({t.bytes, t.klMean});
            }
            const bool fitsQ4 = model->findTensor(g.tensors.front())->ne[0] % 32 == 0;
            QCOMPARE(g.types.size(), fitsQ4 ? std::size_t(3) : std::size_t(1));
        }
        const ModelSize whole = modelSize(*model);
        std::uint64_t fixed = whole.tensorBytes;
        for (const GroupSensitivity& g : sensitivity->groups) {
            fixed -= g.bytes;
        }
        QTemporaryDir dir;
        for (double bits : {9.0, 12.0, 16.0, 20.0, 26.0}) {
            const std::uint64_t budget = budgetBytesOf(whole, bits);
            const BudgetMix mix = chooseBudgetMix(*model, *sensitivity, budget);
            QVERIFY(mix.exact);
            QVERIFY(mix.size.tensorBytes <= budget);
            QVERIFY(std::abs(mix.predictedKl - enumeratedBest(options, budget - fixed)) < 1e-12);
            const QuantizeRecipe recipe = budgetRecipe(mix, {});
            const std::string out = dir.filePath(QStringLiteral("mix.gguf")).toStdString();
            QVERIFY(quantizeModel(*model, recipe, nullptr, out).written.isOk());
            const auto written = GgufModel::open(out);
            QCOMPARE(modelSize(*written).tensorBytes, mix.size.tensorBytes);
            for (const BudgetMix::Choice& c : mix.choices) {
                for (const std::string& name : c.tensors) {
                    QCOMPARE(written->findTensor(name)->type, c.type);
                }
            }
        }
        QVERIFY_THROWS_EXCEPTION(FormatError,
                                 chooseBudgetMix(*model, *sensitivity, budgetBytesOf(whole, 4.0)));
    }

    // A mix measured in memory (measureMixDivergence) is the file organ quantize writes, run and
    // compared with the model: llama-quantize's Q4_K_M with the family's matrix, and a budget mix.
    // A sweep with the model's own run kept gives the same points without running it again.
    void mixInMemoryIsTheWrittenFile() {
        const QString path = familyModel("family-base-f16.gguf");
        ORGAN_REQUIRE_SHARED(path);
        ORGAN_REQUIRE_SHARED(familyImatrix());
        const auto model = GgufModel::open(path.toStdString());
        const ImatrixData matrix = readImatrix(familyImatrix().toStdString());
        ParetoRequest request;
        request.sensitivity.grouping = QuantGrouping::Role;
        request.sensitivity.types = {TensorType::Q3_K, TensorType::Q4_K, TensorType::Q6_K};
        request.sensitivity.threads = 2;
        request.references = {QuantFileType::Q4_K_M};
        request.budgets = 4;
        std::shared_ptr<const SensitivityReference> reference;
        const auto first =
            measurePareto(model, &matrix, familyImatrix().toStdString(), request, {}, nullptr, &reference);
        QVERIFY(first && reference);
        QVERIFY(first->sensitivity.referenceSeconds > 0);
        QCOMPARE(first->references.size(), std::size_t(1));
        QCOMPARE(first->mixes.size(), std::size_t(5)); // the sweep, and ours at Q4_K_M's size
        const ParetoPoint& q4 = first->references.front();
        const auto ours = std::find_if(first->mixes.begin(), first->mixes.end(),
                                       [](const ParetoPoint& p) { return p.measured.has_value(); });
        QVERIFY(ours != first->mixes.end() && ours->size.tensorBytes <= q4.size.tensorBytes);
        QTemporaryDir dir;
        const ModelWeights original = ModelWeights::ofModel(model);
        VitalsRequest vitals;
        vitals.continuation = 0;
        vitals.layerImportance = false;
        for (const ParetoPoint* point : {&q4, &*ours}) {
            const std::string out = dir.filePath(QStringLiteral("mix.gguf")).toStdString();
            QFile::remove(QString::fromStdString(out));
            QVERIFY(quantizeModel(*model, point->recipe, &matrix, out).written.isOk());
            const auto written = GgufModel::open(out);
            QCOMPARE(modelSize(*written).tensorBytes, point->size.tensorBytes);
            const auto taken = takeVitals(ModelWeights::ofModel(written), {&original}, vitals);
            QVERIFY(taken && point->measured);
            const double kl = taken->parents.front().divergence.meanKl;
            QVERIFY2(kl > 0 && std::abs(point->measured->klMean - kl) <= 1e-9 * kl,
                     qPrintable(QStringLiteral("%1: %2, not %3")
                                    .arg(QString::fromStdString(point->label))
                                    .arg(point->measured->klMean)
                                    .arg(kl)));
        }
        // By role, Q4_K_M gives attn_v Q6_K in layers 2 and 5 and Q4_K elsewhere: no group's KL
        // predicts that; each budget mix's is.
        QVERIFY(!q4.predictedKl.has_value());
        QVERIFY(ours->predictedKl.has_value());
        const auto again =
            measurePareto(model, &matrix, familyImatrix().toStdString(), request, {}, nullptr, &reference);
        QVERIFY(again);
        QCOMPARE(again->sensitivity.referenceSeconds, 0.0);
        QCOMPARE(again->references.front().measured->klMean, q4.measured->klMean);
        for (std::size_t i = 0; i < first->mixes.size(); ++i) {
            QCOMPARE(again->mixes[i].predictedKl, first->mixes[i].predictedKl);
        }
    }
};

QTEST_APPLESS_MAIN(TestQuantLab)
#include "tst_quant_lab.moc"
