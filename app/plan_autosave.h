#pragma once

#include <QDateTime>
#include <QLockFile>
#include <QObject>
#include <QString>
#include <memory>
#include <vector>

namespace organ::model {
class GraftDocument;
}

namespace organ::app {

// Keeps an unsaved graft plan safe from a crash or a kill: after each change the plan is
// written to the user's data folder (QStandardPaths::AppDataLocation/autosave), under a
// name held by this session's lock file. A clean exit, a save or an empty plan removes it.
// A plan whose session died (its lock is stale) is an orphan, offered back at the next start.
class PlanAutosave : public QObject {
    Q_OBJECT
public:
    explicit PlanAutosave(model::GraftDocument* document, QObject* parent = nullptr);
    ~PlanAutosave() override; // a clean exit: the autosave goes

    static QString folder();
    QString path() const { return m_path; } // this session's autosave (it may not exist)

    // A plan left by a session that ended without saving it: its file, when it was written,
    // and its lock (held from orphans() on, so that two windows never recover it twice).
    struct Orphan {
        QString path;
        QDateTime written;
        std::shared_ptr<QLockFile> lock;
    };
    static std::vector<Orphan> orphans();
    static void discard(const Orphan& orphan);

private:
    void update();

    model::GraftDocument* m_document;
    QString m_path;
    std::unique_ptr<QLockFile> m_lock;
};

} // namespace organ::app
