// The status bar's job report: shown while a job runs, its progress, Cancel and Esc, the jobs
// waiting behind it.
#include "job_status.h"

#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>
#include <QWindow>

using namespace organ;

class TestJobStatus : public QObject {
    Q_OBJECT

private slots:
    void showsRunsAndCancels() {
        QWidget window;
        widgets::JobStatus status(&window);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(!status.isVisible());
        status.add(7, QStringLiteral("Measuring wide"));
        QVERIFY(status.isVisible());
        QCOMPARE(status.text(), QStringLiteral("Measuring wide"));
        QCOMPARE(status.permille(), 0);
        status.setProgress(7, 1, 4, QStringLiteral("measuring"));
        QCOMPARE(status.permille(), 250);
        QCOMPARE(status.text(), QStringLiteral("Measuring wide — measuring"));
        status.setProgress(7, 0, 0, QStringLiteral("measuring"));
        QCOMPARE(status.permille(), 1000);
        // A second job waits behind the first; its progress does not show yet.
        status.add(9, QStringLiteral("Assembling healed.gguf"));
        status.setProgress(9, 1, 2, QStringLiteral("writing"));
        QCOMPARE(status.shownJob(), quint64(7));
        QCOMPARE(status.waiting(), 1);
        QCOMPARE(status.findChild<QLabel*>(QStringLiteral("jobsWaiting"))->text(),
                 QStringLiteral("+1 waiting"));
        QSignalSpy cancel(&status, &widgets::JobStatus::cancelRequested);
        QTest::mouseClick(status.findChild<QPushButton*>(QStringLiteral("cancelJob")), Qt::LeftButton);
        QCOMPARE(cancel.count(), 1);
        QCOMPARE(cancel.front().front().toULongLong(), quint64(7));
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QTest::keyClick(window.windowHandle(), Qt::Key_Escape); // an animated click: ~100 ms
        QTRY_COMPARE(cancel.count(), 2);
        // The first ends: the second shows, with the progress it reported meanwhile.
        status.remove(7);
        QCOMPARE(status.shownJob(), quint64(9));
        QCOMPARE(status.permille(), 500);
        QCOMPARE(status.text(), QStringLiteral("Assembling healed.gguf — writing"));
        QVERIFY(!status.findChild<QLabel*>(QStringLiteral("jobsWaiting"))->isVisible());
        status.remove(9);
        QVERIFY(!status.isVisible()); // and so is its Cancel button, whose Esc is then inactive
        QCOMPARE(status.shownJob(), quint64(0));
    }
};

QTEST_MAIN(TestJobStatus)
#include "tst_job_status.moc"
