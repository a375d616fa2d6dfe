#include "model_pane.h"

#include "model_view.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QLabel>
#include <QMimeData>
#include <QStackedWidget>
#include <QTabWidget>
#include <QVBoxLayout>

namespace organ::widgets {

ModelPane::ModelPane(Side side, QWidget* parent) : QWidget(parent), m_side(side) {
    setAcceptDrops(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    // Which side this is, always in view: what a drop here does depends on it.
    m_header = new QLabel(side == Side::Recipient
                              ? tr("<b>Recipient</b> — the model you operate on; drop donor organs here")
                              : tr("<b>Donors</b> — the models to take organs from; drag from here"),
                          this);
    m_header->setObjectName(QStringLiteral("paneHeader"));
    m_header->setContentsMargins(6, 2, 6, 2);
    m_header->setWordWrap(true);
    layout->addWidget(m_header);
    m_stack = new QStackedWidget(this);
    layout->addWidget(m_stack, 1);
    m_empty =
        new QLabel(side == Side::Recipient
                       ? tr("<h3>Recipient</h3><p>Open the model to operate on: <b>File → Open recipient</b> "
                            "(Ctrl+O) or <b>Open organ directory</b>,<br>or drop a GGUF file or an organ "
                            "directory here.</p>")
                       : tr("<h3>Donors</h3><p>Open the models to take organs from: <b>File → Open donor</b> "
                            "(Ctrl+Shift+O),<br>or drop GGUF files or organ directories here.</p>"),
                   m_stack);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_tabs = new QTabWidget(m_stack);
    m_tabs->setTabsClosable(true);
    m_tabs->setMovable(true);
    m_tabs->setDocumentMode(true);
    connect(m_tabs, &QTabWidget::tabCloseRequested, this, &ModelPane::closeView);
    connect(m_tabs, &QTabWidget::currentChanged, this, &ModelPane::viewsChanged);
    m_stack->addWidget(m_empty);
    m_stack->addWidget(m_tabs);
    updatePage();
}

ModelView* ModelPane::currentView() const {
    return qobject_cast<ModelView*>(m_tabs->currentWidget());
}

QList<ModelView*> ModelPane::views() const {
    QList<ModelView*> out;
    for (int i = 0; i < m_tabs->count(); ++i) {
        if (auto* view = qobject_cast<ModelView*>(m_tabs->widget(i))) {
            out << view;
        }
    }
    return out;
}

void ModelPane::addView(ModelView* view, const QString& title, const QString& toolTip) {
    const int index = m_tabs->addTab(view, title);
    m_tabs->setTabToolTip(index, toolTip);
    m_tabs->setCurrentIndex(index);
    updatePage();
    emit viewsChanged();
}

void ModelPane::moveViewsTo(ModelPane& other) {
    while (m_tabs->count() > 0) {
        auto* view = qobject_cast<ModelView*>(m_tabs->widget(0));
        const QString title = m_tabs->tabText(0);
        const QString tip = m_tabs->tabToolTip(0);
        m_tabs->removeTab(0);
        other.addView(view, title, tip);
    }
    updatePage();
    emit viewsChanged();
}

void ModelPane::closeView(int index) {
    auto* view = qobject_cast<ModelView*>(m_tabs->widget(index));
    if (view == nullptr || (m_closeGuard && !m_closeGuard(view))) {
        return;
    }
    m_tabs->removeTab(m_tabs->indexOf(view));
    emit view->closing();
    view->deleteLater();
    updatePage();
    emit viewsChanged();
}

void ModelPane::updatePage() {
    m_stack->setCurrentIndex(m_tabs->count() > 0 ? 1 : 0);
    m_header->setVisible(m_tabs->count() > 0); // the empty page says it in large
}

QStringList droppedFiles(const QMimeData* data) {
    QStringList paths;
    for (const QUrl& url : data->urls()) {
        if (url.isLocalFile()) {
            paths << url.toLocalFile();
        }
    }
    return paths;
}

void ModelPane::dragEnterEvent(QDragEnterEvent* event) {
    if (!droppedFiles(event->mimeData()).isEmpty()) {
        event->acceptProposedAction();
    }
}

void ModelPane::dropEvent(QDropEvent* event) {
    event->acceptProposedAction();
    emit filesDropped(droppedFiles(event->mimeData()));
}

} // namespace organ::widgets
