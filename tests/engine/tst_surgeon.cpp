// The auto-surgeon on specimens whose best plans can be enumerated: the greedy and beam prune
// searches against exhaustive search, the reuse of a candidate's first layers against a run from
// the tokens, the evolution strategy's seed and elitism, the organ search finding the one organ
// that is known to be better, budgets, cancel, and plans that check and assemble.
#include "fixtures.h"
#include "gguf/gguf_model.h"
#include "gguf/specimen.h"
#include "graft/assembly.h"
#include "shared_models.h"
#include "support/errors.h"
#include "support/text_safety.h"
#include "surgeon/surgeon.h"
#include "vitals/tokenizer.h"

#include <QTemporaryDir>
#include <QTest>

using namespace organ;
using namespace organ::testing;

namespace {

constexpr const char* kText = "Once upon a time there was a little cat. The cat liked to play in the sun.\n"
                              "One day the cat saw a big dog. The dog was kind and they played together.\n"
                              "At night the cat went home and slept by the fire. It was a happy day.\n";

std::string canonical(const GraftPlan& plan) {
    return dumpJson(graftPlanToJson(plan));
}

GraftPlan removing(const std::string& base, std::vector<std::uint32_t> blocks) {
    GraftPlan plan;
    plan.base = base;
    std::sort(blocks.rbegin(), blocks.rend());
    for (std::uint32_t b : blocks) {
        GraftOperation op;
        op.kind = GraftOperation::Kind::RemoveLayer;
        op.toLayer = b;
        plan.operations.push_back(op);
    }
    return plan;
}

} // namespace

class TestSurgeon : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::string m_base;  // specimen, seed 1
    std::string m_other; // seed 2
    std::string m_third; // seed 3
    std::string path(const char* name) const { return m_dir.filePath(QString::fromUtf8(name)).toStdString(); }

    SurgeonModels models(const std::string& recipient, std::vector<std::string> donors = {}) const {
        SurgeonModels m;
        m.recipient = {recipient, GgufModel::open(recipient)};
        for (const auto& d : donors) {
            m.donors.emplace_back(d, GgufModel::open(d));
        }
        return m;
    }
    SurgeonRequest request(SurgeonGoal goal) const {
        SurgeonRequest r;
        r.goal = goal;
        r.text = kText;
        r.threads = 1;
        return r;
    }
    // An evaluator of plans on kText from the tokens (no anchor): the exhaustive searches' judge.
    CandidateEvaluator judge(NamedModels named) const {
        const ModelWeights weights = ModelWeights::ofModel(named.front().second);
        VitalsRequest text;
        text.text = kText;
        const std::vector<std::int32_t> tokens = vitalsTokens(weights, Tokenizer::fromWeights(weights), text);
        return CandidateEvaluator(GraftModels::fromModels(std::move(named)),
                                  ScoringText{tokens, 0, std::nullopt, std::nullopt}, 1);
    }
    // The best of every set of `n` removed blocks, scored each from the tokens.
    std::pair<double, std::string> exhaustivePrune(std::uint32_t n) const {
        CandidateEvaluator evaluator = judge({{"base", GgufModel::open(m_base)}});
        std::pair<double, std::string> best{std::numeric_limits<double>::infinity(), {}};
        for (std::uint32_t mask = 0; mask < 16; ++mask) {
            std::vector<std::uint32_t> blocks;
            for (std::uint32_t b = 0; b < 4; ++b) {
                if (mask & (1u << b)) {
                    blocks.push_back(b);
                }
            }
            if (blocks.size() != n) {
                continue;
            }
            const GraftPlan plan = removing(m_base, blocks);
            const double objective = evaluator.score(plan)->objective;
            if (objective < best.first) {
                best = {objective, canonical(plan)};
            }
        }
        return best;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_base = path("base.gguf");
        m_other = path("other.gguf");
        m_third = path("third.gguf");
        SpecimenShape shape;
        shape.blocks = 4;
        QVERIFY(writeSpecimen(m_base, 1, shape).isOk());
        QVERIFY(writeSpecimen(m_other, 2, shape).isOk());
        QVERIFY(writeSpecimen(m_third, 3, shape).isOk());
    }

    // n = 1: the greedy search scores every block's removal, so it is the exhaustive search; each
    // candidate ran from the block it removes, on the recipient's states, and scores as a run
    // from the tokens does.
    void greedyPruneOfOneIsExhaustive() {
        std::vector<std::pair<std::size_t, std::string>> told; // what the window would have drawn
        const SurgeonRecord record = runSurgeon(
            models(m_base), request(SurgeonGoal::Prune), {}, nullptr,
            [&](const SurgeonCandidate& c, std::size_t index) { told.emplace_back(index, c.summary); });
        QCOMPARE(int(record.end), int(SurgeonRecord::End::Done));
        // Each candidate told once, in the record's order, as it was scored.
        QCOMPARE(told.size(), record.candidates.size());
        for (std::size_t i = 0; i < told.size(); ++i) {
            QCOMPARE(told[i].first, i);
            QCOMPARE(told[i].second, record.candidates[i].summary);
        }
        QVERIFY(record.best);
        const auto [objective, plan] = exhaustivePrune(1);
        QCOMPARE(canonical(record.candidates[*record.best].plan), plan);
        QVERIFY(std::abs(record.candidates[*record.best].score.objective - objective) < 1e-4 * objective);
        // Every candidate scored with reuse agrees with the judge's run from the tokens.
        CandidateEvaluator evaluator = judge({{"base", GgufModel::open(m_base)}});
        for (const SurgeonCandidate& c : record.candidates) {
            QVERIFY2(std::abs(evaluator.score(c.plan)->objective - c.score.objective) <
                         1e-4 * c.score.objective,
                     c.summary.c_str());
        }
        // Greedy scored 4 removals after the recipient and two baselines (which greedy met again).
        QCOMPARE(record.runs, std::uint64_t(1 + 2 + 4 - 2));
        QVERIFY(record.layersRun < record.runs * 4);
        QCOMPARE(record.candidates[*record.best].score.layers, 3u);
    }

    // n = 2 with a beam as wide as the blocks: every pair is scored, so the beam search finds the
    // exhaustive search's best.
    void widePruneBeamIsExhaustive() {
        SurgeonRequest r = request(SurgeonGoal::Prune);
        r.prune = 2;
        r.beam = 4;
        const SurgeonRecord record = runSurgeon(models(m_base), r);
        QVERIFY(record.best);
        const auto [objective, plan] = exhaustivePrune(2);
        QCOMPARE(canonical(record.candidates[*record.best].plan), plan);
        QVERIFY(std::abs(record.candidates[*record.best].score.objective - objective) < 1e-4 * objective);
        QVERIFY(record.cacheHits > 0); // pairs reached from both of their blocks
    }

    void firstChangedLayerOfPlans() {
        const GraftModels graft =
            GraftModels::fromModels({{"base", GgufModel::open(m_base)}, {"other", GgufModel::open(m_other)}});
        auto layout = [&](const GraftPlan& plan) { return checkGraft(plan, graft).layout; };
        GraftPlan recipient;
        recipient.base = m_base;
        recipient.donors = {{"other", m_other}};
        const ChimeraLayout own = layout(recipient);
        QCOMPARE(firstChangedLayer(own, own), std::optional<std::uint32_t>(4));
        GraftPlan pruned = recipient;
        pruned.operations = removing(m_base, {2}).operations;
        QCOMPARE(firstChangedLayer(own, layout(pruned)), std::optional<std::uint32_t>(2));
        GraftPlan organ = recipient;
        GraftOperation replace;
        replace.kind = GraftOperation::Kind::Replace;
        replace.donor = "other";
        replace.select = organsOfLayers(1, 1);
        organ.operations = {replace};
        QCOMPARE(firstChangedLayer(own, layout(organ)), std::optional<std::uint32_t>(1));
        replace.select = TensorSelector{{"output.weight"}, {}, {}, {}, {}};
        organ.operations = {replace};
        QCOMPARE(firstChangedLayer(own, layout(organ)), std::optional<std::uint32_t>(4));
        replace.select = TensorSelector{{"token_embd.weight"}, {}, {}, {}, {}};
        organ.operations = {replace};
        QCOMPARE(firstChangedLayer(own, layout(organ)), std::optional<std::uint32_t>());
    }

    void cacheAnswersAPlanScoredBefore() {
        CandidateEvaluator evaluator = judge({{"base", GgufModel::open(m_base)}});
        const double first = evaluator.score(removing(m_base, {1}))->objective;
        QCOMPARE(evaluator.score(removing(m_base, {1}))->objective, first);
        QCOMPARE(evaluator.runs(), std::uint64_t(1));
        QCOMPARE(evaluator.cacheHits(), std::uint64_t(1));
    }

    // The same seed gives the same plan; the evolution never ends worse than where it started
    // (the best uniform weight); another seed draws other candidates.
    void evolutionIsSeededAndElitist() {
        SurgeonRequest r = request(SurgeonGoal::Merge);
        r.generations = 2;
        r.offspring = 3;
        r.controlPoints = 2;
        r.seed = 7;
        const SurgeonRecord a = runSurgeon(models(m_base, {m_other, m_third}), r);
        const SurgeonRecord b = runSurgeon(models(m_base, {m_other, m_third}), r);
        QVERIFY(a.best && b.best);
        QCOMPARE(canonical(a.candidates[*a.best].plan), canonical(b.candidates[*b.best].plan));
        QCOMPARE(a.candidates.size(), b.candidates.size());
        for (std::size_t i = 0; i < a.candidates.size(); ++i) {
            QCOMPARE(canonical(a.candidates[i].plan), canonical(b.candidates[i].plan));
        }
        double uniform = std::numeric_limits<double>::infinity();
        std::size_t evolved = 0;
        for (const SurgeonCandidate& c : a.candidates) {
            if (c.stage == "uniform") {
                uniform = std::min(uniform, c.score.objective);
            }
            evolved += c.stage == "evolution" ? 1 : 0;
        }
        QCOMPARE(evolved, std::size_t(6));
        QVERIFY(a.candidates[*a.best].score.objective <= uniform);
        r.seed = 8;
        const SurgeonRecord c = runSurgeon(models(m_base, {m_other, m_third}), r);
        QVERIFY(canonical(c.candidates.back().plan) != canonical(a.candidates.back().plan));
        // The merge plan of the best names both donors, by system, and checks.
        const GraftPlan& best = a.candidates[*a.best].plan;
        QCOMPARE(best.operations.size(), std::size_t(1));
        QCOMPARE(best.operations[0].merge.models.size(), std::size_t(2));
        const GraftModels graft = GraftModels::open(best);
        QVERIFY(!checkGraft(best, graft).hasErrors());
    }

    // The base with its layer-2 organs taken from another model, healed toward the base with the
    // base and a third model as donors: coordinate descent takes the base's layer-2 organs and
    // nothing else (the others are the same or worse), and the KL to the base is 0.
    void organSearchFindsTheBetterOrgan() {
        const std::string damaged = path("damaged.gguf");
        const GraftPlan plan = replacePlan(QString::fromStdString(m_base), QString::fromStdString(m_third),
                                           organsOfLayers(2, 2));
        const GraftOutcome made = graftChimera(plan, GraftModels::open(plan), damaged);
        QVERIFY2(made.written.isOk(), made.written.message.c_str());
        SurgeonModels m = models(damaged, {m_base, m_other});
        m.reference.emplace(m_base, GgufModel::open(m_base));
        const SurgeonRecord record = runSurgeon(m, request(SurgeonGoal::Organs));
        QCOMPARE(int(record.objective), int(SurgeonObjective::Kl));
        QVERIFY(record.best);
        const SurgeonCandidate& best = record.candidates[*record.best];
        QVERIFY(record.candidates.front().score.objective > 1e-3);
        QVERIFY(best.score.objective < 1e-6);
        QCOMPARE(best.plan.operations.size(), std::size_t(1));
        const GraftOperation& op = best.plan.operations.front();
        QCOMPARE(*best.plan.donorPath(op.donor), m_base);
        QCOMPARE(op.select.system, std::optional<System>(System::Organ));
        QCOMPARE(op.select.firstLayer, std::optional<std::uint32_t>(2));
        QVERIFY(!checkGraft(best.plan, GraftModels::open(best.plan)).hasErrors());
    }

    // A budget of 3 runs: the recipient and the two baselines; the best baseline is chosen.
    void budgetKeepsTheBest() {
        SurgeonRequest r = request(SurgeonGoal::Prune);
        r.maxEvaluations = 3;
        const SurgeonRecord record = runSurgeon(models(m_base), r);
        QCOMPARE(int(record.end), int(SurgeonRecord::End::Budget));
        QCOMPARE(record.runs, std::uint64_t(3));
        QVERIFY(record.best);
        QVERIFY(record.candidates[*record.best].stage != "greedy");
    }

    // Stopped when the greedy search begins: the baselines were scored, the best of them is kept;
    // stopped before anything, there is no best and no candidate.
    void cancelKeepsTheBest() {
        StopToken stop;
        const SurgeonRecord record = runSurgeon(
            models(m_base), request(SurgeonGoal::Prune),
            [&](const Progress& p) {
                if (p.stage.starts_with("greedy")) {
                    stop.requestStop();
                }
            },
            &stop);
        QCOMPARE(int(record.end), int(SurgeonRecord::End::Cancelled));
        QVERIFY(record.best);
        for (const SurgeonCandidate& c : record.candidates) {
            QVERIFY(c.stage != "greedy"); // the baselines (one run when they agree), no more
        }
        StopToken early;
        early.requestStop();
        const SurgeonRecord none = runSurgeon(models(m_base), request(SurgeonGoal::Prune), {}, &early);
        QCOMPARE(int(none.end), int(SurgeonRecord::End::Cancelled));
        QVERIFY(!none.best);
        QVERIFY(none.candidates.empty());
    }

    // The chosen plan checks, assembles, and the chimera it writes has the blocks it says.
    void chosenPlanAssembles() {
        SurgeonRequest r = request(SurgeonGoal::Prune);
        r.output = path("pruned.gguf");
        const SurgeonRecord record = runSurgeon(models(m_base), r);
        QVERIFY(record.best);
        const GraftPlan& plan = record.candidates[*record.best].plan;
        const GraftModels graft = GraftModels::open(plan);
        const GraftOutcome made = graftChimera(plan, graft, r.output);
        QVERIFY2(made.written.isOk(), made.written.message.c_str());
        QVERIFY(!made.report.hasErrors());
        const auto chimera = GgufModel::open(r.output);
        QCOMPARE(chimera->find("llama.block_count")->asUInt(), std::optional<std::uint64_t>(3));
    }

    void constraintsRuleOutCandidates() {
        SurgeonRequest r = request(SurgeonGoal::Prune);
        r.constraints.maxBytes = 1; // no chimera is that small
        const SurgeonRecord record = runSurgeon(models(m_base), r);
        QVERIFY(!record.best);
        QVERIFY(!record.candidates.empty());
    }

    void badRequestsAreRefused_data() {
        QTest::addColumn<int>("goal");
        QTest::addColumn<int>("prune");
        QTest::addColumn<int>("donors");
        QTest::addColumn<QString>("message");
        QTest::newRow("prune 0") << int(SurgeonGoal::Prune) << 0 << 0 << QStringLiteral("removes 1 to 3");
        QTest::newRow("prune all") << int(SurgeonGoal::Prune) << 4 << 0 << QStringLiteral("removes 1 to 3");
        QTest::newRow("merge alone") << int(SurgeonGoal::Merge) << 1 << 0
                                     << QStringLiteral("at least one donor");
        QTest::newRow("organs alone")
            << int(SurgeonGoal::Organs) << 1 << 0 << QStringLiteral("at least one donor");
        QTest::newRow("own donor") << int(SurgeonGoal::Organs) << 1 << 1 << QStringLiteral("its own donor");
    }
    void badRequestsAreRefused() {
        QFETCH(int, goal);
        QFETCH(int, prune);
        QFETCH(int, donors);
        QFETCH(QString, message);
        SurgeonRequest r = request(SurgeonGoal(goal));
        r.prune = std::uint32_t(prune);
        try {
            runSurgeon(
                models(m_base, donors > 0 ? std::vector<std::string>{m_base} : std::vector<std::string>{}),
                r);
            QFAIL("no error");
        } catch (const FormatError& error) {
            QVERIFY2(QString::fromUtf8(error.what()).contains(message), error.what());
        }
    }

    // KL needs the reference's tokens to be the recipient's.
    void referenceOfAnotherVocabularyIsRefused() {
        const std::string other = path("vocabulary.gguf");
        SpecimenShape shape;
        shape.blocks = 2;
        shape.vocabulary = 400;
        QVERIFY(writeSpecimen(other, 4, shape).isOk());
        SurgeonModels m = models(m_base);
        m.reference.emplace(other, GgufModel::open(other));
        try {
            runSurgeon(m, request(SurgeonGoal::Prune));
            QFAIL("no error");
        } catch (const FormatError& error) {
            QVERIFY2(std::string(error.what())
                             .find("vocabulary.gguf: a vocabulary of 400 tokens; the recipient's "
                                   "has 512") != std::string::npos,
                     error.what());
        }
    }

    void holdoutSplitsAtALineBreak() {
        const auto [search, held] = splitHoldout(kText, 0.3);
        QCOMPARE(search + held, std::string(kText));
        QVERIFY(search.ends_with('\n'));
        QVERIFY(held.size() > 0 && held.size() < search.size());
        QCOMPARE(splitHoldout(kText, 0).second, std::string());
        QVERIFY_THROWS_EXCEPTION(FormatError, splitHoldout("one line only", 0.5));
        QVERIFY_THROWS_EXCEPTION(FormatError, splitHoldout(kText, 1.0));
        // Finalists are reported on the held-out part.
        SurgeonRequest r = request(SurgeonGoal::Prune);
        std::tie(r.text, r.holdout) = splitHoldout(kText, 0.3);
        const SurgeonRecord record = runSurgeon(models(m_base), r);
        QVERIFY(record.holdoutTokens > 0);
        QVERIFY(record.finalists.size() >= 3); // recipient, the baselines, greedy
        for (const auto& finalist : record.finalists) {
            QVERIFY(record.candidates[finalist.candidate].holdout.has_value());
        }
        QCOMPARE(record.finalists.back().stage, std::string("greedy"));
    }

    // The real family: pruning one block, the greedy search's choice is the best on the search
    // text (it scores every block) and no baseline beats it there.
    void familyPruneOfOne() {
        const QString base = familyModel("family-base-f16.gguf");
        const QString text = familyModel("texts/general.txt");
        ORGAN_REQUIRE_SHARED(base);
        ORGAN_REQUIRE_SHARED(text);
        SurgeonRequest r = request(SurgeonGoal::Prune);
        r.text = readAll(text).toStdString();
        r.chunk = 128;
        r.threads = 2;
        const SurgeonRecord record = runSurgeon(models(base.toStdString()), r);
        QVERIFY(record.best);
        QCOMPARE(record.candidates[*record.best].score.layers, 5u);
        for (const SurgeonCandidate& c : record.candidates) {
            if (c.feasible) {
                QVERIFY(record.candidates[*record.best].score.objective <= c.score.objective);
            }
        }
        QCOMPARE(record.runs, std::uint64_t(1 + 6 + 2) - (record.cacheHits));
    }
};

QTEST_APPLESS_MAIN(TestSurgeon)
#include "tst_surgeon.moc"
