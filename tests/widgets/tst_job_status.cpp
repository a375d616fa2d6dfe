// The status bar's job report: shown while a job runs, its progress, Cancel and Esc.
#include "job_status.h"

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
        status.begin(QStringLiteral("Measuring wide…"));
        QVERIFY(status.isVisible());
        QCOMPARE(status.text(), QStringLiteral("Measuring wide…"));
        QCOMPARE(status.permille(), 0);
        status.setProgress(1, 4);
        QCOMPARE(status.permille(), 250);
        status.setProgress(0, 0);
        QCOMPARE(status.permille(), 1000);
        QSignalSpy cancel(&status, &widgets::JobStatus::cancelRequested);
        QTest::mouseClick(status.findChild<QPushButton*>(QStringLiteral("cancelJob")), Qt::LeftButton);
        QCOMPARE(cancel.count(), 1);
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QTest::keyClick(window.windowHandle(), Qt::Key_Escape); // an animated click: ~100 ms
        QTRY_COMPARE(cancel.count(), 2);
        status.end();
        QVERIFY(!status.isVisible()); // and so is its Cancel button, whose Esc is then inactive
    }
};

QTEST_MAIN(TestJobStatus)
#include "tst_job_status.moc"
