#pragma once

#include "quant/quantize_recipe.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;

namespace organ::widgets {

// The recipient's Quantize… dialog: a plan's quantize operation, with organ quantize's options
// (the file type, an importance matrix, the output tensor's and the token embedding's types,
// --pure, --leave-output-tensor, REGEX=TYPE overrides). It only asks: the caller adds the
// operation to the plan, and with "Quantize now…" goes on to assemble.
class QuantizeDialog : public QDialog {
    Q_OBJECT
public:
    enum class Choice { AddToPlan, QuantizeNow };

    // `model`: the recipient's path (the title names it, the matrix is looked for beside it);
    // `initial`: the plan's recipe, if any.
    QuantizeDialog(const QString& model, const QuantizeRecipe& initial, QWidget* parent = nullptr);

    QuantizeRecipe recipe() const { return m_recipe; }
    Choice choice() const { return m_choice; }

private:
    QComboBox* tensorTypeBox(const char* name, const std::optional<TensorType>& initial);
    // Reads the fields into m_recipe; the problem, shown in the dialog, when they do not make one.
    QString readRecipe();
    void finish(Choice choice);

    QComboBox* m_fileType = nullptr;
    QLineEdit* m_imatrix = nullptr;
    QComboBox* m_outputType = nullptr;
    QComboBox* m_embeddingType = nullptr;
    QLineEdit* m_tensorTypes = nullptr;
    QCheckBox* m_pure = nullptr;
    QCheckBox* m_leaveOutput = nullptr;
    QLabel* m_problem = nullptr;
    QuantizeRecipe m_recipe;
    Choice m_choice = Choice::AddToPlan;
};

} // namespace organ::widgets
