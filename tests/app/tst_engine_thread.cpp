// The engine thread without a window: jobs run in order on the engine thread, results carry
// their generation, and a tensor portrait never waits behind a whole-model measurement.
#include "anatomy/specimen.h"
#include "engine_thread.h"
#include "organs/organ_directory.h"
#include "worker_wait.h"

#include <QSemaphore>
#include <QTemporaryDir>
#include <QTest>

using namespace organ;
using namespace organ::testing;

class TestEngineThread : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::shared_ptr<const ModelSnapshot> m_snapshot;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        qputenv("ORGAN_CACHE_DIR", m_dir.filePath(QStringLiteral("cache")).toUtf8());
        const std::string path = m_dir.filePath(QStringLiteral("specimen.gguf")).toStdString();
        QVERIFY(writeSpecimen(path, 5).isOk());
        m_snapshot = ModelSnapshot::of(openModel(path));
    }

    void portraitsDoNotWaitForMeasurements() {
        app::EngineThread engine;
        QSemaphore hold;
        // The engine thread is busy (as with a long measurement) until the test releases it.
        QMetaObject::invokeMethod(engine.worker(), [&hold] { hold.acquire(); });
        QSignalSpy finished(engine.worker(), &app::MeasureAndAssembleWorker::finished);
        QSignalSpy portraits(engine.portraits(), &app::PortraitWorker::portraitReady);
        const quint64 measuring = engine.measure(m_snapshot);
        QVERIFY(engine.isBusy());
        const quint64 portrait = engine.portrait(m_snapshot, 1);
        QVERIFY(portrait != measuring);
        QVERIFY(waitForWorker(portraits, 1, 10000));
        QCOMPARE(portraits.at(0).at(0).toULongLong(), portrait);
        QCOMPARE(portraits.at(0).at(1).toInt(), 1);
        const auto image = portraits.at(0).at(2).value<std::shared_ptr<const TensorPortrait>>();
        QVERIFY(image != nullptr);
        QCOMPARE(finished.count(), 0); // still held
        QVERIFY(engine.isBusy());
        hold.release();
        QVERIFY(waitForWorker(finished, 1, 20000));
        QCOMPARE(finished.at(0).at(0).toULongLong(), measuring);
        QVERIFY(!engine.isBusy());
    }

    void cancelledBeforeItStarts() {
        app::EngineThread engine;
        QSemaphore hold;
        QMetaObject::invokeMethod(engine.worker(), [&hold] { hold.acquire(); });
        QSignalSpy cancelled(engine.worker(), &app::MeasureAndAssembleWorker::cancelled);
        QSignalSpy finished(engine.worker(), &app::MeasureAndAssembleWorker::finished);
        const quint64 first = engine.measure(m_snapshot);
        engine.cancel();
        const quint64 second = engine.measure(m_snapshot); // requested after the cancel: runs
        hold.release();
        QVERIFY(waitForWorker(finished, 1, 20000));
        QCOMPARE(cancelled.count(), 1);
        QCOMPARE(cancelled.at(0).at(0).toULongLong(), first);
        QCOMPARE(finished.at(0).at(0).toULongLong(), second);
        QVERIFY(!engine.isBusy());
    }
};

QTEST_GUILESS_MAIN(TestEngineThread)
#include "tst_engine_thread.moc"
