#pragma once

#include <QString>

namespace organ {
class GgufModel;
}

namespace organ::model {

// What the window calls a model: its file's name without ".gguf" (and without the
// "-00001-of-00004" of a split set). Models' own general.name often repeats ("llama"), their
// files' names do not.
QString modelDisplayName(const GgufModel& model);

// "1 layer", "5 layers": a count with its noun in the right number.
QString countOf(qint64 n, const QString& one, const QString& many);

} // namespace organ::model
