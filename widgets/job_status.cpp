#include "job_status.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

namespace organ::widgets {

JobStatus::JobStatus(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("jobStatus"));
    m_label = new QLabel(this);
    m_bar = new QProgressBar(this);
    m_bar->setRange(0, 1000);
    m_bar->setMaximumWidth(220);
    m_bar->setTextVisible(false);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setObjectName(QStringLiteral("cancelJob"));
    m_cancel->setToolTip(tr("Stop measuring (Esc)"));
    m_cancel->setShortcut(Qt::Key_Escape);
    connect(m_cancel, &QPushButton::clicked, this, &JobStatus::cancelRequested);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_label);
    layout->addWidget(m_bar);
    layout->addWidget(m_cancel);
    hide();
}

void JobStatus::begin(const QString& text) {
    m_label->setText(text);
    m_bar->setValue(0);
    show();
}

void JobStatus::setProgress(quint64 done, quint64 total) {
    m_bar->setValue(total == 0 ? 1000 : static_cast<int>(1000.0 * static_cast<double>(done) / total));
}

void JobStatus::end() {
    hide();
}

QString JobStatus::text() const {
    return m_label->text();
}

int JobStatus::permille() const {
    return m_bar->value();
}

} // namespace organ::widgets
