#pragma once

#include "window_host.h"

#include <QObject>
#include <QString>

class QMenu;

namespace organ::app {

// Organ directories in the window: File → Open organ directory… (as recipient or donor) and
// File → Extract to organ directory… of the focused model, a job on the engine's worker with its
// progress and Cancel in the status bar (nothing is left behind), offering to open the result.
class OrgansController : public QObject {
    Q_OBJECT
public:
    using Side = WindowHost::Side;
    explicit OrgansController(WindowHost host);

    void populateMenu(QMenu* file);
    // Extracts `view`'s model into `directory` (which must not exist); false and `error` when it
    // cannot start.
    bool startExtraction(const widgets::ModelView* view, const QString& directory, QString* error);
    bool isExtracting() const { return m_extraction != 0; }

signals:
    void extractionEnded(bool ok, const QString& message);

private:
    void openDirectoryDialog(Side side);
    void extractDialog();

    WindowHost m_host;
    quint64 m_extraction = 0;
};

} // namespace organ::app
