// The instruction set the kernels run: the fastest this CPU has, or the one ORGAN_CPU names, and a
// clear refusal of a name that is unknown or that this CPU cannot run. ORGAN_CPU is read once per
// process, so each value is tried in a child process running reportActiveSet alone.
#include "support/instruction_set.h"

#include <QProcess>
#include <QTest>
#include <algorithm>
#include <cstdio>
#include <stdexcept>

using namespace organ;

namespace {

// What a child with ORGAN_CPU = `value` prints: the active set, or the refusal.
QString childWith(const QString& value) {
    QProcess child;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("ORGAN_CPU"), value);
    child.setProcessEnvironment(environment);
    child.start(QStringLiteral("/proc/self/exe"), {QStringLiteral("reportActiveSet")});
    if (!child.waitForFinished(30000)) {
        return QStringLiteral("(no answer)");
    }
    const QString out = QString::fromUtf8(child.readAllStandardOutput());
    const qsizetype at = out.indexOf(QStringLiteral("active: "));
    return at < 0 ? out : out.mid(at + 8).section(QLatin1Char('\n'), 0, 0);
}

} // namespace

class TestInstructionSet : public QObject {
    Q_OBJECT

private slots:
    // Run alone by the children; in the parent it reports the default choice.
    void reportActiveSet() {
        try {
            std::printf("active: %s\n", instructionSetName(activeInstructionSet()).data());
        } catch (const std::invalid_argument& e) {
            std::printf("active: refused: %s\n", e.what());
        }
        std::fflush(stdout);
    }

    void fastestByDefault() {
        const auto& supported = supportedInstructionSets();
        QVERIFY(!supported.empty());
        QCOMPARE(supported.back(), InstructionSet::Portable);
        QCOMPARE(childWith(QString()), QString::fromLatin1(instructionSetName(supported.front())));
        // Every supported set is known, in the same order.
        const auto& known = knownInstructionSets();
        QVERIFY(std::is_sorted(supported.begin(), supported.end(), [&](InstructionSet a, InstructionSet b) {
            return std::find(known.begin(), known.end(), a) < std::find(known.begin(), known.end(), b);
        }));
    }

    void environmentChoosesEverySupportedSet() {
        for (const InstructionSet set : supportedInstructionSets()) {
            const QString name = QString::fromLatin1(instructionSetName(set));
            QCOMPARE(childWith(name), name);
        }
    }

    void environmentNamesAreChecked() {
        QCOMPARE(
            childWith(QStringLiteral("sse9")),
            QStringLiteral("refused: ORGAN_CPU=sse9 names no instruction set (avx512vnni, avx512, avxvnni, "
                           "avx2 or portable)"));
        const auto& supported = supportedInstructionSets();
        for (const InstructionSet set : knownInstructionSets()) {
            if (std::find(supported.begin(), supported.end(), set) == supported.end()) {
                const QString name = QString::fromLatin1(instructionSetName(set));
                QCOMPARE(childWith(name), QStringLiteral("refused: ORGAN_CPU=") + name +
                                              QStringLiteral(": this CPU cannot run it (it runs ") +
                                              QString::fromStdString(supportedInstructionSetNames()) +
                                              QStringLiteral(")"));
                qInfo("%s: this CPU cannot run it, refused", qPrintable(name));
            }
        }
    }

    void useInstructionSetChecksItsName() {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, useInstructionSet("avx1024"));
        useInstructionSet("portable");
        QCOMPARE(activeInstructionSet(), InstructionSet::Portable);
        useInstructionSet(instructionSetName(supportedInstructionSets().front()));
        QCOMPARE(activeInstructionSet(), supportedInstructionSets().front());
    }
};

QTEST_APPLESS_MAIN(TestInstructionSet)
#include "tst_instruction_set.moc"
