#pragma once

#include <QByteArray>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QString>
#include <QTest>

// Interoperability tests read the real GGUF files in ../shared/models. Where they are
// missing the test fails under CI=true and is skipped, visibly, anywhere else.
namespace organ::testing {

inline QString sharedDir() {
    const QByteArray fromEnv = qgetenv("ORGAN_SHARED_DIR");
    return QDir::cleanPath(fromEnv.isEmpty() ? QStringLiteral(ORGAN_SHARED_DIR)
                                             : QString::fromLocal8Bit(fromEnv));
}

inline QString sharedModel(const QString& relative) {
    return sharedDir() + QStringLiteral("/models/") + relative;
}
inline QString sharedReference(const QString& relative) {
    return sharedDir() + QStringLiteral("/reference/") + relative;
}
// A model of the trained family (models/family/), and the base's importance matrix.
inline QString familyModel(const char* name) {
    return sharedModel(QStringLiteral("family/") + QLatin1String(name));
}
// The first `bytes` bytes of one of the family's texts (models/family/texts/NAME); empty when it
// cannot be read.
inline QByteArray familyTextHead(const char* name, qint64 bytes) {
    QFile text(sharedModel(QStringLiteral("family/texts/") + QLatin1String(name)));
    return text.open(QIODevice::ReadOnly) ? text.read(bytes) : QByteArray();
}
inline QString familyImatrix() {
    return sharedReference(QStringLiteral("family/family-base-imatrix.gguf"));
}

// Every *.gguf below ../shared/models, sorted; empty when the folder is missing.
inline QStringList sharedGgufFiles() {
    QStringList files;
    QDirIterator it(sharedModel(QString()), {QStringLiteral("*.gguf")}, QDir::Files,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        files << it.next();
    }
    files.sort();
    return files;
}

inline bool runningInCi() {
    return qgetenv("CI") == "true";
}

} // namespace organ::testing

#define ORGAN_REQUIRE_SHARED(path)                                                                           \
    do {                                                                                                     \
        if (!QFileInfo::exists(path)) {                                                                      \
            if (organ::testing::runningInCi()) {                                                             \
                QFAIL(qPrintable(QStringLiteral("shared test file missing in CI: ") + (path)));              \
            }                                                                                                \
            QSKIP(qPrintable(QStringLiteral("shared test file missing (../shared/models): ") + (path)));     \
        }                                                                                                    \
    } while (false)
