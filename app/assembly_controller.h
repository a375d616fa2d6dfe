#pragma once

#include "window_host.h"

#include <QObject>
#include <QString>
#include <cstdint>
#include <vector>

namespace organ {
struct GraftPlan;
}
namespace organ::model {
class GraftDocument;
}

namespace organ::app {

// Graft → Assemble chimera…: asks for the chimera's name and file (an existing file is replaced
// only when the user says so), then checks the plan, writes the chimera and validates it as a job
// on the engine's worker. Its progress (stage, tensors and bytes done, rate, time left) and Cancel
// are the status bar's; a cancelled assembly leaves no file. The written file is offered to open.
class AssemblyController : public QObject {
    Q_OBJECT
public:
    AssemblyController(model::GraftDocument* document, WindowHost host, QObject* parent);

    // Starts writing the plan's chimera to `output`; false and `error` when it cannot start (an
    // assembly runs already, the plan is empty, has errors or names a model that is not open).
    bool start(const QString& output, QString* error);
    bool isRunning() const { return m_job != 0; }
    quint64 job() const { return m_job; }

public slots:
    void assembleDialog();

signals:
    void ended(bool ok, const QString& message);

private:
    static QString proposedSuffix(const GraftPlan& plan);
    QString progressText(std::uint64_t done, std::uint64_t total, const QString& stage);
    void showAssembled(const QString& output, const QString& validation, bool valid);

    model::GraftDocument* m_document;
    WindowHost m_host;
    quint64 m_job = 0;
    qint64 m_stageStarted = 0; // ms since the epoch, when the current stage began
    QString m_stage;
    std::vector<std::uint64_t> m_tensorEnds; // cumulative bytes at the end of each tensor
};

} // namespace organ::app
