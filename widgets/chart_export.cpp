#include "chart_export.h"

#include "chart_style.h"
#include "display_names.h"
#include "support/safe_files.h"

#include <memory>
#include <vector>

#include <QBuffer>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QPdfWriter>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QSvgGenerator>
#include <qcustomplot.h>

namespace organ::widgets {
namespace {

// The chart as a file shows it, for the time of one export: the export's title takes the place
// of the chart's own (a text element on top) or a row of its own above it, texts and legends
// fit the export's width, and what only the screen shows (selection outlines) is hidden.
class ExportFrame {
public:
    ExportFrame(QCustomPlot* plot, const QString& title, int width) : m_plot(plot) {
        for (int i = 0; i < plot->itemCount(); ++i) {
            QCPAbstractItem* item = plot->item(i);
            if (isScreenOnly(item) && item->visible()) {
                item->setVisible(false);
                m_hidden.push_back(item);
            }
        }
        if (!title.isEmpty()) {
            QCPLayoutGrid* layout = plot->plotLayout();
            m_own = layout->rowCount() > 0 ? qobject_cast<QCPTextElement*>(layout->element(0, 0)) : nullptr;
            if (m_own != nullptr) {
                m_ownText = m_own->text();
                m_ownSource = wrappedSource(m_own);
                setWrappedText(m_own, title);
            } else {
                layout->insertRow(0);
                m_added = new QCPTextElement(plot, QString(), QFont(plot->font().family(), 11, QFont::Bold));
                setWrappedText(m_added, title);
                layout->addElement(0, 0, m_added);
            }
        }
        fitChartTo(plot, width);
    }
    ~ExportFrame() {
        for (QCPAbstractItem* item : m_hidden) {
            item->setVisible(true);
        }
        if (m_own != nullptr && m_ownSource.isEmpty()) {
            setUnwrappedText(m_own, m_ownText);
        } else if (m_own != nullptr) {
            setWrappedText(m_own, m_ownSource);
        } else if (m_added != nullptr) {
            m_plot->plotLayout()->remove(m_added);
            m_plot->plotLayout()->simplify();
        }
        fitChartTo(m_plot, m_plot->width());
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
    ExportFrame(const ExportFrame&) = delete;
    ExportFrame& operator=(const ExportFrame&) = delete;

private:
    QCustomPlot* m_plot;
    std::vector<QCPAbstractItem*> m_hidden;
    QCPTextElement* m_own = nullptr;
    QString m_ownText;
    QString m_ownSource;
    QCPTextElement* m_added = nullptr;
};

// The chart as the bytes of a PNG, PDF or SVG file, drawn in memory.
QByteArray render(QCustomPlot* plot, const QString& suffix, QSize size, const QString& title) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (suffix == QStringLiteral("png")) {
        QImage image = plot->toPixmap(size.width(), size.height(), 1.0).toImage();
        image.setDotsPerMeterX(3780); // 96 dpi
        image.setDotsPerMeterY(3780);
        return image.save(&buffer, "PNG") ? bytes : QByteArray();
    }
    QCPPainter painter;
    std::unique_ptr<QPaintDevice> device;
    if (suffix == QStringLiteral("pdf")) {
        auto pdf = std::make_unique<QPdfWriter>(&buffer);
        pdf->setCreator(QStringLiteral("Organ Workbench"));
        pdf->setTitle(title);
        pdf->setResolution(72); // one point per pixel of the asked size
        pdf->setPageSize(QPageSize(QSizeF(size), QPageSize::Point));
        pdf->setPageMargins(QMarginsF(0, 0, 0, 0));
        device = std::move(pdf);
    } else {
        auto svg = std::make_unique<QSvgGenerator>();
        svg->setOutputDevice(&buffer);
        svg->setSize(size);
        svg->setViewBox(QRect(QPoint(0, 0), size));
        svg->setTitle(title);
        svg->setDescription(QStringLiteral("Organ Workbench chart"));
        device = std::move(svg);
    }
    if (!painter.begin(device.get())) {
        return {};
    }
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    painter.setMode(QCPPainter::pmNonCosmetic);
    plot->toPainter(&painter, size.width(), size.height());
    return painter.end() ? bytes : QByteArray();
}

} // namespace

bool exportChart(QCustomPlot* plot, const QString& path, QSize size, const QString& title, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QStringLiteral("png") && suffix != QStringLiteral("pdf") &&
        suffix != QStringLiteral("svg")) {
        *error = QFileInfo(path).fileName() + QObject::tr(": choose a .png, .svg or .pdf file");
        return false;
    }
    QByteArray bytes;
    {
        const ExportFrame shown(plot, title, size.width());
        bytes = render(plot, suffix, size, title);
    }
    if (bytes.isEmpty()) {
        *error = QFileInfo(path).fileName() + QObject::tr(": cannot draw the chart");
        return false;
    }
    try {
        writeFileSafely(path.toStdString(), std::string_view(bytes.constData(), std::size_t(bytes.size())));
        return true;
    } catch (const std::exception& e) {
        *error = model::displayText(e.what());
        return false;
    }
}

void exportChartInteractively(QCustomPlot* plot, QWidget* parent, const ChartLabel& label) {
    QFileDialog files(parent, QObject::tr("Save chart"), label.fileName + QStringLiteral(".png"),
                      QObject::tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
    files.setObjectName(QStringLiteral("chartFileDialog"));
    files.setAcceptMode(QFileDialog::AcceptSave);
    if (files.exec() != QDialog::Accepted || files.selectedFiles().isEmpty()) {
        return;
    }
    const QString path = files.selectedFiles().front();
    QDialog dialog(parent);
    dialog.setObjectName(QStringLiteral("chartSizeDialog"));
    dialog.setWindowTitle(QObject::tr("Chart size"));
    auto* form = new QFormLayout(&dialog);
    auto* width = new QSpinBox(&dialog);
    auto* height = new QSpinBox(&dialog);
    width->setObjectName(QStringLiteral("chartWidth"));
    height->setObjectName(QStringLiteral("chartHeight"));
    for (QSpinBox* box : {width, height}) {
        box->setRange(100, 10000);
        box->setSuffix(QObject::tr(" px"));
    }
    // The size chosen last (charts for one report share it), else the chart's own.
    const QSize last = QSettings().value(QStringLiteral("chartExport/size")).toSize();
    width->setValue(last.isValid() ? last.width() : plot->width());
    height->setValue(last.isValid() ? last.height() : plot->height());
    form->addRow(QObject::tr("Width"), width);
    form->addRow(QObject::tr("Height"), height);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    const QSize size(width->value(), height->value());
    QSettings().setValue(QStringLiteral("chartExport/size"), size);
    QString error;
    if (!exportChart(plot, path, size, label.title, &error)) {
        QMessageBox::critical(parent, QObject::tr("Cannot save the chart"), error);
    } else if (auto* window = qobject_cast<QMainWindow*>(parent->window())) {
        window->statusBar()->showMessage(
            QObject::tr("Saved the chart as %1").arg(QDir::toNativeSeparators(path)), 10000);
    }
}

void installExportMenu(QCustomPlot* plot, QWidget* owner, ChartLabelFn label, MenuExtrasFn extras) {
    plot->setContextMenuPolicy(Qt::CustomContextMenu);
    QObject::connect(plot, &QWidget::customContextMenuRequested, owner,
                     [plot, owner, label = std::move(label), extras = std::move(extras)](const QPoint& at) {
                         QMenu menu(owner);
                         if (extras) {
                             extras(menu, at);
                         }
                         menu.addAction(
                             QObject::tr("Save as PNG, SVG or PDF…"), owner,
                             [plot, owner, &label] { exportChartInteractively(plot, owner, label()); });
                         menu.exec(plot->mapToGlobal(at));
                     });
}

void finishChart(QCustomPlot* plot, ChartLabelFn label) {
    installExportMenu(plot, plot, std::move(label));
    followPalette(plot);
    fitToWidth(plot);
}

} // namespace organ::widgets
