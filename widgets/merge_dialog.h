#pragma once

#include "merge/merge_spec.h"

#include <QDialog>
#include <QStringList>
#include <map>
#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace organ::widgets {

class ParamCurveEditor;

// The Merge… dialog of a drop with Shift held (or a donor's "Merge into the recipient…"): the
// method of merge-v1 and its parameters for the recipient (the base) and each open donor, one of
// them as a curve over the layers when it should vary. It only asks: the caller adds the plan's
// merge operation. Models are named by path in what it gives back.
class MergeDialog : public QDialog {
    Q_OBJECT
public:
    struct Setup {
        QString recipient;                // the base, by path
        QStringList donors;               // every open donor, by path
        QString donor;                    // the one the tensors come from (checked)
        QString what;                     // "9 tensors of layer 3"
        std::uint32_t blocks = 1;         // the recipient's, for the curve
        std::optional<MergeSpec> planned; // the plan's merge, by path: its values come first
        std::map<QString, QString> unfit; // open donors none of the merged tensors fit, by path: why
        QStringList leftOut;              // why dragged tensors are left out of the merge, one each
    };
    explicit MergeDialog(const Setup& setup, QWidget* parent = nullptr);

    // The merge as chosen, models by path; valid once accepted.
    MergeSpec spec() const;
    // Why the fields make no merge (the merge spec's own words), empty when they do.
    QString problem() const;
    ParamCurveEditor* curve() const { return m_varying.curve; }

protected:
    // Shown at the size its wrapped texts need once they are filled in, and never smaller.
    void showEvent(QShowEvent* event) override;

private:
    struct Row {
        QString path;
        QString unfit; // why it cannot take part, when it cannot
        QCheckBox* use = nullptr;
        QDoubleSpinBox* weight = nullptr;
        QDoubleSpinBox* density = nullptr;
        QDoubleSpinBox* gamma = nullptr;
    };
    // The parameter the curve gives: "t", or a row's "weight", "density" or "gamma".
    struct CurveTarget {
        int row = -1; // -1: the whole merge's t
        QString name;
    };
    MergeMethod method() const;
    std::vector<CurveTarget> curveTargets() const;
    std::optional<CurveTarget> curveTarget() const;
    void update();
    void fillCurveTargets();
    void takePlanned(const MergeSpec& planned);
    QDoubleSpinBox* boxOf(const CurveTarget& target) const;
    void prepareCurve(const CurveTarget& target);

    // The whole merge's own parameters.
    struct Globals {
        QDoubleSpinBox* t = nullptr;
        QCheckBox* normalize = nullptr;
        QCheckBox* rescale = nullptr;
        QSpinBox* seed = nullptr;
    };
    // The parameter that varies over the layers: which, with how many points, and the curve.
    struct Varying {
        QComboBox* target = nullptr;
        QSpinBox* points = nullptr;
        ParamCurveEditor* curve = nullptr;
    };

    Setup m_setup;
    QComboBox* m_method = nullptr;
    QLabel* m_methodHint = nullptr;
    std::vector<Row> m_rows;
    Globals m_global;
    Varying m_varying;
    QLabel* m_problem = nullptr;
    QPushButton* m_ok = nullptr;
    bool m_updating = false;        // update() is filling the fields: their signals change nothing
    bool m_normalizeChosen = false; // by the user or the planned merge: a new method keeps it
    QString m_wantedCurve;          // the curve's target as last chosen, shown whenever it exists
    QString m_shownCurve;           // the target the curve draws now, empty when nothing varies
    std::map<QString, std::vector<double>> m_curves; // each target's curve as it was left
    // The planned merge's values the fields cannot show (filters, several rules), by target key:
    // kept as they are, their fields disabled, unless chosen to vary over the layers.
    std::map<QString, ParamValue> m_kept;
    QLabel* m_keptNote = nullptr;
};

} // namespace organ::widgets
