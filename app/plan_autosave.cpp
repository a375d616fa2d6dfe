#include "plan_autosave.h"

#include "graft_document.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <QUuid>

namespace organ::app {
namespace {

QString lockOf(const QString& plan) {
    return plan.chopped(int(QStringLiteral(".json").size())) + QStringLiteral(".lock");
}

} // namespace

QString PlanAutosave::folder() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/autosave");
}

PlanAutosave::PlanAutosave(model::GraftDocument* document, QObject* parent)
    : QObject(parent), m_document(document) {
    QDir().mkpath(folder());
    m_path = folder() + QStringLiteral("/plan-") + QUuid::createUuid().toString(QUuid::WithoutBraces) +
             QStringLiteral(".json");
    m_lock = std::make_unique<QLockFile>(lockOf(m_path));
    m_lock->setStaleLockTime(0); // stale only when its process is gone, however long it runs
    m_lock->tryLock(0);
    connect(document, &model::GraftDocument::changed, this, &PlanAutosave::update);
}

PlanAutosave::~PlanAutosave() {
    QFile::remove(m_path);
}

// Runs after every edit, undo, save and check: small plans, written in a few milliseconds.
void PlanAutosave::update() {
    if (m_document->isEmpty() || !m_document->isModified()) {
        QFile::remove(m_path);
        return;
    }
    try {
        saveGraftPlan(m_document->plan(), m_path.toStdString());
    } catch (const std::exception&) {
        // An autosave that cannot be written leaves the last one; the plan itself is intact.
    }
}

std::vector<PlanAutosave::Orphan> PlanAutosave::orphans() {
    std::vector<Orphan> out;
    const QFileInfoList plans =
        QDir(folder()).entryInfoList({QStringLiteral("plan-*.json")}, QDir::Files, QDir::Time);
    for (const QFileInfo& plan : plans) {
        auto lock = std::make_shared<QLockFile>(lockOf(plan.absoluteFilePath()));
        lock->setStaleLockTime(0);
        // Taken only when no live process holds it: its session crashed or was killed.
        if (lock->tryLock(0)) {
            out.push_back({plan.absoluteFilePath(), plan.lastModified(), std::move(lock)});
        }
    }
    return out;
}

void PlanAutosave::discard(const Orphan& orphan) {
    QFile::remove(orphan.path);
    orphan.lock->unlock();
}

} // namespace organ::app
