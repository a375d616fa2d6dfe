// Organ directories where a GGUF goes: opened as the model they hold; grafts between directories
// give the very file the same graft between GGUFs gives; a directory output links what it does
// not change; purify operations in plans purify exactly as `organ purify` does, and only what
// the plan still holds when it is assembled.
#include "fixtures.h"
#include "graft/assembly.h"
#include "graft/graft_check.h"
#include "purify/purify_model.h"
#include "organs/organ_directory.h"
#include "shared_models.h"
#include "support/errors.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <sys/stat.h>

using namespace organ;
using namespace organ::testing;

namespace {

std::string path(const QTemporaryDir& dir, const char* name) {
    return dir.filePath(QString::fromUtf8(name)).toStdString();
}

ino_t inodeOf(const std::string& file) {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 ? st.st_ino : 0;
}

GraftOutcome graft(const GraftPlan& plan, const std::string& output) {
    return graftChimera(plan, GraftModels::open(plan), output);
}

GraftOperation purifyOperation(const TensorSelector& select, PurifyParams params) {
    GraftOperation o;
    o.kind = GraftOperation::Kind::Purify;
    o.select = select;
    o.purify = params;
    return o;
}

PurifyParams haar(double threshold) {
    PurifyParams p;
    p.method = PurifyParams::Method::Haar;
    p.threshold = threshold;
    return p;
}

} // namespace

class TestOrganGrafts : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        m_damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        m_healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        QVERIFY(m_dir.isValid());
    }

    // An organ directory opens as the GGUF it was extracted from: the same header bytes, metadata,
    // tensors and data; a tensor file whose header was changed is refused by name.
    void directoryOpensAsItsModel() {
        ORGAN_REQUIRE_SHARED(m_healthy);
        const auto gguf = GgufModel::open(m_healthy.toStdString());
        const std::string directory = path(m_dir, "open-organs");
        QVERIFY(extractOrgans(*gguf, directory).isOk());
        const auto organs = openModel(directory);
        QVERIFY(organs->hasTensorFiles());
        QCOMPARE(organs->path(), directory);
        QCOMPARE(organs->fileSize(), gguf->fileSize());
        QCOMPARE(organs->primary().headerSize(), gguf->primary().headerSize());
        QVERIFY(std::ranges::equal(organs->primary().mapping()->bytes(),
                                   gguf->primary().mapping()->bytes().first(organs->primary().dataOffset())));
        QCOMPARE(organs->metadata().size(), gguf->metadata().size());
        QCOMPARE(organs->tensors().size(), gguf->tensors().size());
        for (const TensorInfo& t : gguf->tensors()) {
            const TensorInfo* o = organs->findTensor(t.name);
            QVERIFY(o != nullptr);
            QCOMPARE(o->fileOffset, t.fileOffset);
            QVERIFY(std::ranges::equal(organs->tensorData(*o), gguf->tensorData(t)));
            QVERIFY(organs->tensorMapping(*o)->path().starts_with(directory + "/"));
        }
        QCOMPARE(organs->files().size(), gguf->tensors().size() + 1);
        QVERIFY(openModel(m_healthy.toStdString())->files().size() == 1);
        // The primary (the header's stand-in) holds no tensor data.
        QVERIFY_THROWS_EXCEPTION(FormatError, organs->primary().tensorData(organs->tensors().front()));
    }

    // Extracted parents grafted give the very bytes of the same graft of the GGUFs, to a GGUF and
    // to a directory; a directory output links each file whose bytes and name it keeps from a
    // directory input, and copies from a GGUF input.
    void graftBetweenDirectories() {
        ORGAN_REQUIRE_SHARED(m_damaged);
        const std::string damaged = path(m_dir, "damaged");
        const std::string healthy = path(m_dir, "healthy");
        QVERIFY(extractOrgans(*GgufModel::open(m_damaged.toStdString()), damaged).isOk());
        QVERIFY(extractOrgans(*GgufModel::open(m_healthy.toStdString()), healthy).isOk());
        const TensorSelector select = organsOfLayers(2, 3);
        const std::string fromFiles = path(m_dir, "from-files.gguf");
        const std::string fromOrgans = path(m_dir, "from-organs.gguf");
        QVERIFY(graft(replacePlan(m_damaged, m_healthy, select), fromFiles).written.isOk());
        const GraftOutcome organs =
            graft(replacePlan(QString::fromStdString(damaged), QString::fromStdString(healthy), select),
                  fromOrgans);
        QVERIFY2(organs.written.isOk(), organs.written.message.c_str());
        QVERIFY(organs.validation.empty());
        QCOMPARE(readAll(QString::fromStdString(fromOrgans)), readAll(QString::fromStdString(fromFiles)));

        const std::string linked = path(m_dir, "chimera-organs");
        QVERIFY(graft(replacePlan(QString::fromStdString(damaged), QString::fromStdString(healthy), select),
                      linked)
                    .written.isOk());
        QVERIFY(OrganDirectory::looksLikeOne(linked));
        QCOMPARE(inodeOf(linked + "/organs/blk_0_ffn_up.bin"), inodeOf(damaged + "/organs/blk_0_ffn_up.bin"));
        QCOMPARE(inodeOf(linked + "/organs/blk_2_ffn_up.bin"), inodeOf(healthy + "/organs/blk_2_ffn_up.bin"));
        QCOMPARE(inodeOf(linked + "/skeleton/blk_2_attn_q.bin"),
                 inodeOf(damaged + "/skeleton/blk_2_attn_q.bin"));
        const std::string back = path(m_dir, "chimera-back.gguf");
        QVERIFY(assembleOrgans(OrganDirectory::open(linked), back).isOk());
        QCOMPARE(readAll(QString::fromStdString(back)), readAll(QString::fromStdString(fromFiles)));

        const std::string copied = path(m_dir, "chimera-copied");
        QVERIFY(graft(replacePlan(m_damaged, m_healthy, select), copied).written.isOk());
        struct stat st {};
        QVERIFY(::stat((copied + "/organs/blk_0_ffn_up.bin").c_str(), &st) == 0);
        QCOMPARE(st.st_nlink, nlink_t(1));
        const std::string copiedBack = path(m_dir, "copied-back.gguf");
        QVERIFY(assembleOrgans(OrganDirectory::open(copied), copiedBack).isOk());
        QCOMPARE(readAll(QString::fromStdString(copiedBack)), readAll(QString::fromStdString(fromFiles)));
        // A directory that exists already is never written into.
        const GraftOutcome again = graft(replacePlan(m_damaged, m_healthy, select), copied);
        QVERIFY(!again.written.isOk());
        QVERIFY(QString::fromStdString(again.written.message).contains(QStringLiteral("already exists")));
    }

    // A plan that grafts and purifies gives, tensor for tensor, what `organ purify` gives of the
    // graft, records organ.purify.*, and reports θ before and after.
    void purifyOperationInAPlan() {
        ORGAN_REQUIRE_SHARED(m_damaged);
        const TensorSelector select = organsOfLayers(2, 3);
        const PurifyParams params = haar(0.5);
        const std::string grafted = path(m_dir, "grafted.gguf");
        QVERIFY(graft(replacePlan(m_damaged, m_healthy, select), grafted).written.isOk());
        const std::string purifiedAfter = path(m_dir, "purified-after.gguf");
        const PurifyOutcome separate = purifyModel(*GgufModel::open(grafted), select, params, purifiedAfter);
        QVERIFY(separate.written.isOk());

        GraftPlan plan = replacePlan(m_damaged, m_healthy, select);
        plan.operations.push_back(purifyOperation(select, params));
        const std::string together = path(m_dir, "together.gguf");
        const GraftOutcome outcome = graft(plan, together);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        QVERIFY(outcome.report.layout.purify.has_value());
        QCOMPARE(outcome.purified.size(), std::size_t(6));
        for (const PurifiedTensor& t : outcome.purified) {
            QVERIFY(t.thetaBefore && t.thetaAfter);
            QVERIFY(t.relativeChange > 0);
        }
        const auto a = GgufModel::open(together);
        const auto b = GgufModel::open(purifiedAfter);
        for (const TensorInfo& t : b->tensors()) {
            QVERIFY2(std::ranges::equal(a->tensorData(*a->findTensor(t.name)), b->tensorData(t)),
                     t.name.c_str());
        }
        QCOMPARE(a->find("organ.purify.method")->asString().value_or(""), std::string_view("haar"));
        QCOMPARE(a->find("organ.purify.threshold")->asFloat().value_or(0), 0.5);
        QCOMPARE(a->find("organ.purify.tensors")->arraySize(), std::uint64_t(6));
        const auto info =
            std::find_if(outcome.report.findings.begin(), outcome.report.findings.end(),
                         [](const Finding& f) { return f.message.find("purified") != std::string::npos; });
        QVERIFY(info != outcome.report.findings.end());
        QCOMPARE(info->tensors.size(), std::size_t(6));

        // A layer mapped elsewhere is reported under its name in the chimera.
        GraftPlan mapped;
        mapped.base = m_damaged.toStdString();
        mapped.donors.emplace_back("healthy", m_healthy.toStdString());
        GraftOperation map;
        map.kind = GraftOperation::Kind::MapLayer;
        map.donor = "healthy";
        map.fromLayer = 2;
        map.toLayer = 3;
        map.select.system = System::Organ;
        mapped.operations.push_back(map);
        mapped.operations.push_back(purifyOperation(organsOfLayers(3, 3), params));
        const GraftOutcome moved = graft(mapped, path(m_dir, "mapped-purified.gguf"));
        QVERIFY2(moved.written.isOk(), moved.written.message.c_str());
        QCOMPARE(moved.purified.size(), std::size_t(3));
        for (const PurifiedTensor& t : moved.purified) {
            QVERIFY2(t.name.starts_with("blk.3."), t.name.c_str());
        }

        // The plan's JSON keeps the operation.
        const GraftPlan reread = graftPlanFromJson(graftPlanToJson(plan), "plan");
        QCOMPARE(reread.operations.back().kind, GraftOperation::Kind::Purify);
        QCOMPARE(reread.operations.back().purify.threshold, 0.5);
        QCOMPARE(reread.operations.back().select.firstLayer.value_or(0), 2u);
    }

    // Purification applies to what a slot holds when the operation runs: a later replace gives
    // the slot other bytes, unpurified. Two purify operations must agree on their parameters.
    void purifyFollowsThePlan() {
        ORGAN_REQUIRE_SHARED(m_damaged);
        GraftPlan plan;
        plan.base = m_damaged.toStdString();
        plan.donors.emplace_back("healthy", m_healthy.toStdString());
        plan.operations.push_back(purifyOperation(organsOfLayers(2, 2), haar(1)));
        GraftOperation replace;
        replace.kind = GraftOperation::Kind::Replace;
        replace.donor = "healthy";
        replace.select = organsOfLayers(2, 2);
        plan.operations.push_back(replace);
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport replaced = checkGraft(plan, models);
        QVERIFY(!replaced.hasErrors());
        QVERIFY(std::none_of(replaced.layout.tensors.begin(), replaced.layout.tensors.end(),
                             [](const ChimeraTensor& t) { return t.purify.has_value(); }));

        plan.operations.push_back(purifyOperation(organsOfLayers(3, 3), PurifyParams{}));
        const CompatibilityReport conflicting = checkGraft(plan, models);
        QVERIFY(conflicting.hasErrors());
        QVERIFY(std::any_of(conflicting.findings.begin(), conflicting.findings.end(), [](const Finding& f) {
            return f.operation == 2 && f.message.find("same method and parameters") != std::string::npos;
        }));

        GraftPlan nothing;
        nothing.base = m_damaged.toStdString();
        TensorSelector none;
        none.names = {"no.such.tensor"};
        nothing.operations.push_back(purifyOperation(none, PurifyParams{}));
        const CompatibilityReport empty = checkGraft(nothing, GraftModels::open(nothing));
        QVERIFY(std::any_of(empty.findings.begin(), empty.findings.end(), [](const Finding& f) {
            return f.message == "purify: the selection matches no tensor of the chimera";
        }));
    }

    void purifyOperationJsonIsChecked_data() {
        QTest::addColumn<QString>("operation");
        QTest::addColumn<QString>("message");
        QTest::newRow("no selection") << QStringLiteral(R"({"op": "purify", "method": "fft"})")
                                      << QStringLiteral("purify needs a selection");
        QTest::newRow("method") << QStringLiteral(R"({"op": "purify", "layers": "1", "method": "wavelet"})")
                                << QStringLiteral("\"method\" must be \"fft\" or \"haar\"");
        QTest::newRow("keep range") << QStringLiteral(
                                           R"({"op": "purify", "layers": "1", "method": "fft", "keep": 2})")
                                    << QStringLiteral("keep must be in (0, 1]");
        QTest::newRow("wrong parameter")
            << QStringLiteral(R"({"op": "purify", "layers": "1", "method": "fft", "threshold": 1})")
            << QStringLiteral("fft takes \"keep\"");
        QTest::newRow("not a number")
            << QStringLiteral(R"({"op": "purify", "layers": "1", "method": "haar", "attenuation": "x"})")
            << QStringLiteral("\"attenuation\" must be a number");
    }
    void purifyOperationJsonIsChecked() {
        QFETCH(QString, operation);
        QFETCH(QString, message);
        nlohmann::json plan = {
            {"format", "organ-graft-plan"},
            {"version", 1},
            {"base", "a.gguf"},
            {"donors", nlohmann::json::object()},
            {"operations", nlohmann::json::array({nlohmann::json::parse(operation.toStdString())})}};
        try {
            graftPlanFromJson(plan, "plan.json");
            QFAIL("accepted");
        } catch (const FormatError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
        }
    }

    // `organ purify` into a directory gives the organs of the same purification into a GGUF.
    void purifyIntoADirectory() {
        ORGAN_REQUIRE_SHARED(m_healthy);
        const auto model = GgufModel::open(m_healthy.toStdString());
        TensorSelector select;
        select.system = System::Skeleton;
        const std::string file = path(m_dir, "purified.gguf");
        const std::string directory = path(m_dir, "purified-organs");
        QVERIFY(purifyModel(*model, select, PurifyParams{}, file).written.isOk());
        const PurifyOutcome outcome = purifyModel(*model, select, PurifyParams{}, directory);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        QVERIFY(!outcome.tensors.empty());
        const std::string back = path(m_dir, "purified-back.gguf");
        QVERIFY(assembleOrgans(OrganDirectory::open(directory), back).isOk());
        QCOMPARE(readAll(QString::fromStdString(back)), readAll(QString::fromStdString(file)));
    }

private:
    QString m_damaged;
    QString m_healthy;
    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestOrganGrafts)
#include "tst_organ_grafts.moc"
