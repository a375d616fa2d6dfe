#pragma once

// What a user cannot read: texts that are cut, elided or drawn over each other in a window as it
// is laid out now. Window tests run it on every page they show (see tst_window_layout).
#include <QAbstractButton>
#include <QAbstractScrollArea>
#include <QCoreApplication>
#include <QFontMetrics>
#include <QLabel>
#include <QScrollBar>
#include <QStringList>
#include <QTabBar>
#include <QTextDocument>
#include <QWidget>
#include <cmath>
#include <optional>
#include <qcustomplot.h>

namespace organ::testing {

namespace audit {

inline QString nameOf(const QObject* object) {
    const QString name = object->objectName();
    return QString::fromUtf8(object->metaObject()->className()) +
           (name.isEmpty() ? QString() : QStringLiteral(" '%1'").arg(name));
}

// What of `widget` shows: its rectangle in its window's coordinates, clipped by every
// ancestor (a scroll area's viewport clips what it scrolls; anything else cuts). Horizontally and
// vertically apart, so that a widget scrolled out of view up or down is not also "cut" sideways.
inline std::pair<std::pair<int, int>, std::pair<int, int>> shownSpans(const QWidget* widget) {
    const QPoint at = widget->mapTo(widget->window(), QPoint(0, 0));
    std::pair<int, int> x(at.x(), at.x() + widget->width());
    std::pair<int, int> y(at.y(), at.y() + widget->height());
    for (const QWidget* w = widget->parentWidget(); w != nullptr; w = w->parentWidget()) {
        const QPoint origin = w->mapTo(widget->window(), QPoint(0, 0));
        x = {std::max(x.first, origin.x()), std::min(x.second, origin.x() + w->width())};
        y = {std::max(y.first, origin.y()), std::min(y.second, origin.y() + w->height())};
        if (w->isWindow()) {
            break;
        }
    }
    return {x, y};
}

// Inside a scroll area or a tab bar, where scrolling shows what is out of view: in the
// directions it scrolls.
inline Qt::Orientations scrolled(const QWidget* widget) {
    Qt::Orientations directions;
    for (const QWidget* w = widget->parentWidget(); w != nullptr && !w->isWindow(); w = w->parentWidget()) {
        if (const auto* area = qobject_cast<const QAbstractScrollArea*>(w)) {
            directions |= Qt::Vertical;
            if (area->horizontalScrollBarPolicy() != Qt::ScrollBarAlwaysOff) {
                directions |= Qt::Horizontal;
            }
        } else if (qobject_cast<const QTabBar*>(w) != nullptr) {
            directions |= Qt::Horizontal | Qt::Vertical;
        }
    }
    return directions;
}

inline QString plainText(const QLabel* label) {
    if (Qt::mightBeRichText(label->text()) || label->textFormat() == Qt::RichText) {
        QTextDocument document;
        document.setHtml(label->text());
        return document.toPlainText();
    }
    return label->text();
}

inline void auditLabel(const QLabel* label, QStringList& problems) {
    if (label->text().isEmpty() || label->pixmap().isNull() == false) {
        return;
    }
    const QString what = nameOf(label) + QStringLiteral(" \"%1\"").arg(plainText(label).left(60));
    if (label->wordWrap()) {
        const int needed = label->heightForWidth(label->width());
        if (needed > label->height()) {
            problems << QStringLiteral("%1: %2 px tall, its text needs %3")
                            .arg(what)
                            .arg(label->height())
                            .arg(needed);
        }
    } else if (label->sizeHint().width() > label->width()) {
        problems << QStringLiteral("%1: %2 px wide, its text needs %3")
                        .arg(what)
                        .arg(label->width())
                        .arg(label->sizeHint().width());
    }
}

inline void auditButton(const QAbstractButton* button, QStringList& problems) {
    if (!button->text().isEmpty() && button->width() < button->minimumSizeHint().width()) {
        problems << QStringLiteral("%1 \"%2\": %3 px wide, its text needs %4")
                        .arg(nameOf(button), button->text())
                        .arg(button->width())
                        .arg(button->minimumSizeHint().width());
    }
}

// Every line of a text element is as wide as its rectangle allows, and the rectangle is in view.
inline void auditTextElement(QCustomPlot* plot, QCPTextElement* text, QStringList& problems) {
    if (!text->visible() || text->text().isEmpty()) {
        return;
    }
    const QFontMetrics metrics(text->font());
    const QRect needed = metrics.boundingRect(QRect(0, 0, 100000, 100000), Qt::AlignCenter, text->text());
    const QRect rect = text->outerRect();
    if (needed.width() > rect.width() + 1 || !plot->rect().contains(rect.adjusted(0, 0, -1, -1))) {
        problems << QStringLiteral("%1: text \"%2\" needs %3 px, has %4 px at x %5")
                        .arg(nameOf(plot), text->text().simplified())
                        .arg(needed.width())
                        .arg(rect.width())
                        .arg(rect.left());
    }
}

inline void auditLegend(QCustomPlot* plot, QCPLegend* legend, QStringList& problems) {
    if (!legend->visible() || legend->itemCount() == 0) {
        return;
    }
    const QRect box = legend->outerRect();
    if (!plot->rect().contains(box.adjusted(0, 0, -1, -1))) {
        problems << QStringLiteral("%1: its legend (%2 × %3 at %4, %5) is outside the chart")
                        .arg(nameOf(plot))
                        .arg(box.width())
                        .arg(box.height())
                        .arg(box.left())
                        .arg(box.top());
    }
    for (int i = 0; i < legend->itemCount(); ++i) {
        QCPAbstractLegendItem* item = legend->item(i);
        if (item == nullptr) { // an empty cell of a wrapped legend
            continue;
        }
        const QSize needed = item->minimumOuterSizeHint();
        const QRect has = item->outerRect();
        if (needed.width() > has.width() + 1 || needed.height() > has.height() + 1 ||
            !box.contains(has.adjusted(0, 0, -1, -1))) {
            auto* plottableItem = qobject_cast<QCPPlottableLegendItem*>(item);
            problems << QStringLiteral("%1: legend entry \"%2\" needs %3 × %4 px, has %5 × %6 at %7, %8 in a "
                                       "legend of %9 × %10 at %11, %12")
                                .arg(nameOf(plot), plottableItem != nullptr
                                                       ? plottableItem->plottable()->name()
                                                       : QString())
                                .arg(needed.width())
                                .arg(needed.height())
                                .arg(has.width())
                                .arg(has.height())
                                .arg(has.left())
                                .arg(has.top())
                                .arg(box.width())
                                .arg(box.height())
                                .arg(box.left())
                                .arg(box.top()) +
                            QStringLiteral(" (chart %1 tall, at least %2, its layout needs %3)")
                                .arg(plot->height())
                                .arg(plot->minimumHeight())
                                .arg(plot->plotLayout()->minimumOuterSizeHint().height());
        }
    }
}

// The labels of a text ticker (names on an axis): none runs into the next. Labels turned by
// the same angle lie parallel: they collide when their distance across the text is less than
// a line.
inline void auditTickLabels(QCustomPlot* plot, QCPAxis* axis, QStringList& problems) {
    auto ticker = axis->ticker().dynamicCast<QCPAxisTickerText>();
    if (!axis->visible() || !axis->tickLabels() || ticker.isNull()) {
        return;
    }
    const QFontMetrics metrics(axis->tickLabelFont());
    const double angle = qDegreesToRadians(axis->tickLabelRotation());
    const bool horizontal = axis->orientation() == Qt::Horizontal;
    std::optional<std::pair<double, QString>> previous;
    for (auto it = ticker->ticks().constBegin(); it != ticker->ticks().constEnd(); ++it) {
        if (!axis->range().contains(it.key())) {
            continue;
        }
        const double at = axis->coordToPixel(it.key());
        if (previous) {
            const double distance = std::abs(at - previous->first);
            const double widths =
                (metrics.horizontalAdvance(it.value()) + metrics.horizontalAdvance(previous->second)) / 2.0;
            const double across =
                horizontal ? distance * std::abs(std::sin(angle)) : distance * std::abs(std::cos(angle));
            const double along =
                horizontal ? distance * std::abs(std::cos(angle)) : distance * std::abs(std::sin(angle));
            const bool collide = horizontal && angle == 0
                                     ? distance < widths + 2
                                     : across < metrics.height() - 1 && along < 2 * widths;
            if (collide) {
                problems << QStringLiteral("%1: tick labels \"%2\" and \"%3\" overlap")
                                .arg(nameOf(plot), previous->second, it.value());
            }
        }
        previous = std::pair(at, it.value());
    }
}

// An axis's label is drawn centred along its axis: it must not run past the chart's edges.
inline void auditAxisLabel(QCustomPlot* plot, QCPAxis* axis, QStringList& problems) {
    if (!axis->visible() || axis->label().isEmpty()) {
        return;
    }
    const double length = QFontMetrics(axis->labelFont()).horizontalAdvance(axis->label());
    const QRect rect = axis->axisRect()->rect();
    const bool horizontal = axis->orientation() == Qt::Horizontal;
    const double centre = horizontal ? rect.center().x() : rect.center().y();
    const double room = horizontal ? plot->width() : plot->height();
    if (centre - length / 2 < -0.5 || centre + length / 2 > room + 0.5) {
        problems << QStringLiteral("%1: axis label \"%2\" needs %3 px, the chart has %4")
                        .arg(nameOf(plot), axis->label())
                        .arg(length)
                        .arg(room);
    }
}

inline void auditPlot(QCustomPlot* plot, QStringList& problems) {
    for (int e = 0; e < plot->plotLayout()->elementCount(); ++e) {
        if (auto* text = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(e))) {
            auditTextElement(plot, text, problems);
        }
    }
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
        if (auto* legend = qobject_cast<QCPLegend*>(element)) {
            auditLegend(plot, legend, problems);
        }
    }
    for (QCPAxisRect* rect : plot->axisRects()) {
        for (QCPAxis* axis : rect->axes()) {
            auditTickLabels(plot, axis, problems);
            auditAxisLabel(plot, axis, problems);
        }
    }
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
        if (auto* scale = qobject_cast<QCPColorScale*>(element)) {
            auditAxisLabel(plot, scale->axis(), problems);
        }
    }
}

} // namespace audit

// Every visible label, button, chart title, legend and named axis in `window`: what is cut or
// overlaps, each named. Lay out first (settle()).
inline QStringList unreadableTexts(QWidget* window) {
    QStringList problems;
    QList<QWidget*> widgets = window->findChildren<QWidget*>();
    for (QWidget* widget : widgets) {
        if (!widget->isVisibleTo(window) || widget->width() <= 0) {
            continue;
        }
        // Scrolled out of view is in reach; cut off is not.
        const auto [x, y] = audit::shownSpans(widget);
        const Qt::Orientations scrolls = audit::scrolled(widget);
        const bool cut = (x.second - x.first != widget->width() && !(scrolls & Qt::Horizontal)) ||
                         (y.second - y.first != widget->height() && !(scrolls & Qt::Vertical));
        if (cut &&
            (qobject_cast<QLabel*>(widget) != nullptr || qobject_cast<QAbstractButton*>(widget) != nullptr ||
             qobject_cast<QCustomPlot*>(widget) != nullptr)) {
            problems << QStringLiteral("%1: %2 × %3 of %4 × %5 px in view")
                            .arg(audit::nameOf(widget))
                            .arg(std::max(0, x.second - x.first))
                            .arg(std::max(0, y.second - y.first))
                            .arg(widget->width())
                            .arg(widget->height());
            continue;
        }
        if (auto* label = qobject_cast<QLabel*>(widget)) {
            audit::auditLabel(label, problems);
        } else if (auto* button = qobject_cast<QAbstractButton*>(widget)) {
            audit::auditButton(button, problems);
        } else if (auto* plot = qobject_cast<QCustomPlot*>(widget)) {
            audit::auditPlot(plot, problems);
        }
    }
    return problems;
}

} // namespace organ::testing
