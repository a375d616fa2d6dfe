#pragma once

// The window's classes that the controllers' headers name only by pointer, declared once here so
// that those headers need not include the widgets', the models' and each other's headers.
namespace organ::widgets {
class ModelPane;
class ModelView;
class TensorInspector;
} // namespace organ::widgets

namespace organ::model {
class OpenModels;
} // namespace organ::model

namespace organ::app {
class JobTracker;
class MeasureController;
class SpectralController;
class SurgeryController;
} // namespace organ::app
