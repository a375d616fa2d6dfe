#include "merge_dialog.h"

#include "param_curve_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <limits>
#include <numeric>

namespace organ::widgets {
namespace {

// The methods a merge operation takes (passthrough is made of layer operations), in mergekit's order.
constexpr MergeMethod kMethods[] = {
    MergeMethod::Linear,      MergeMethod::Slerp,           MergeMethod::TaskArithmetic,
    MergeMethod::Ties,        MergeMethod::DareLinear,      MergeMethod::DareTies,
    MergeMethod::Breadcrumbs, MergeMethod::BreadcrumbsTies, MergeMethod::ModelStock};

// What each method does, in a line; the methods of task vectors by how they thin them
// (merge/merge_method.h).
QString methodHint(MergeMethod method) {
    if (method == MergeMethod::Linear) {
        return MergeDialog::tr("the weighted mean of the models, the recipient among them");
    }
    if (method == MergeMethod::Slerp) {
        return MergeDialog::tr("spherical interpolation from the recipient (t = 0) to one donor (t = 1)");
    }
    if (method == MergeMethod::ModelStock) {
        return MergeDialog::tr("the recipient moved towards the donors' mean by the angle between their "
                               "differences from it (two donors or more)");
    }
    QString thinned;
    switch (sparsifyOf(method)) {
    case Sparsify::Magnitude:
        thinned = MergeDialog::tr(", each cut to its largest values (density)");
        break;
    case Sparsify::Bernoulli:
        thinned = MergeDialog::tr(", each thinned at random to density (seeded) and rescaled");
        break;
    case Sparsify::Breadcrumbs:
        thinned = MergeDialog::tr(
            ", each stripped of its largest (gamma) and smallest values so that density remains");
        break;
    case Sparsify::None:
        break;
    }
    return MergeDialog::tr("the recipient plus the donors' differences from it%1%2, weighted")
        .arg(thinned, usesSignConsensus(method) ? MergeDialog::tr(", a sign elected per value") : QString());
}

QDoubleSpinBox* numberBox(QWidget* parent, const QString& name, double low, double high, double value) {
    auto* box = new QDoubleSpinBox(parent);
    box->setObjectName(name);
    box->setDecimals(3);
    box->setRange(low, high);
    box->setSingleStep(0.05);
    box->setValue(value);
    return box;
}

// A parameter's value where a spin box can show it: a number, or the first point of a curve.
std::optional<double> firstValue(const std::map<std::string, ParamValue>& parameters, const char* name) {
    const auto it = parameters.find(name);
    if (it == parameters.end() || it->second.rules.empty() || it->second.rules.front().points.empty()) {
        return std::nullopt;
    }
    return it->second.rules.front().points.front();
}

// The points of a parameter that varies over the blocks (a gradient for every tensor), else none.
std::optional<std::vector<double>> curveOf(const std::map<std::string, ParamValue>& parameters,
                                           const QString& name) {
    const auto it = parameters.find(name.toStdString());
    if (it == parameters.end() || it->second.rules.size() != 1 || !it->second.rules.front().filter.empty() ||
        it->second.rules.front().points.size() < 2) {
        return std::nullopt;
    }
    return it->second.rules.front().points;
}

// What a curve target's item holds: "row:name" ("-1:t" for the whole merge's t).
QString targetKey(int row, const QString& name) {
    return QString::number(row) + QLatin1Char(':') + name;
}

// Whether a spin box (one number) or the curve (one gradient for every tensor) shows the value.
bool fieldShows(const ParamValue& value) {
    return value.rules.size() == 1 && value.rules.front().filter.empty() &&
           !value.rules.front().points.empty();
}

// A value as the plan gives it: "self_attn: 0.1; otherwise 0.9", a gradient's points joined by →.
QString valueText(const ParamValue& value) {
    QStringList rules;
    for (const ParamRule& rule : value.rules) {
        QStringList points;
        for (const double p : rule.points) {
            points << QString::number(p, 'g', 4);
        }
        const QString gradient = points.join(QStringLiteral(" → "));
        rules << (rule.filter.empty()
                      ? (value.rules.size() > 1 ? MergeDialog::tr("otherwise %1").arg(gradient) : gradient)
                      : QStringLiteral("%1: %2").arg(QString::fromStdString(rule.filter), gradient));
    }
    return rules.join(QStringLiteral("; "));
}

} // namespace

MergeDialog::MergeDialog(const Setup& setup, QWidget* parent) : QDialog(parent), m_setup(setup) {
    setObjectName(QStringLiteral("mergeDialog"));
    setWindowTitle(tr("Merge into %1").arg(QFileInfo(setup.recipient).fileName()));
    // The method and the models on the left, what varies over the layers on the right: the dialog
    // stays short enough for a laptop's screen.
    auto* outer = new QVBoxLayout(this);
    auto* columns = new QHBoxLayout;
    outer->addLayout(columns, 1);
    auto* layout = new QVBoxLayout;
    columns->addLayout(layout, 3);
    auto* intro = new QLabel(
        tr("Merges %1 (chosen in <b>%2</b>) into the recipient <b>%3</b> as mergekit does (merge-v1): each "
           "tensor with the tensors of its name in every model checked below, whatever their types, written "
           "in the recipient's type. Nothing is written until you assemble; <i>Check chimera</i> takes the "
           "merge's vital signs first.")
            .arg(setup.what.toHtmlEscaped(), QFileInfo(setup.donor).fileName().toHtmlEscaped(),
                 QFileInfo(setup.recipient).fileName().toHtmlEscaped()),
        this);
    intro->setWordWrap(true);
    intro->setMinimumWidth(520);
    layout->addWidget(intro);
    if (!setup.leftOut.isEmpty()) {
        auto* left = new QLabel(tr("Left out: %1 of the dragged tensors (%2%3).")
                                    .arg(setup.leftOut.size())
                                    .arg(setup.leftOut.front().toHtmlEscaped(),
                                         setup.leftOut.size() > 1 ? tr("; and so on") : QString()),
                                this);
        left->setObjectName(QStringLiteral("mergeLeftOut"));
        left->setWordWrap(true);
        left->setToolTip(setup.leftOut.join(u'\n'));
        layout->addWidget(left);
    }
    if (setup.planned) {
        auto* note = new QLabel(tr("The plan merges already (a plan merges once): these tensors join it, and "
                                   "what is chosen here applies to all of them."),
                                this);
        note->setWordWrap(true);
        layout->addWidget(note);
    }

    auto* methodRow = new QHBoxLayout;
    methodRow->addWidget(new QLabel(tr("Method"), this));
    m_method = new QComboBox(this);
    m_method->setObjectName(QStringLiteral("mergeMethod"));
    for (const MergeMethod m : kMethods) {
        m_method->addItem(QString::fromUtf8(mergeMethodName(m)), int(m));
    }
    methodRow->addWidget(m_method, 1);
    layout->addLayout(methodRow);
    m_methodHint = new QLabel(this);
    m_methodHint->setWordWrap(true);
    layout->addWidget(m_methodHint);

    auto* models = new QGroupBox(tr("Models"), this);
    auto* grid = new QGridLayout(models);
    grid->addWidget(new QLabel(tr("Model"), models), 0, 0);
    grid->addWidget(new QLabel(tr("Weight"), models), 0, 1);
    grid->addWidget(new QLabel(tr("Density"), models), 0, 2);
    grid->addWidget(new QLabel(tr("Gamma"), models), 0, 3);
    QStringList paths{setup.recipient};
    for (const QString& donor : setup.donors) {
        if (donor != setup.recipient && !paths.contains(donor)) {
            paths << donor;
        }
    }
    for (int k = 0; k < paths.size(); ++k) {
        Row row;
        row.path = paths[k];
        const QString name = QFileInfo(paths[k]).fileName();
        row.use = new QCheckBox(k == 0 ? tr("%1 (recipient, the base)").arg(name) : name, models);
        row.use->setObjectName(QStringLiteral("mergeUse_%1").arg(k));
        row.use->setChecked(k == 0 || paths[k] == setup.donor);
        if (const auto unfit = setup.unfit.find(paths[k]); unfit != setup.unfit.end() && k > 0) {
            row.unfit = unfit->second;
            row.use->setChecked(false);
            row.use->setText(tr("%1 (cannot take part)").arg(name));
            row.use->setToolTip(row.unfit);
        }
        row.weight = numberBox(models, QStringLiteral("mergeWeight_%1").arg(k), -10, 10, k == 0 ? 0.5 : 0.5);
        row.density = numberBox(models, QStringLiteral("mergeDensity_%1").arg(k), 0, 1, 0.5);
        row.gamma = numberBox(models, QStringLiteral("mergeGamma_%1").arg(k), 0, 1, 0.01);
        grid->addWidget(row.use, k + 1, 0);
        grid->addWidget(row.weight, k + 1, 1);
        grid->addWidget(row.density, k + 1, 2);
        grid->addWidget(row.gamma, k + 1, 3);
        m_rows.push_back(row);
    }
    layout->addWidget(models);

    auto* global = new QHBoxLayout;
    // t beyond [0, 1] extrapolates; the spec allows it, and a plan may say it.
    m_global.t = numberBox(this, QStringLiteral("mergeT"), -10, 10, 0.5);
    global->addWidget(new QLabel(tr("t"), this));
    global->addWidget(m_global.t);
    m_global.normalize = new QCheckBox(tr("normalize the weights"), this);
    m_global.normalize->setObjectName(QStringLiteral("mergeNormalize"));
    global->addWidget(m_global.normalize);
    m_global.rescale = new QCheckBox(tr("rescale"), this);
    m_global.rescale->setObjectName(QStringLiteral("mergeRescale"));
    m_global.rescale->setChecked(true);
    global->addWidget(m_global.rescale);
    m_global.seed = new QSpinBox(this);
    m_global.seed->setObjectName(QStringLiteral("mergeSeed"));
    m_global.seed->setRange(0, std::numeric_limits<int>::max());
    global->addWidget(new QLabel(tr("seed"), this));
    global->addWidget(m_global.seed);
    global->addStretch(1);
    layout->addLayout(global);
    layout->addStretch(1);

    auto* varies = new QGroupBox(tr("Varies over the layers"), this);
    auto* curveLayout = new QVBoxLayout(varies);
    auto* curveRow = new QHBoxLayout;
    m_varying.target = new QComboBox(varies);
    m_varying.target->setObjectName(QStringLiteral("mergeCurveParam"));
    curveRow->addWidget(m_varying.target, 1);
    curveRow->addWidget(new QLabel(tr("control points"), varies));
    m_varying.points = new QSpinBox(varies);
    m_varying.points->setObjectName(QStringLiteral("mergeCurvePoints"));
    m_varying.points->setRange(2, 16);
    m_varying.points->setValue(3);
    curveRow->addWidget(m_varying.points);
    curveLayout->addLayout(curveRow);
    auto* curveHint =
        new QLabel(tr("Drag a point up or down (or click it and use the arrow keys; double-click it to "
                      "type a value): the dots are the values the layers get, as a mergekit gradient "
                      "gives them."),
                   varies);
    curveHint->setWordWrap(true);
    curveLayout->addWidget(curveHint);
    m_varying.curve = new ParamCurveEditor(varies);
    m_varying.curve->setBlocks(setup.blocks);
    m_varying.points->setMaximum(m_varying.curve->maxPointCount());
    m_varying.curve->setPoints({0.5, 0.5, 0.5});
    curveLayout->addWidget(m_varying.curve, 1);
    columns->addWidget(varies, 2);

    m_keptNote = new QLabel(this);
    m_keptNote->setObjectName(QStringLiteral("mergeKept"));
    m_keptNote->setWordWrap(true);
    m_keptNote->hide();
    outer->addWidget(m_keptNote);
    m_problem = new QLabel(this);
    m_problem->setObjectName(QStringLiteral("mergeProblem"));
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: #c0392b"));
    outer->addWidget(m_problem);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_ok = buttons->button(QDialogButtonBox::Ok);
    m_ok->setText(tr("Add to plan"));
    m_ok->setObjectName(QStringLiteral("mergeAdd"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    outer->addWidget(buttons);

    if (setup.planned) {
        takePlanned(*setup.planned);
    } else {
        m_global.normalize->setChecked(normalizesByDefault(method()));
    }
    connect(m_method, &QComboBox::currentIndexChanged, this, [this] {
        // The method's default, until normalize is chosen (or the planned merge says it).
        if (!m_normalizeChosen) {
            const QSignalBlocker block(m_global.normalize);
            m_global.normalize->setChecked(normalizesByDefault(method()));
        }
        update();
    });
    connect(m_global.normalize, &QCheckBox::toggled, this, [this] { m_normalizeChosen = true; });
    for (const Row& row : m_rows) {
        connect(row.use, &QCheckBox::toggled, this, &MergeDialog::update);
        for (QDoubleSpinBox* box : {row.weight, row.density, row.gamma}) {
            connect(box, &QDoubleSpinBox::valueChanged, this, &MergeDialog::update);
        }
    }
    connect(m_global.t, &QDoubleSpinBox::valueChanged, this, &MergeDialog::update);
    connect(m_global.normalize, &QCheckBox::toggled, this, &MergeDialog::update);
    connect(m_global.rescale, &QCheckBox::toggled, this, &MergeDialog::update);
    connect(m_varying.target, &QComboBox::currentIndexChanged, this, [this] {
        // The user's choice, kept while another method hides it and shown again when it returns.
        m_wantedCurve = m_varying.target->currentData().toString();
        // The curve left is kept for its parameter, whose field takes the curve's mean meanwhile
        // (its first point would stand for all the layers).
        if (!m_shownCurve.isEmpty()) {
            const std::vector<double> left = m_varying.curve->points();
            m_curves[m_shownCurve] = left;
            const int row = m_shownCurve.section(QLatin1Char(':'), 0, 0).toInt();
            if (row < int(m_rows.size())) {
                boxOf({row, m_shownCurve.section(QLatin1Char(':'), 1)})
                    ->setValue(std::accumulate(left.begin(), left.end(), 0.0) / double(left.size()));
            }
        }
        m_shownCurve.clear();
        // A parameter that starts to vary starts flat at the value it had, or as its curve was.
        if (const auto target = curveTarget()) {
            prepareCurve(*target);
            m_shownCurve = targetKey(target->row, target->name);
            if (const auto kept = m_curves.find(m_shownCurve); kept != m_curves.end()) {
                const QSignalBlocker block(m_varying.points);
                m_varying.points->setValue(int(kept->second.size()));
                m_varying.curve->setPoints(kept->second);
            } else {
                m_varying.curve->setPoints(
                    std::vector<double>(std::size_t(m_varying.points->value()), boxOf(*target)->value()));
            }
        }
        update();
    });
    connect(m_varying.points, &QSpinBox::valueChanged, m_varying.curve, &ParamCurveEditor::setPointCount);
    // The field of the parameter that varies shows the curve's mean, whatever shaped the curve.
    connect(m_varying.curve, &ParamCurveEditor::pointsChanged, this, [this] {
        const auto target = curveTarget();
        if (target && m_shownCurve == targetKey(target->row, target->name)) {
            const std::vector<double>& points = m_varying.curve->points();
            QDoubleSpinBox* box = boxOf(*target);
            const QSignalBlocker block(box);
            box->setValue(std::accumulate(points.begin(), points.end(), 0.0) / double(points.size()));
        }
    });
    connect(m_varying.curve, &ParamCurveEditor::pointsChanged, this, &MergeDialog::update);
    update();
}

void MergeDialog::showEvent(QShowEvent* event) {
    setMinimumSize(sizeHint());
    resize(sizeHint());
    QDialog::showEvent(event);
}

MergeMethod MergeDialog::method() const {
    return MergeMethod(m_method->currentData().toInt());
}

std::vector<MergeDialog::CurveTarget> MergeDialog::curveTargets() const {
    std::vector<CurveTarget> out;
    const MergeMethod m = method();
    if (takesParameter(m, "t")) {
        out.push_back({-1, QStringLiteral("t")});
    }
    for (int k = 0; k < int(m_rows.size()); ++k) {
        const bool merged = m_rows[std::size_t(k)].use->isChecked() && (k > 0 || !needsBase(m));
        for (const char* name : {"weight", "density", "gamma"}) {
            if (merged && takesParameter(m, name)) {
                out.push_back({k, QString::fromLatin1(name)});
            }
        }
    }
    return out;
}

std::optional<MergeDialog::CurveTarget> MergeDialog::curveTarget() const {
    const QString key = m_varying.target->currentData().toString();
    for (const CurveTarget& t : curveTargets()) {
        if (targetKey(t.row, t.name) == key) {
            return t;
        }
    }
    return std::nullopt;
}

void MergeDialog::fillCurveTargets() {
    const QSignalBlocker block(m_varying.target);
    m_varying.target->clear();
    m_varying.target->addItem(tr("nothing: every layer gets the numbers above"), QString());
    for (const CurveTarget& t : curveTargets()) {
        m_varying.target->addItem(
            t.row < 0 ? tr("t")
                      : tr("%1 of %2").arg(t.name, QFileInfo(m_rows[std::size_t(t.row)].path).fileName()),
            targetKey(t.row, t.name));
        if (targetKey(t.row, t.name) == m_wantedCurve) {
            m_varying.target->setCurrentIndex(m_varying.target->count() - 1);
        }
    }
}

void MergeDialog::takePlanned(const MergeSpec& planned) {
    // A value neither a field nor the curve shows is kept as the plan gives it.
    auto keep = [this](int row, const QString& name, const std::map<std::string, ParamValue>& parameters) {
        const auto it = parameters.find(name.toStdString());
        if (it != parameters.end() &&
            (!fieldShows(it->second) || it->second.rules.front().points.size() > 1)) {
            m_kept[targetKey(row, name)] = it->second;
        }
    };
    m_method->setCurrentIndex(std::max(0, m_method->findData(int(planned.method))));
    // The planned merge's models, and the donor whose tensors are being merged now.
    for (Row& row : m_rows) {
        row.use->setChecked(row.path == m_setup.donor ||
                            (row.path.toStdString() == planned.base && !needsBase(planned.method)));
    }
    std::optional<CurveTarget> curve;
    std::vector<double> points;
    for (const MergeModel& m : planned.models) {
        for (int k = 0; k < int(m_rows.size()); ++k) {
            Row& row = m_rows[std::size_t(k)];
            if (row.path.toStdString() != m.model) {
                continue;
            }
            row.use->setChecked(true);
            for (auto [name, box] : {std::pair{"weight", row.weight}, std::pair{"density", row.density},
                                     std::pair{"gamma", row.gamma}}) {
                auto value = firstValue(m.parameters, name);
                if (!value) {
                    value = firstValue(planned.parameters, name);
                }
                if (value) {
                    box->setValue(*value);
                }
                if (const auto c = curveOf(m.parameters, QString::fromLatin1(name)); c && !curve) {
                    curve = CurveTarget{k, QString::fromLatin1(name)};
                    points = *c;
                } else {
                    keep(k, QString::fromLatin1(name), m.parameters);
                }
            }
        }
    }
    if (const auto t = firstValue(planned.parameters, "t")) {
        m_global.t->setValue(*t);
    }
    if (const auto c = curveOf(planned.parameters, QStringLiteral("t")); c && !curve) {
        curve = CurveTarget{-1, QStringLiteral("t")};
        points = *c;
    } else {
        keep(-1, QStringLiteral("t"), planned.parameters);
    }
    m_global.normalize->setChecked(planned.normalize.value_or(normalizesByDefault(planned.method)));
    m_normalizeChosen = planned.normalize.has_value();
    m_global.rescale->setChecked(planned.rescale.value_or(true));
    m_global.seed->setValue(
        int(std::min<std::uint64_t>(planned.seed, std::uint64_t(m_global.seed->maximum()))));
    if (curve) {
        m_wantedCurve = targetKey(curve->row, curve->name);
    }
    fillCurveTargets();
    if (curve) {
        m_varying.target->setCurrentIndex(
            std::max(0, m_varying.target->findData(targetKey(curve->row, curve->name))));
        // A plan's gradient may have more points than layers: it is shown as it is.
        m_varying.points->setMaximum(std::max(m_varying.curve->maxPointCount(), int(points.size())));
        m_varying.points->setValue(int(points.size()));
        prepareCurve(*curve);
        m_shownCurve = targetKey(curve->row, curve->name);
        m_varying.curve->setPoints(points);
        // Its field shows the curve's mean, as while the curve is shaped (not the first point).
        QDoubleSpinBox* box = boxOf(*curve);
        const QSignalBlocker block(box);
        box->setValue(std::accumulate(points.begin(), points.end(), 0.0) / double(points.size()));
    }
}

QDoubleSpinBox* MergeDialog::boxOf(const CurveTarget& target) const {
    if (target.row < 0) {
        return m_global.t;
    }
    const Row& row = m_rows[std::size_t(target.row)];
    return target.name == QLatin1String("weight")    ? row.weight
           : target.name == QLatin1String("density") ? row.density
                                                     : row.gamma;
}

// A weight is drawn from −1 to 2 (a negative weight subtracts a model), t, density and gamma from
// 0 to 1; each may take what its field takes (a weight or t from −10 to 10), the drawing widened.
void MergeDialog::prepareCurve(const CurveTarget& target) {
    const QDoubleSpinBox* box = boxOf(target);
    if (target.name == QLatin1String("weight")) {
        m_varying.curve->setValueRange(-1, 2);
    } else {
        m_varying.curve->setValueRange(0, 1);
    }
    m_varying.curve->setLimits(box->minimum(), box->maximum());
    m_varying.curve->setValueLabel(target.row < 0 ? QStringLiteral("t") : target.name);
}

MergeSpec MergeDialog::spec() const {
    MergeSpec spec;
    spec.method = method();
    const bool withBase = needsBase(spec.method);
    if (withBase) {
        spec.base = m_rows.front().path.toStdString();
    }
    const auto curve = curveTarget();
    auto value = [&](int row, const QString& name, double number) {
        if (curve && curve->row == row && curve->name == name) {
            ParamValue v;
            v.rules.push_back({std::string(), m_varying.curve->points()});
            return v;
        }
        if (const auto kept = m_kept.find(targetKey(row, name)); kept != m_kept.end()) {
            return kept->second;
        }
        return ParamValue::number(number);
    };
    for (int k = 0; k < int(m_rows.size()); ++k) {
        const Row& row = m_rows[std::size_t(k)];
        if (!row.use->isChecked() || (k == 0 && withBase)) {
            continue;
        }
        MergeModel model;
        model.model = row.path.toStdString();
        for (auto [name, box] : {std::pair{"weight", row.weight}, std::pair{"density", row.density},
                                 std::pair{"gamma", row.gamma}}) {
            if (takesParameter(spec.method, name)) {
                model.parameters[name] = value(k, QString::fromLatin1(name), box->value());
            }
        }
        spec.models.push_back(std::move(model));
    }
    if (takesParameter(spec.method, "t")) {
        spec.parameters["t"] = value(-1, QStringLiteral("t"), m_global.t->value());
    }
    if (takesParameter(spec.method, "normalize")) {
        spec.normalize = m_global.normalize->isChecked();
    }
    if (takesParameter(spec.method, "rescale")) {
        spec.rescale = m_global.rescale->isChecked();
    }
    if (usesSeed(spec.method)) {
        spec.seed = std::uint64_t(m_global.seed->value());
    }
    return spec;
}

QString MergeDialog::problem() const {
    const MergeSpec s = spec();
    if (s.models.empty() || std::none_of(s.models.begin(), s.models.end(), [&](const MergeModel& m) {
            return m.model == m_setup.donor.toStdString();
        })) {
        return tr("Check %1: the tensors come from it").arg(QFileInfo(m_setup.donor).fileName());
    }
    if (const auto problem = mergeSpecProblem(s)) {
        return QString::fromStdString(*problem);
    }
    // Each layer's parameters as the plan will resolve them (a curve's weights may sum to 0 at
    // one layer only), and the tensors outside the blocks'.
    // The error names the place, not a tensor the user may not be merging.
    std::vector<std::pair<std::string, std::string>> places;
    for (std::uint32_t l = 0; l < m_setup.blocks; ++l) {
        places.emplace_back("blk." + std::to_string(l) + ".attn_q.weight", "layer " + std::to_string(l));
    }
    places.emplace_back("token_embd.weight", "the token embedding");
    places.emplace_back("output.weight", "the output");
    for (const auto& [name, place] : places) {
        try {
            resolveTensorParams(s, TensorPlace::of(name, m_setup.blocks), name);
        } catch (const std::exception& error) {
            std::string message = error.what();
            if (const auto at = message.find(name); at != std::string::npos) {
                message.replace(at, name.size(), place);
            }
            return QString::fromStdString(message);
        }
    }
    return {};
}

void MergeDialog::update() {
    if (m_updating) {
        return;
    }
    m_updating = true;
    const MergeMethod m = method();
    m_methodHint->setText(methodHint(m));
    // Beside a base the recipient is the base, not one of the models merged.
    if (needsBase(m)) {
        m_rows.front().use->setChecked(true);
    }
    // First, so that the fields below are enabled for the curve as it now is (a model checked
    // again brings its curve back).
    fillCurveTargets();
    const auto curve = curveTarget();
    for (int k = 0; k < int(m_rows.size()); ++k) {
        Row& row = m_rows[std::size_t(k)];
        row.use->setEnabled((k > 0 || !needsBase(m)) && row.unfit.isEmpty());
        const bool merged = row.use->isChecked() && (k > 0 || !needsBase(m));
        for (auto [name, box] : {std::pair{"weight", row.weight}, std::pair{"density", row.density},
                                 std::pair{"gamma", row.gamma}}) {
            const bool onCurve = curve && curve->row == k && curve->name == QLatin1String(name);
            const auto kept = m_kept.find(targetKey(k, QString::fromLatin1(name)));
            box->setEnabled(merged && takesParameter(m, name) && !onCurve && kept == m_kept.end());
            box->setToolTip(kept == m_kept.end() || onCurve
                                ? QString()
                                : tr("Kept as the plan gives it: %1").arg(valueText(kept->second)));
        }
    }
    const auto keptT = m_kept.find(targetKey(-1, QStringLiteral("t")));
    const bool tOnCurve = curve && curve->row < 0;
    m_global.t->setEnabled(takesParameter(m, "t") && !tOnCurve && keptT == m_kept.end());
    m_global.t->setToolTip(keptT == m_kept.end() || tOnCurve
                               ? QString()
                               : tr("Kept as the plan gives it: %1").arg(valueText(keptT->second)));
    QStringList kept;
    for (const auto& [key, value] : m_kept) {
        const int row = key.section(QLatin1Char(':'), 0, 0).toInt();
        const QString name = key.section(QLatin1Char(':'), 1);
        const bool shown =
            row < 0 ? takesParameter(m, "t")
                    : m_rows[std::size_t(row)].use->isChecked() && takesParameter(m, name.toStdString());
        if (shown && !(curve && curve->row == row && curve->name == name)) {
            kept << (row < 0
                         ? QStringLiteral("t")
                         : tr("%1 of %2").arg(name, QFileInfo(m_rows[std::size_t(row)].path).fileName())) +
                        QStringLiteral(" (") + valueText(value) + u')';
        }
    }
    m_keptNote->setText(tr("Kept as the plan gives them (more than a field shows; choose one under “Varies "
                           "over the layers” to draw it instead): %1")
                            .arg(kept.join(QStringLiteral(", "))));
    m_keptNote->setVisible(!kept.isEmpty());
    m_global.normalize->setEnabled(takesParameter(m, "normalize"));
    m_global.rescale->setEnabled(takesParameter(m, "rescale"));
    m_global.seed->setEnabled(usesSeed(m));
    const bool varies = curveTarget().has_value();
    m_varying.curve->setEnabled(varies);
    m_varying.points->setEnabled(varies);
    const QString problem = this->problem();
    m_problem->setText(problem);
    m_problem->setVisible(!problem.isEmpty());
    m_ok->setEnabled(problem.isEmpty());
    m_updating = false;
}

} // namespace organ::widgets
