#include "display_names.h"

#include "gguf/gguf_model.h"
#include "support/text_safety.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QPainter>
#include <QPixmap>
#include <QRegularExpression>
#include <algorithm>
#include <cmath>

namespace organ::model {

QString modelDisplayName(const GgufModel& model) {
    QString name = QFileInfo(QString::fromStdString(model.path())).completeBaseName();
    static const QRegularExpression shard(QStringLiteral("-\\d{5}-of-\\d{5}$"));
    name.remove(shard);
    return name;
}

QColor donorColor(int donor) {
    static const QColor colors[] = {QColor(0xff, 0x8c, 0x00), QColor(0xe0, 0x40, 0xe0),
                                    QColor(0x00, 0xd0, 0xff), QColor(0xff, 0x69, 0xb4),
                                    QColor(0x8b, 0x45, 0x13)};
    return colors[static_cast<std::size_t>(donor) % std::size(colors)];
}

QColor purifyColor() {
    return QColor(0x32, 0xcd, 0x32);
}

QColor mergeColor() {
    return QColor(0x8a, 0x2b, 0xe2);
}

QIcon colorMark(const QColor& color) {
    QPixmap mark(12, 12);
    mark.fill(Qt::transparent);
    QPainter painter(&mark);
    painter.setPen(QPen(color.darker(140), 1));
    painter.setBrush(color);
    painter.drawRect(1, 2, 9, 8);
    return QIcon(mark);
}

QIcon donorMark(int donor) {
    return colorMark(donorColor(donor));
}

QString displayText(std::string_view raw) {
    return QString::fromStdString(escapeText(raw));
}

QString countOf(qint64 n, const QString& one, const QString& many) {
    return QString::number(n) + u' ' + (n == 1 ? one : many);
}

QString afterColon(const QString& sentence) {
    const qsizetype end = sentence.indexOf(u' ');
    const QString word = sentence.left(end < 0 ? sentence.size() : end);
    const bool plain =
        word == u"A" || (word.size() >= 2 && word.front().isUpper() &&
                         std::all_of(word.begin() + 1, word.end(), [](QChar c) { return c.isLower(); }));
    return plain ? word.front().toLower() + sentence.mid(1) : sentence;
}

QString breakableText(const QString& text) {
    constexpr int kEscapeRun = 16; // a break may come before an escape (\xBD) after this many
    constexpr int kLongestRun = 32;
    QString out;
    out.reserve(text.size() + text.size() / kEscapeRun);
    int run = 0; // characters since the last space or break
    for (const QChar c : text) {
        if (c.isSpace()) {
            run = 0;
        } else {
            if ((run >= kEscapeRun && c == u'\\') || run >= kLongestRun) {
                out += QChar(0x200B);
                run = 0;
            }
            ++run;
        }
        out += c;
    }
    return out;
}

QString sampleHtml(const std::string& prompt, const std::string& continuation) {
    if (continuation.empty()) {
        return {};
    }
    return QCoreApplication::translate("organ::model", "<br><b>Sample</b> (after the prompt in italics, the "
                                                       "model's own words): <i>%1</i>%2")
        .arg(breakableText(displayText(prompt)).toHtmlEscaped(),
             breakableText(displayText(continuation)).toHtmlEscaped());
}

QString finiteNumber(double value, int decimals) {
    return std::isfinite(value) ? QString::number(value, 'f', decimals) : QStringLiteral("—");
}

} // namespace organ::model
