#pragma once

#include <QColor>
#include <QIcon>
#include <QString>
#include <string>
#include <string_view>

namespace organ {
class GgufModel;
}

namespace organ::model {

// What the window calls a model: its file's name without ".gguf" (and without the
// "-00001-of-00004" of a split set). Models' own general.name often repeats ("llama"), their
// files' names do not.
QString modelDisplayName(const GgufModel& model);

// The colour of a plan's n-th donor, wherever the plan is drawn (tree marks, heatmap
// outlines, legends): distinct from viridis, from each other and from the red selection.
QColor donorColor(int donor);
// The colour of tensors the plan purifies (never a donor's).
QColor purifyColor();
// The outline of tensors a plan merges.
QColor mergeColor();
// The donor's colour as a small square with a margin, for item views (rows in a run stay apart).
QIcon donorMark(int donor);
// A colour (the merge's, the purification's) as the same square.
QIcon colorMark(const QColor& color);

// A string from a file (a name, a key, a value, a message quoting them) as the window shows
// it: control characters and invalid UTF-8 escaped visibly (escapeText in the engine).
QString displayText(std::string_view raw);

// A measured number with `decimals` decimals, "—" when it is not finite (a NaN perplexity).
QString finiteNumber(double value, int decimals);

// `text` with a zero-width space where a run of characters without a space grows long (before an
// escape such as \xBD, or anywhere past 32 characters), so that a label wraps it.
QString breakableText(const QString& text);

// A model's greedy sample in rich text, on a line of its own: the prompt in italics, then what
// the model wrote after it, with a word saying so; empty when there is none. Long runs without a
// space (a sample of byte escapes) are breakable.
QString sampleHtml(const std::string& prompt, const std::string& continuation);

// "1 layer", "5 layers": a count with its noun in the right number.
QString countOf(qint64 n, const QString& one, const QString& many);

// A sentence put after a colon: its first word in lower case when it is a plain capitalized word
// ("None of …" → "none of …"); a name (a file, a tensor, "KL") is kept as it is.
QString afterColon(const QString& sentence);

} // namespace organ::model
