#pragma once

#include <QTreeView>

namespace organ::model {
class AnatomyTreeModel;
}

namespace organ::widgets {

// The anatomy tree, which while tensors are dragged over it says at the pointer whether the
// drop fits and why not (the reason comes from the drop handler, through the model).
class AnatomyTreeView : public QTreeView {
    Q_OBJECT
public:
    AnatomyTreeView(model::AnatomyTreeModel* source, QWidget* parent = nullptr);

signals:
    // Tensors were dropped where they do not fit: why (for the status bar).
    void dropRefused(const QString& reason);

protected:
    // The dragged rows as a small badge beside the pointer ("layer 2 · 3 tensors"), not Qt's
    // picture of the whole rows, which hid the target under the pointer.
    void startDrag(Qt::DropActions supportedActions) override;
    void dragMoveEvent(QDragMoveEvent* event) override;
    void dragLeaveEvent(QDragLeaveEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    model::AnatomyTreeModel* m_source;
};

} // namespace organ::widgets
