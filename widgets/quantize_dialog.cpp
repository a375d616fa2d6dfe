#include "quantize_dialog.h"

#include "path_row.h"
#include "quant/quantize.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <algorithm>

namespace organ::widgets {
namespace {

// What each file type is for, in a few words (the sizes are llama.cpp's bits per weight).
struct FileTypeHint {
    QuantFileType type;
    const char* hint;
};
constexpr FileTypeHint kHints[] = {
    {QuantFileType::Q2_K,
     QT_TRANSLATE_NOOP("QuantizeDialog", "about 2.6 bits a weight: the smallest, clearly worse")},
    {QuantFileType::Q3_K_S,
     QT_TRANSLATE_NOOP("QuantizeDialog", "about 3.4 bits a weight: small, noticeably worse")},
    {QuantFileType::Q3_K_M,
     QT_TRANSLATE_NOOP("QuantizeDialog", "about 3.9 bits a weight: small, noticeably worse")},
    {QuantFileType::Q3_K_L,
     QT_TRANSLATE_NOOP("QuantizeDialog", "about 4.3 bits a weight: small, somewhat worse")},
    {QuantFileType::Q4_K_S, QT_TRANSLATE_NOOP("QuantizeDialog", "about 4.4 bits a weight")},
    {QuantFileType::Q4_K_M, QT_TRANSLATE_NOOP("QuantizeDialog", "about 4.8 bits a weight: the usual choice")},
    {QuantFileType::Q5_K_S, QT_TRANSLATE_NOOP("QuantizeDialog", "about 5.5 bits a weight: close to F16")},
    {QuantFileType::Q5_K_M, QT_TRANSLATE_NOOP("QuantizeDialog", "about 5.7 bits a weight: close to F16")},
    {QuantFileType::Q6_K, QT_TRANSLATE_NOOP("QuantizeDialog", "6.6 bits a weight: nearly F16")},
    {QuantFileType::Q8_0, QT_TRANSLATE_NOOP("QuantizeDialog", "8.5 bits a weight: as good as F16")},
    {QuantFileType::IQ4_NL,
     QT_TRANSLATE_NOOP("QuantizeDialog", "4.5 bits a weight: best with an importance matrix")},
    {QuantFileType::IQ4_XS,
     QT_TRANSLATE_NOOP("QuantizeDialog", "4.25 bits a weight: best with an importance matrix")},
};

QString fileTypeHint(QuantFileType type) {
    for (const FileTypeHint& h : kHints) {
        if (h.type == type) {
            return QuantizeDialog::tr(h.hint);
        }
    }
    const TensorType tensors = defaultTensorType(type);
    return traitsOf(tensors).quantized ? QuantizeDialog::tr("a legacy 4- or 5-bit type")
                                       : QuantizeDialog::tr("not quantized");
}

} // namespace

QuantizeDialog::QuantizeDialog(const QString& model, const QuantizeRecipe& initial, QWidget* parent)
    : QDialog(parent), m_recipe(initial) {
    setObjectName(QStringLiteral("quantizeDialog"));
    setWindowTitle(tr("Quantize %1").arg(QFileInfo(model).fileName()));
    auto* form = new QFormLayout(this);
    auto* intro =
        new QLabel(tr("Adds a <i>quantize</i> operation to the graft plan: the chimera (or, in a plan "
                      "with nothing else, the model itself) is written in this file type as "
                      "<tt>organ quantize</tt> and llama-quantize write it. Nothing is written "
                      "until it is assembled; <i>Quantize now…</i> goes on to that."),
                   this);
    intro->setWordWrap(true);
    intro->setMinimumWidth(460);
    form->addRow(intro);

    m_fileType = new QComboBox(this);
    m_fileType->setObjectName(QStringLiteral("quantizeType"));
    for (const QuantFileType type : allQuantFileTypes()) {
        const QString name = QString::fromUtf8(quantFileTypeName(type));
        m_fileType->addItem(name + QStringLiteral(" — ") + fileTypeHint(type), name);
    }
    m_fileType->setCurrentIndex(m_fileType->findData(QString::fromUtf8(quantFileTypeName(initial.fileType))));
    form->addRow(tr("File type"), m_fileType);

    m_imatrix = new QLineEdit(QString::fromStdString(initial.imatrix), this);
    m_imatrix->setObjectName(QStringLiteral("quantizeImatrix"));
    m_imatrix->setPlaceholderText(tr("none (organ imatrix or llama-imatrix make one)"));
    auto* choose = new QPushButton(tr("Choose…"), this);
    choose->setObjectName(QStringLiteral("quantizeChooseImatrix"));
    const QString folder = QFileInfo(model).absolutePath();
    form->addRow(tr("Importance matrix"), pathRow(m_imatrix, choose, [this, folder](const QString& current) {
                     return QFileDialog::getOpenFileName(
                         this, tr("Importance matrix"), current.isEmpty() ? folder : current,
                         tr("Importance matrices (*.gguf *.dat);;All files (*)"));
                 }));

    m_outputType = tensorTypeBox("quantizeOutputType", initial.outputTensorType);
    form->addRow(tr("Output tensor"), m_outputType);
    m_embeddingType = tensorTypeBox("quantizeEmbeddingType", initial.tokenEmbeddingType);
    form->addRow(tr("Token embedding"), m_embeddingType);

    QStringList overrides;
    for (const auto& [pattern, type] : initial.tensorTypes) {
        overrides << QString::fromStdString(pattern) + u'=' + QString::fromUtf8(tensorTypeName(type));
    }
    m_tensorTypes = new QLineEdit(overrides.join(QStringLiteral(", ")), this);
    m_tensorTypes->setObjectName(QStringLiteral("quantizeTensorTypes"));
    m_tensorTypes->setPlaceholderText(tr("REGEX=TYPE, … e.g. ffn_down=q6_k"));
    form->addRow(tr("Tensor types"), m_tensorTypes);

    m_pure = new QCheckBox(tr("Pure: every tensor in the file type's type, no mix"), this);
    m_pure->setObjectName(QStringLiteral("quantizePure"));
    m_pure->setChecked(initial.pure);
    m_leaveOutput = new QCheckBox(tr("Leave the output tensor as it is"), this);
    m_leaveOutput->setObjectName(QStringLiteral("quantizeLeaveOutput"));
    m_leaveOutput->setChecked(initial.leaveOutputTensor);
    form->addRow(m_pure);
    form->addRow(m_leaveOutput);

    m_problem = new QLabel(this);
    m_problem->setObjectName(QStringLiteral("quantizeProblem"));
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: #b00020"));
    m_problem->hide();
    form->addRow(m_problem);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Add to plan"));
    QPushButton* now = buttons->addButton(tr("Quantize now…"), QDialogButtonBox::ActionRole);
    now->setObjectName(QStringLiteral("quantizeNow"));
    connect(buttons, &QDialogButtonBox::accepted, this, [this] { finish(Choice::AddToPlan); });
    connect(now, &QPushButton::clicked, this, [this] { finish(Choice::QuantizeNow); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    form->addRow(buttons);
}

QComboBox* QuantizeDialog::tensorTypeBox(const char* name, const std::optional<TensorType>& initial) {
    auto* box = new QComboBox(this);
    box->setObjectName(QString::fromUtf8(name));
    box->addItem(tr("as the file type chooses"), QString());
    for (const TensorTypeTraits& traits : allTensorTypes()) {
        if (canQuantizeTo(traits.type)) {
            const QString type = QString::fromUtf8(tensorTypeName(traits.type));
            box->addItem(type, type);
        }
    }
    if (initial) {
        box->setCurrentIndex(box->findData(QString::fromUtf8(tensorTypeName(*initial))));
    }
    return box;
}

QString QuantizeDialog::readRecipe() {
    QuantizeRecipe recipe;
    recipe.fileType = *quantFileTypeFromName(m_fileType->currentData().toString().toStdString());
    const QString imatrix = m_imatrix->text().trimmed();
    if (!imatrix.isEmpty()) {
        const QFileInfo file(imatrix);
        if (!file.isFile() || !file.isReadable()) {
            return tr("%1 is not a file that can be read").arg(imatrix);
        }
        recipe.imatrix = file.absoluteFilePath().toStdString();
    }
    const auto typeOf = [](const QComboBox* box) -> std::optional<TensorType> {
        const QString name = box->currentData().toString();
        return name.isEmpty() ? std::nullopt : tensorTypeFromName(name.toStdString());
    };
    recipe.outputTensorType = typeOf(m_outputType);
    recipe.tokenEmbeddingType = typeOf(m_embeddingType);
    for (const QString& item : m_tensorTypes->text().split(u',', Qt::SkipEmptyParts)) {
        std::pair<std::string, TensorType> entry;
        if (!parseTensorTypeOption(item.trimmed().toStdString(), entry)) {
            return tr("Tensor types are REGEX=TYPE, not “%1”").arg(item.trimmed());
        }
        recipe.tensorTypes.push_back(std::move(entry));
    }
    recipe.pure = m_pure->isChecked();
    recipe.leaveOutputTensor = m_leaveOutput->isChecked();
    if (const auto problem = quantizeRecipeProblem(recipe)) {
        return QString::fromStdString(*problem);
    }
    m_recipe = std::move(recipe);
    return {};
}

void QuantizeDialog::finish(Choice choice) {
    const QString problem = readRecipe();
    if (problem.isEmpty()) {
        m_choice = choice;
        accept();
        return;
    }
    m_problem->setText(problem);
    m_problem->show();
    // Taller by the problem's line, or the wrapped introduction would be squeezed.
    resize(width(), std::max(height(), layout()->totalHeightForWidth(width())));
}

} // namespace organ::widgets
