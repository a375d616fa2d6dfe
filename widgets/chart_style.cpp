#include "chart_style.h"

#include <QEvent>
#include <QObject>
#include <qcustomplot.h>

namespace organ::widgets {
namespace {

void styleAxis(QCPAxis* axis, const QColor& text, const QColor& grid) {
    axis->setBasePen(QPen(text, 0));
    axis->setTickPen(QPen(text, 0));
    axis->setSubTickPen(QPen(text, 0));
    axis->setLabelColor(text);
    axis->setTickLabelColor(text);
    axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
    axis->grid()->setZeroLinePen(QPen(grid, 0));
}

void applyPalette(QCustomPlot* plot) {
    const QPalette& palette = plot->palette();
    const QColor text = palette.color(QPalette::WindowText);
    const QColor background = palette.color(QPalette::Base);
    QColor grid = text;
    grid.setAlphaF(0.25);
    plot->setBackground(background);
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
        if (auto* rect = qobject_cast<QCPAxisRect*>(element)) {
            for (QCPAxis* axis : rect->axes()) {
                styleAxis(axis, text, grid);
            }
        } else if (auto* scale = qobject_cast<QCPColorScale*>(element)) {
            styleAxis(scale->axis(), text, grid);
        } else if (auto* title = qobject_cast<QCPTextElement*>(element)) {
            title->setTextColor(text);
        } else if (auto* legend = qobject_cast<QCPLegend*>(element)) {
            legend->setBrush(background);
            legend->setTextColor(text);
            // A wrapped legend's grid may have empty cells: item() is null there.
            for (int i = 0; i < legend->itemCount(); ++i) {
                if (QCPAbstractLegendItem* item = legend->item(i)) {
                    item->setTextColor(text);
                }
            }
        }
    }
}

class PaletteFollower : public QObject {
public:
    using QObject::QObject;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::PaletteChange) {
            static_cast<QCustomPlot*>(watched)->replot(QCustomPlot::rpQueuedReplot);
        }
        return false;
    }
};

} // namespace

void followPalette(QCustomPlot* plot) {
    // Before every replot, so that elements added later (a colour scale, a legend item) follow too.
    QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] { applyPalette(plot); });
    plot->installEventFilter(new PaletteFollower(plot));
}

QSharedPointer<QCPAxisTicker> integerTicker() {
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    return ticker;
}

} // namespace organ::widgets
