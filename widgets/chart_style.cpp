#include "chart_style.h"

#include <QEvent>
#include <QFontMetrics>
#include <QObject>
#include <QTimer>
#include <algorithm>
#include <cmath>
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

const char* const kFullText = "organFullText";

// `text` broken at spaces into lines of at most `width` pixels; a word wider than that stays whole.
QString wrapped(const QString& text, const QFontMetrics& metrics, int width) {
    QStringList lines;
    for (const QString& paragraph : text.split(u'\n')) {
        QString line;
        for (const QString& word : paragraph.split(u' ', Qt::SkipEmptyParts)) {
            const QString longer = line.isEmpty() ? word : line + u' ' + word;
            if (!line.isEmpty() && metrics.horizontalAdvance(longer) > width) {
                lines << line;
                line = word;
            } else {
                line = longer;
            }
        }
        lines << line;
    }
    return lines.join(u'\n');
}

void wrapTexts(QCustomPlot* plot, int width) {
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
        auto* text = qobject_cast<QCPTextElement*>(element);
        if (text == nullptr || !text->property(kFullText).isValid()) {
            continue;
        }
        const QString lines =
            wrapped(text->property(kFullText).toString(), QFontMetrics(text->font()), width);
        if (lines != text->text()) {
            text->setText(lines);
        }
    }
}

void fitLegends(QCustomPlot* plot, int width) {
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
        auto* legend = qobject_cast<QCPLegend*>(element);
        if (legend == nullptr || legend->itemCount() == 0 || legend->layout() != plot->plotLayout()) {
            continue;
        }
        int widest = 0;
        for (int i = 0; i < legend->itemCount(); ++i) {
            if (QCPAbstractLegendItem* item = legend->item(i)) {
                widest = std::max(widest, item->minimumOuterSizeHint().width());
            }
        }
        const int room = width - legend->margins().left() - legend->margins().right();
        const int columns = std::clamp((room + legend->columnSpacing()) / (widest + legend->columnSpacing()),
                                       1, legend->itemCount());
        if (columns != legend->wrap()) {
            legend->setWrap(columns);
            legend->setFillOrder(QCPLegend::foColumnsFirst, true); // rearranges the items by the wrap
        }
    }
}

// The least distance between two names on an axis, in its units (its range when there is one).
double smallestStep(QCPAxisTickerText& names, const QCPAxis* axis) {
    double step = axis->range().size();
    const QMap<double, QString>& ticks = names.ticks();
    for (auto it = ticks.keyBegin(), next = std::next(it); next != ticks.keyEnd(); ++it, ++next) {
        step = std::min(step, *next - *it);
    }
    return step;
}

// Names on a horizontal axis stay level while each has room beside the next; turned, they
// only need a line's height between them.
void turnCrowdedNames(QCustomPlot* plot) {
    for (QCPAxisRect* rect : plot->axisRects()) {
        for (QCPAxis* axis : rect->axes(QCPAxis::atBottom | QCPAxis::atTop)) {
            auto names = axis->ticker().dynamicCast<QCPAxisTickerText>();
            if (names.isNull() || names->ticks().size() < 2) {
                continue;
            }
            const QFontMetrics metrics(axis->tickLabelFont());
            int widest = 0;
            for (const QString& name : names->ticks()) {
                widest = std::max(widest, metrics.horizontalAdvance(name));
            }
            const double step = smallestStep(*names, axis);
            const int pixels = rect->width() > 0 ? rect->width() : plot->width();
            const double room = axis->range().size() > 0 ? step * pixels / axis->range().size() : 0;
            const double angle = room < widest + metrics.averageCharWidth() ? -40 : 0;
            if (axis->tickLabelRotation() != angle) {
                axis->setTickLabelRotation(angle);
            }
        }
    }
}

// After a layout: a wrapped text that sits in a column narrower than the chart (beside a colour
// scale) breaks again at its column's width, and the chart is laid out once more — a few times
// at most, as the column may narrow again once the text does.
void rewrapToColumns(QCustomPlot* plot) {
    for (int pass = 0; pass < 4; ++pass) {
        bool again = false;
        for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
            auto* text = qobject_cast<QCPTextElement*>(element);
            if (text == nullptr || !text->property(kFullText).isValid() || text->outerRect().width() <= 0) {
                continue;
            }
            const QFontMetrics metrics(text->font());
            const int room = text->outerRect().width() - text->margins().left() - text->margins().right();
            const QString lines = wrapped(text->property(kFullText).toString(), metrics, room);
            if (lines != text->text() &&
                metrics.boundingRect(QRect(0, 0, 100000, 100000), Qt::AlignCenter, text->text()).width() >
                    room) {
                text->setText(lines);
                again = true;
            }
        }
        if (!again) {
            return;
        }
        for (const auto phase :
             {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout}) {
            plot->plotLayout()->update(phase);
        }
    }
}

// After a layout: the chart is never made shorter than its titles and legends need at its
// width (a legend of more rows asks for more; QCustomPlot squeezes them when the axis rect's
// margins take more than it foresaw), nor than the minimum it was given before its first replot.
void keepTallEnough(QCustomPlot* plot) {
    const char* const given = "organGivenMinimumHeight";
    if (!plot->property(given).isValid()) {
        plot->setProperty(given, plot->minimumHeight());
    }
    int missing = 0;
    for (QCPLayoutElement* element : plot->plotLayout()->elements(false)) {
        if (qobject_cast<QCPLegend*>(element) != nullptr ||
            qobject_cast<QCPTextElement*>(element) != nullptr) {
            missing += std::max(0, element->minimumOuterSizeHint().height() - element->outerRect().height());
        }
    }
    // Names down a vertical axis (roles of a heatmap) each need a line.
    for (QCPAxisRect* rect : plot->axisRects()) {
        for (QCPAxis* axis : rect->axes(QCPAxis::atLeft | QCPAxis::atRight)) {
            auto names = axis->ticker().dynamicCast<QCPAxisTickerText>();
            if (names.isNull() || names->ticks().isEmpty() || axis->range().size() <= 0) {
                continue;
            }
            const double perUnit =
                (QFontMetrics(axis->tickLabelFont()).height() + 1) / smallestStep(*names, axis);
            missing = std::max(missing, int(std::ceil(perUnit * axis->range().size())) - rect->height());
        }
    }
    const int needed =
        std::max({plot->property(given).toInt(), plot->plotLayout()->minimumOuterSizeHint().height(),
                  missing > 0 ? plot->height() + missing : 0});
    if (plot->minimumHeight() != needed) {
        plot->setMinimumHeight(needed);
    }
}

// Replots a chart on an event of one type: a palette change (its colours follow), a show (one
// laid out while hidden, on a page not shown yet, was not fitted).
class ReplotOn : public QObject {
public:
    ReplotOn(QEvent::Type type, QObject* parent) : QObject(parent), m_type(type) {}

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == m_type) {
            static_cast<QCustomPlot*>(watched)->replot(QCustomPlot::rpQueuedReplot);
        }
        return false;
    }

private:
    QEvent::Type m_type;
};

} // namespace

void followPalette(QCustomPlot* plot) {
    // Before every replot, so that elements added later (a colour scale, a legend item) follow too.
    QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] { applyPalette(plot); });
    plot->installEventFilter(new ReplotOn(QEvent::PaletteChange, plot));
}

void fitChartTo(QCustomPlot* plot, int width) {
    width -= 12; // the margins of a text element and a legend
    wrapTexts(plot, width);
    fitLegends(plot, width);
    turnCrowdedNames(plot);
}

// A chart not shown has no width of its own (a hidden page's widgets may be 100 × 30): it is
// fitted when it shows and at every replot while it is shown.
void fitToWidth(QCustomPlot* plot) {
    plot->installEventFilter(new ReplotOn(QEvent::Show, plot));
    QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] {
        if (plot->isVisible()) {
            fitChartTo(plot, plot->width());
        }
    });
    QObject::connect(plot, &QCustomPlot::afterLayout, plot, [plot] {
        if (plot->isVisible()) {
            rewrapToColumns(plot);
            keepTallEnough(plot);
        }
    });
}

void setWrappedText(QCPTextElement* element, const QString& text) {
    element->setProperty(kFullText, text);
    element->setText(text);
}

QString wrappedSource(const QCPTextElement* element) {
    return element->property(kFullText).toString();
}

void setUnwrappedText(QCPTextElement* element, const QString& text) {
    element->setProperty(kFullText, QVariant());
    element->setText(text);
}

void setScreenOnly(QCPAbstractItem* item) {
    item->setProperty("organScreenOnly", true);
}

bool isScreenOnly(const QCPAbstractItem* item) {
    return item->property("organScreenOnly").toBool();
}

QSharedPointer<QCPAxisTicker> integerTicker() {
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    return ticker;
}

QCPTextElement* addChartTitle(QCustomPlot* plot, const QString& text) {
    plot->plotLayout()->insertRow(0);
    auto* title = new QCPTextElement(plot, text, QFont(plot->font().family(), 10, QFont::Bold));
    plot->plotLayout()->addElement(0, 0, title);
    return title;
}

void legendBelow(QCustomPlot* plot) {
    plot->legend->setVisible(true);
    plot->legend->setFont(QFont(plot->font().family(), 8));
    plot->legend->setBorderPen(Qt::NoPen);
    plot->axisRect()->insetLayout()->take(plot->legend);
    plot->plotLayout()->addElement(2, 0, plot->legend);
    plot->plotLayout()->setRowStretchFactor(2, 0.001);
    plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
}

void redrawSoon(QObject* context, bool& pending, int delayMs, std::function<void()> redraw) {
    if (pending) {
        return;
    }
    pending = true;
    QTimer::singleShot(delayMs, context, [&pending, redraw = std::move(redraw)] {
        pending = false;
        redraw();
    });
}

} // namespace organ::widgets
