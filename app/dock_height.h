#pragma once

class QDockWidget;
class QMainWindow;

namespace organ::app {

// Keeps a top or bottom dock at the height it was given. A QMainWindow made shorter squeezes its
// docks, and made taller again gives every pixel to the central widget: the dock would stay
// squeezed (the plan's check clipped to a few lines). A height the dock gets while the window keeps
// its size (the line above it dragged, resizeDocks) is the one wanted; when the window next grows,
// the dock gets it back as far as it fits. Owned by `dock`.
void keepDockHeight(QMainWindow* window, QDockWidget* dock);

} // namespace organ::app
