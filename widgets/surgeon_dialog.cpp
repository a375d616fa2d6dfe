#include "surgeon_dialog.h"

#include "path_row.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace organ::widgets {
namespace {

QSpinBox* spinBox(QWidget* parent, int low, int high, int value, const QString& none = {}) {
    auto* box = new QSpinBox(parent);
    box->setRange(low, high);
    box->setValue(value);
    if (!none.isEmpty()) {
        box->setSpecialValueText(none);
    }
    return box;
}

} // namespace

SurgeonDialog::SurgeonDialog(const Setup& setup, QWidget* parent) : QDialog(parent), m_setup(setup) {
    setObjectName(QStringLiteral("surgeonDialog"));
    setWindowTitle(tr("Auto-surgeon — %1").arg(QFileInfo(setup.recipient).fileName()));
    auto* layout = new QVBoxLayout(this);
    auto* intro =
        new QLabel(tr("Tries many graft plans of <b>%1</b>, scores each on a text without writing it, "
                      "and keeps the best (docs/auto-surgeon.md).")
                       .arg(QFileInfo(setup.recipient).fileName().toHtmlEscaped()),
                   this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto* form = new QFormLayout;
    m_goal = new QComboBox(this);
    m_goal->setObjectName(QStringLiteral("surgeonGoal"));
    m_goal->addItem(tr("Prune blocks"), int(SurgeonGoal::Prune));
    m_goal->addItem(tr("Merge weights with donors"), int(SurgeonGoal::Merge));
    m_goal->addItem(tr("Best organs from donors"), int(SurgeonGoal::Organs));
    form->addRow(tr("Goal"), m_goal);
    m_prune = spinBox(this, 1, int(std::max<std::uint32_t>(setup.blocks, 2) - 1), 1);
    m_prune->setObjectName(QStringLiteral("surgeonPrune"));
    form->addRow(tr("Blocks to remove"), m_prune);
    m_beam = spinBox(this, 1, int(kMaxSurgeonBeam), 1);
    m_beam->setToolTip(tr("1: the greedy search (SLEB); more keeps that many best sets at each step"));
    form->addRow(tr("Beam"), m_beam);
    m_method = new QComboBox(this);
    m_method->addItem(QStringLiteral("task_arithmetic"), int(MergeMethod::TaskArithmetic));
    m_method->addItem(QStringLiteral("ties"), int(MergeMethod::Ties));
    form->addRow(tr("Merge method"), m_method);
    m_donors = new QListWidget(this);
    m_donors->setObjectName(QStringLiteral("surgeonDonors"));
    for (const QString& path : setup.models) {
        auto* item = new QListWidgetItem(QFileInfo(path).fileName(), m_donors);
        item->setData(Qt::UserRole, path);
        item->setToolTip(path);
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
        item->setCheckState(setup.donors.contains(path) ? Qt::Checked : Qt::Unchecked);
    }
    m_donors->setMaximumHeight(std::max(m_donors->sizeHintForRow(0), fontMetrics().height() + 4) * 4 + 8);
    form->addRow(tr("Donors"), m_donors);
    m_text = new QLineEdit(this);
    m_text->setObjectName(QStringLiteral("surgeonText"));
    m_text->setPlaceholderText(tr("the built-in text of vital signs"));
    const QString folder = QFileInfo(setup.recipient).absolutePath();
    form->addRow(tr("Text"),
                 pathRow(m_text, new QPushButton(tr("Choose…"), this), [this, folder](const QString& at) {
                     return QFileDialog::getOpenFileName(this, tr("Text"), at.isEmpty() ? folder : at,
                                                         tr("Text (*.txt);;All files (*)"));
                 }));
    m_holdout = new QDoubleSpinBox(this);
    m_holdout->setObjectName(QStringLiteral("surgeonHoldout"));
    m_holdout->setRange(0, 0.9);
    m_holdout->setSingleStep(0.05);
    m_holdout->setValue(0.25);
    m_holdout->setSpecialValueText(tr("none"));
    m_holdout->setToolTip(tr("The last part of the text the search never sees: the finalists and the vital "
                             "signs are taken on it"));
    form->addRow(tr("Held out"), m_holdout);
    m_chunk = spinBox(this, 0, 1 << 16, 0, tr("the text whole"));
    m_chunk->setSuffix(tr(" tokens"));
    form->addRow(tr("In chunks of"), m_chunk);
    m_objective = new QComboBox(this);
    m_objective->setObjectName(QStringLiteral("surgeonObjective"));
    m_objective->addItem(tr("NLL of the text"), QString());
    for (const QString& path : setup.models) {
        m_objective->addItem(tr("KL to %1").arg(QFileInfo(path).fileName()), path);
    }
    form->addRow(tr("Objective"), m_objective);
    m_evaluations = spinBox(this, 0, 1000000, 0, tr("no limit"));
    m_evaluations->setObjectName(QStringLiteral("surgeonEvaluations"));
    m_evaluations->setSuffix(tr(" candidates"));
    form->addRow(tr("Budget"), m_evaluations);
    m_seconds = spinBox(this, 0, 7 * 24 * 3600, 0, tr("no limit"));
    m_seconds->setSuffix(tr(" s"));
    form->addRow(tr("Time budget"), m_seconds);
    m_seed = spinBox(this, 0, 1 << 30, 0);
    form->addRow(tr("Seed"), m_seed);
    m_maxBlocks = spinBox(this, 0, int(setup.blocks), 0, tr("any"));
    form->addRow(tr("At most blocks"), m_maxBlocks);
    m_maxMegabytes = new QDoubleSpinBox(this);
    m_maxMegabytes->setRange(0, 1e7);
    m_maxMegabytes->setSpecialValueText(tr("any"));
    m_maxMegabytes->setSuffix(tr(" MB"));
    form->addRow(tr("At most size"), m_maxMegabytes);
    layout->addLayout(form);
    m_problem = new QLabel(this);
    m_problem->setWordWrap(true);
    layout->addWidget(m_problem);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_ok = buttons->button(QDialogButtonBox::Ok);
    m_ok->setText(tr("Search"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    connect(m_goal, &QComboBox::currentIndexChanged, this, &SurgeonDialog::update);
    connect(m_donors, &QListWidget::itemChanged, this, &SurgeonDialog::update);
    connect(m_text, &QLineEdit::textChanged, this, &SurgeonDialog::update);
    setMinimumWidth(fontMetrics().averageCharWidth() * 70);
    update();
}

SurgeonGoal SurgeonDialog::goal() const {
    return SurgeonGoal(m_goal->currentData().toInt());
}

void SurgeonDialog::update() {
    const SurgeonGoal g = goal();
    for (QWidget* w : {static_cast<QWidget*>(m_prune), static_cast<QWidget*>(m_beam)}) {
        w->setEnabled(g == SurgeonGoal::Prune);
    }
    m_method->setEnabled(g == SurgeonGoal::Merge);
    m_donors->setEnabled(g != SurgeonGoal::Prune);
    m_holdout->setEnabled(!textPath().isEmpty()); // the built-in text is searched whole
    const QString why = problem();
    m_problem->setText(why);
    m_ok->setEnabled(why.isEmpty());
}

QString SurgeonDialog::problem() const {
    if (goal() != SurgeonGoal::Prune && donors().isEmpty()) {
        return m_setup.models.isEmpty() ? tr("Open a donor (File → Open donor…) to merge or graft from it")
                                        : tr("Check a donor to merge or graft from");
    }
    if (goal() == SurgeonGoal::Prune && m_setup.blocks < 2) {
        return tr("The recipient has one block: there is none to remove");
    }
    return {};
}

QStringList SurgeonDialog::donors() const {
    QStringList out;
    for (int i = 0; i < m_donors->count(); ++i) {
        if (m_donors->item(i)->checkState() == Qt::Checked) {
            out << m_donors->item(i)->data(Qt::UserRole).toString();
        }
    }
    return out;
}

QString SurgeonDialog::reference() const {
    return m_objective->currentData().toString();
}

QString SurgeonDialog::textPath() const {
    return m_text->text().trimmed();
}

double SurgeonDialog::holdout() const {
    return m_holdout->value();
}

SurgeonRequest SurgeonDialog::request() const {
    SurgeonRequest r;
    r.goal = goal();
    r.chunk = std::size_t(m_chunk->value());
    r.prune = std::uint32_t(m_prune->value());
    r.beam = std::size_t(m_beam->value());
    r.method = MergeMethod(m_method->currentData().toInt());
    r.seed = std::uint64_t(m_seed->value());
    r.maxEvaluations = std::uint64_t(m_evaluations->value());
    r.maxSeconds = m_seconds->value();
    if (m_maxBlocks->value() > 0) {
        r.constraints.maxLayers = std::uint32_t(m_maxBlocks->value());
    }
    if (m_maxMegabytes->value() > 0) {
        r.constraints.maxBytes = std::uint64_t(m_maxMegabytes->value() * 1e6);
    }
    return r;
}

} // namespace organ::widgets
