// The window at scale: how long opening the 70B-layout file takes to show its tree and its
// (unmeasured) heatmap, and the worst event-loop stall while the 1B-shaped model is measured
// on the engine thread (a 1 ms timer records the longest gap between its ticks), and the same
// while a chimera of two such models (half the layers' organs grafted) is assembled.
// Usage: bench_window [FOLDER]   (runs offscreen unless QT_QPA_PLATFORM is set; ~4 GB of disk)
#include "assembly_controller.h"
#include "bench_models.h"
#include "graft_document.h"
#include "job_tracker.h"
#include "main_window.h"
#include "model_view.h"
#include "surgery_controller.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <cstdio>
#include <filesystem>

using namespace organ;

namespace {

// The longest gap between the ticks of a 1 ms timer: how long the event loop stalled.
struct StallMeter {
    QElapsedTimer sinceTick;
    qint64 worst = 0;
    qint64 worstAt = 0; // ns since start() when the worst stall ended
    QElapsedTimer sinceStart;
    int ticks = 0;
    QTimer ticker;

    void start() {
        ticker.setTimerType(Qt::PreciseTimer);
        QObject::connect(&ticker, &QTimer::timeout, [this] {
            if (sinceTick.nsecsElapsed() > worst) {
                worst = sinceTick.nsecsElapsed();
                worstAt = sinceStart.nsecsElapsed();
            }
            sinceTick.restart();
            ++ticks;
        });
        sinceTick.start();
        sinceStart.start();
        ticker.start(1);
    }
};

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication app(argc, argv);
    const std::string folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path().string();
    QTemporaryDir cache;
    qputenv("ORGAN_CACHE_DIR", cache.path().toLocal8Bit()); // measure for real, not from a cache

    const std::string layout70b = folder + "/bench-window-70b.gguf";
    bench::writeSparse(layout70b, bench::seventyBLayout(1));
    {
        app::MainWindow window;
        window.resize(1400, 900);
        window.show();
        QElapsedTimer clock;
        clock.start();
        window.openFiles({QString::fromStdString(layout70b)});
        QApplication::processEvents(); // the first paint of the tree and the heatmap
        std::printf("70B layout (45 GB, 723 tensors): tree and unmeasured heatmap shown in %.1f ms\n",
                    clock.nsecsElapsed() / 1e6);
        window.jobs()->cancelKind("measure");
        QEventLoop idle;
        QObject::connect(window.jobs(), &app::JobTracker::ended, &idle, &QEventLoop::quit);
        QTimer::singleShot(10000, &idle, &QEventLoop::quit);
        idle.exec();
    }
    std::filesystem::remove(layout70b);

    const std::string model1b = folder + "/bench-window-1b.gguf";
    if (!writeGguf(model1b, bench::llama1bShape(TensorType::Q8_0)).isOk()) {
        return 1;
    }
    {
        app::MainWindow window;
        window.resize(1400, 900);
        window.show();
        StallMeter stalls;
        QEventLoop measuring;
        QObject::connect(window.jobs(), &app::JobTracker::ended, &measuring, &QEventLoop::quit);
        QElapsedTimer clock;
        clock.start();
        window.openFiles({QString::fromStdString(model1b)});
        window.currentView()->tabs()->setCurrentIndex(1); // the heatmap repaints as results arrive
        stalls.start();
        measuring.exec();
        stalls.ticker.stop();
        std::printf(
            "1B shape (Q8_0, 1.3 GB): measured in the window in %.2f s; event loop: %d ticks, worst stall "
            "%.1f ms\n",
            clock.nsecsElapsed() / 1e9, stalls.ticks, stalls.worst / 1e6);
    }

    // Assembly: the donor is a second copy; the organs of layers 0-7 are grafted.
    const std::string donor1b = folder + "/bench-window-1b-donor.gguf";
    const std::string chimera = folder + "/bench-window-chimera.gguf";
    std::filesystem::copy_file(model1b, donor1b, std::filesystem::copy_options::overwrite_existing);
    {
        app::MainWindow window;
        window.resize(1400, 900);
        window.show();
        // Opening both from inside the event loop: the recipient is served from the cache,
        // its whole measurement applied at once; the donor starts measuring.
        StallMeter opening;
        QEventLoop opened;
        QObject::connect(window.jobs(), &app::JobTracker::ended, &opened, &QEventLoop::quit);
        opening.start();
        QTimer::singleShot(0, [&] {
            window.openFiles({QString::fromStdString(model1b)});
            window.openFiles({QString::fromStdString(donor1b)}, app::MainWindow::Side::Donor);
        });
        opened.exec();
        QTimer::singleShot(200, &opened, &QEventLoop::quit);
        opened.exec();
        opening.ticker.stop();
        std::printf(
            "opening the 1B shape (from the cache, %zu tensors) and a copy beside it: worst stall %.1f ms\n",
            window.currentView()->snapshot().model->tensors().size(), opening.worst / 1e6);
        window.jobs()->cancelKind("measure"); // measuring the copy is not what this part measures
        model::TensorDrag drag;
        drag.model = QString::fromStdString(std::filesystem::absolute(donor1b).string());
        const auto donor = window.surgery()->document()->model(drag.model);
        for (std::size_t i = 0; i < donor->anatomy.tensors.size(); ++i) {
            const auto& a = donor->anatomy.tensors[i];
            if (a.system == System::Organ && a.layer && *a.layer < 8) {
                drag.tensors.push_back(static_cast<int>(i));
            }
        }
        const QString recipient = QString::fromStdString(std::filesystem::absolute(model1b).string());
        if (!window.surgery()->document()->dropTensors(drag, recipient, {})) {
            std::printf("the graft was refused: %s\n",
                        qPrintable(window.surgery()->document()->lastDropMessage()));
            return 1;
        }
        StallMeter stalls;
        QEventLoop assembling;
        bool ok = false;
        QObject::connect(window.surgery()->assembly(), &app::AssemblyController::ended, &assembling,
                         [&](bool success) {
                             ok = success;
                             assembling.quit();
                         });
        QElapsedTimer clock;
        clock.start();
        QString error;
        if (!window.surgery()->assembly()->start(QString::fromStdString(chimera), &error)) {
            std::printf("cannot assemble: %s\n", qPrintable(error));
            return 1;
        }
        stalls.start();
        assembling.exec();
        stalls.ticker.stop();
        const double seconds = clock.nsecsElapsed() / 1e9;
        std::printf(
            "chimera of two 1B shapes (%zu organs grafted, %.2f GB written and verified): %s in %.2f s "
            "(%.0f MB/s); event loop: %d ticks, worst stall %.1f ms (ending %.2f s in)\n",
            drag.tensors.size(), std::filesystem::file_size(chimera) / 1e9, ok ? "assembled" : "FAILED",
            seconds, std::filesystem::file_size(chimera) / 1e6 / seconds, stalls.ticks, stalls.worst / 1e6,
            stalls.worstAt / 1e9);
    }
    std::filesystem::remove(chimera);
    std::filesystem::remove(donor1b);
    std::filesystem::remove(model1b);
    return 0;
}
