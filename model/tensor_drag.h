#pragma once

#include "graft/drop_evaluation.h" // DropTarget

#include <QString>
#include <Qt>
#include <optional>
#include <vector>

class QMimeData;

namespace organ::model {

// Tensors dragged from a donor: the payload of kTensorMimeType. Encoded as a version byte,
// the kind of pick, the source model's file (its identity in the window) and the tensor
// indices; decoding refuses any other version and any malformed payload.
inline constexpr const char* kTensorMimeType = "application/x-organ-workbench-tensors";
inline constexpr quint8 kTensorMimeVersion = 1;

struct TensorDrag {
    enum class Pick : quint8 { Tensors, Layer, System, Role, Column };
    Pick pick = Pick::Tensors;
    QString model;            // absolute path of the source model's (first) file
    std::vector<int> tensors; // indices into that model's tensors, ascending, unique
};

QMimeData* encodeTensorDrag(const TensorDrag& drag);
std::optional<TensorDrag> decodeTensorDrag(const QMimeData* data);

// What the window does with drops: checks them against the graft plan while dragging and
// adds operations on drop. Item models and charts only forward to it.
class TensorDropHandler {
public:
    virtual ~TensorDropHandler() = default;
    // Whether dropping `drag` on `target` of the model `recipient` adds anything; `message`
    // says why not, or what would be added (and left out).
    virtual bool canDropTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target,
                                QString* message) = 0;
    virtual bool dropTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target) = 0;
    // The same with Shift held: the dragged tensors are to be merged into the recipient's tensors
    // of the same names instead of replacing them; the window asks how before anything is planned.
    virtual bool canMergeTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target,
                                 QString* message) = 0;
    virtual bool mergeTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target) = 0;
};

// Whether a drop with these keys held merges (Shift) rather than replaces.
bool mergesOnDrop(Qt::KeyboardModifiers modifiers);

// What a drag's tooltip says over a target: the drop's message, and under a replacement that fits
// where a merge would fit too (`mergeFits`), how to merge instead (Shift is found nowhere else while
// dragging).
QString dragTooltip(const QString& message, bool fits, bool merge, bool mergeFits);

} // namespace organ::model
