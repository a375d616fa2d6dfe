#include "job_status.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <algorithm>

namespace organ::widgets {

JobStatus::JobStatus(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("jobStatus"));
    m_label = new QLabel(this);
    m_label->setObjectName(QStringLiteral("jobText"));
    m_bar = new QProgressBar(this);
    m_bar->setRange(0, 1000);
    m_bar->setMaximumWidth(220);
    m_bar->setTextVisible(false);
    m_more = new QLabel(this);
    m_more->setObjectName(QStringLiteral("jobsWaiting"));
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setObjectName(QStringLiteral("cancelJob"));
    m_cancel->setToolTip(tr("Stop this job (Esc)"));
    m_cancel->setShortcut(Qt::Key_Escape);
    m_cancel->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (!m_jobs.empty()) {
            emit cancelRequested(m_jobs.front().id);
        }
    });
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_label);
    layout->addWidget(m_bar);
    layout->addWidget(m_more);
    layout->addWidget(m_cancel);
    hide();
}

void JobStatus::add(quint64 id, const QString& title) {
    m_jobs.push_back({id, title, {}, 0});
    showFront();
}

void JobStatus::setProgress(quint64 id, quint64 done, quint64 total, const QString& text) {
    const auto it = std::find_if(m_jobs.begin(), m_jobs.end(), [id](const Entry& e) { return e.id == id; });
    if (it == m_jobs.end()) {
        return;
    }
    it->text = text;
    it->permille = total == 0 ? 1000 : static_cast<int>(1000.0 * static_cast<double>(done) / double(total));
    showFront();
}

void JobStatus::remove(quint64 id) {
    std::erase_if(m_jobs, [id](const Entry& e) { return e.id == id; });
    showFront();
}

void JobStatus::showFront() {
    if (m_jobs.empty()) {
        hide();
        return;
    }
    const Entry& shown = m_jobs.front();
    m_label->setText(shown.text.isEmpty() ? shown.title : shown.title + QStringLiteral(" — ") + shown.text);
    m_bar->setValue(shown.permille);
    m_more->setText(m_jobs.size() > 1 ? tr("+%n waiting", nullptr, int(m_jobs.size() - 1)) : QString());
    m_more->setVisible(m_jobs.size() > 1);
    show();
}

quint64 JobStatus::shownJob() const {
    return m_jobs.empty() ? 0 : m_jobs.front().id;
}

QString JobStatus::text() const {
    return m_label->text();
}

int JobStatus::permille() const {
    return m_bar->value();
}

int JobStatus::waiting() const {
    return m_jobs.empty() ? 0 : int(m_jobs.size()) - 1;
}

} // namespace organ::widgets
