#pragma once

#include <QMainWindow>
#include <QMap>
#include <QPointer>
#include <QStringList>

class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QTabWidget;

namespace organ::widgets {
class ModelView;
}

namespace organ::app {

class EngineThread;

// The workbench window: wiring only. Each open model is a tab holding a ModelView.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens each file in a tab; a file that cannot be opened is reported in a dialog
    // naming the file and the problem. Returns how many opened.
    int openFiles(const QStringList& paths);
    QTabWidget* documents() const { return m_documents; }
    widgets::ModelView* currentView() const;
    QStringList recentFiles() const;
    EngineThread* engine() const { return m_engine; }

    // Writes the current model's measurement as JSON, CSV or Markdown (by extension), as
    // `organ measure` does. Returns false with `error` set when there is nothing to export.
    bool exportMeasurement(const QString& path, QString* error);

public slots:
    void openDialog();
    void exportMeasurementDialog();
    void showZMeasureHelp();
    void closeCurrent();
    void showAbout();

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    void rememberRecent(const QString& path);
    void rebuildRecentMenu();
    void showError(const QString& title, const QString& message);
    void updateTitle();
    void buildStatusBar();
    void connectEngine();
    void jobEnded(quint64 generation, const QString& message);

    QStackedWidget* m_stack = nullptr;
    QTabWidget* m_documents = nullptr;
    QMenu* m_recentMenu = nullptr;
    EngineThread* m_engine = nullptr;
    QMap<quint64, QPointer<widgets::ModelView>> m_jobs; // measurement generation → its view
    QLabel* m_jobLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
};

} // namespace organ::app
