#pragma once

#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;

namespace organ::widgets {

// The status bar's report of background jobs: what runs, how far it is, and a Cancel button
// (Esc). Hidden while nothing runs.
class JobStatus : public QWidget {
    Q_OBJECT
public:
    explicit JobStatus(QWidget* parent = nullptr);

    // A job began: shows `text` and an empty bar.
    void begin(const QString& text);
    void setProgress(quint64 done, quint64 total);
    // Every job ended: hides itself.
    void end();
    QString text() const;
    int permille() const; // progress in thousandths

signals:
    void cancelRequested();

private:
    QLabel* m_label = nullptr;
    QProgressBar* m_bar = nullptr;
    QPushButton* m_cancel = nullptr;
};

} // namespace organ::widgets
