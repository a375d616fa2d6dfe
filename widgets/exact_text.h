#pragma once

#include <QPlainTextEdit>
#include <QTextDocument>

namespace organ::widgets {

// The text of a QPlainTextEdit as typed: toPlainText() turns no-break spaces into spaces, which
// would change a tokenizer's input or a chat template. Paragraphs end with '\n'.
inline QString exactText(const QPlainTextEdit& edit) {
    QString raw = edit.document()->toRawText();
    raw.replace(QChar::ParagraphSeparator, u'\n');
    return raw;
}

} // namespace organ::widgets
