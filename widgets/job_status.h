#pragma once

#include <QWidget>
#include <vector>

class QLabel;
class QProgressBar;
class QPushButton;

namespace organ::widgets {

// The window's one report of background jobs, in the status bar: the job under way longest
// (what it is, its stage, how far it is) with a Cancel button (Esc), and how many more wait.
// Hidden while nothing runs. It shows what it is told; the window tells it what the job
// tracker reports.
class JobStatus : public QWidget {
    Q_OBJECT
public:
    explicit JobStatus(QWidget* parent = nullptr);

    // A job began (it may wait behind others).
    void add(quint64 id, const QString& title);
    void setProgress(quint64 id, quint64 done, quint64 total, const QString& text);
    // The job ended: the next one shows, or the report hides.
    void remove(quint64 id);

    quint64 shownJob() const; // 0 when none
    QString text() const;
    int permille() const; // the shown job's progress in thousandths
    int waiting() const;  // jobs besides the shown one

signals:
    void cancelRequested(quint64 id);

private:
    struct Entry {
        quint64 id = 0;
        QString title;
        QString text;
        int permille = 0;
    };
    void showFront();

    std::vector<Entry> m_jobs; // in the order they began
    QLabel* m_label = nullptr;
    QProgressBar* m_bar = nullptr;
    QLabel* m_more = nullptr;
    QPushButton* m_cancel = nullptr;
};

} // namespace organ::widgets
