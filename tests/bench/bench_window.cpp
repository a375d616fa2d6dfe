// The window at scale: how long opening the 70B-layout file takes to show its tree and its
// (unmeasured) heatmap, and the worst event-loop stall while the 1B-shaped model is measured
// on the engine thread (a 1 ms timer records the longest gap between its ticks).
// Usage: bench_window [FOLDER]   (runs offscreen unless QT_QPA_PLATFORM is set; ~1.5 GB of disk)
#include "bench_models.h"
#include "engine_thread.h"
#include "main_window.h"
#include "model_view.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <cstdio>
#include <filesystem>

using namespace organ;

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
        window.engine()->cancel();
        QEventLoop idle;
        QObject::connect(window.engine(), &app::EngineThread::cancelled, &idle, &QEventLoop::quit);
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
        QElapsedTimer sinceTick;
        qint64 worst = 0;
        int ticks = 0;
        QTimer ticker;
        ticker.setTimerType(Qt::PreciseTimer);
        QObject::connect(&ticker, &QTimer::timeout, [&] {
            worst = std::max(worst, sinceTick.nsecsElapsed());
            sinceTick.restart();
            ++ticks;
        });
        QEventLoop measuring;
        QObject::connect(window.engine(), &app::EngineThread::finished, &measuring, &QEventLoop::quit);
        QElapsedTimer clock;
        clock.start();
        window.openFiles({QString::fromStdString(model1b)});
        window.currentView()->tabs()->setCurrentIndex(1); // the heatmap repaints as results arrive
        sinceTick.start();
        ticker.start(1);
        measuring.exec();
        ticker.stop();
        std::printf(
            "1B shape (Q8_0, 1.3 GB): measured in the window in %.2f s; event loop: %d ticks, worst stall "
            "%.1f ms\n",
            clock.nsecsElapsed() / 1e9, ticks, worst / 1e6);
    }
    std::filesystem::remove(model1b);
    return 0;
}
