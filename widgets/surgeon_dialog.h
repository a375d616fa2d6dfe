#pragma once

#include "surgeon/surgeon.h"

#include <QDialog>
#include <QStringList>
#include <optional>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace organ::widgets {

// Auto-surgeon…: what the search looks for (prune blocks, merge weights with donors, the best
// organs from donors), on which text and by which objective, its budget, seed and constraints. It
// only asks: the caller runs the search. Models are named by path.
class SurgeonDialog : public QDialog {
    Q_OBJECT
public:
    struct Setup {
        QString recipient;        // by path
        QStringList models;       // every other open model, by path (donors and references)
        QStringList donors;       // those checked as donors at first
        std::uint32_t blocks = 1; // the recipient's
    };
    explicit SurgeonDialog(const Setup& setup, QWidget* parent = nullptr);

    // The search as asked (the text not read yet: textPath()), valid once accepted.
    SurgeonRequest request() const;
    QStringList donors() const;
    QString reference() const; // empty: the objective is the NLL
    QString textPath() const;  // empty: the built-in text of vital signs
    double holdout() const;    // the share of the text held out
    // Why the fields make no search, empty when they do.
    QString problem() const;

private:
    SurgeonGoal goal() const;
    void update();

    Setup m_setup;
    QComboBox* m_goal = nullptr;
    QSpinBox* m_prune = nullptr;
    QSpinBox* m_beam = nullptr;
    QComboBox* m_method = nullptr;
    QListWidget* m_donors = nullptr;
    QLineEdit* m_text = nullptr;
    QDoubleSpinBox* m_holdout = nullptr;
    QSpinBox* m_chunk = nullptr;
    QComboBox* m_objective = nullptr;
    QSpinBox* m_evaluations = nullptr;
    QSpinBox* m_seconds = nullptr;
    QSpinBox* m_seed = nullptr;
    QSpinBox* m_maxBlocks = nullptr;
    QDoubleSpinBox* m_maxMegabytes = nullptr;
    QLabel* m_problem = nullptr;
    QPushButton* m_ok = nullptr;
};

} // namespace organ::widgets
