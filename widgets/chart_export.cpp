#include "chart_export.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QMenu>
#include <QMessageBox>
#include <QSpinBox>
#include <QSvgGenerator>
#include <qcustomplot.h>

namespace organ::widgets {

bool exportChart(QCustomPlot* plot, const QString& path, QSize size, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    const QString partial = path + QStringLiteral(".partial.") + suffix;
    bool written = false;
    if (suffix == QStringLiteral("png")) {
        written = plot->savePng(partial, size.width(), size.height(), 1.0, -1, 96);
    } else if (suffix == QStringLiteral("pdf")) {
        written = plot->savePdf(partial, size.width(), size.height(), QCP::epNoCosmetic,
                                QStringLiteral("Organ Workbench"));
    } else if (suffix == QStringLiteral("svg")) {
        QSvgGenerator svg;
        svg.setFileName(partial);
        svg.setSize(size);
        svg.setViewBox(QRect(QPoint(0, 0), size));
        svg.setTitle(QFileInfo(path).completeBaseName());
        svg.setDescription(QStringLiteral("Organ Workbench chart"));
        QCPPainter painter;
        written = painter.begin(&svg);
        if (written) {
            plot->toPainter(&painter, size.width(), size.height());
            written = painter.end();
        }
    } else {
        *error = QFileInfo(path).fileName() + QObject::tr(": choose a .png, .svg or .pdf file");
        return false;
    }
    QFile::remove(path);
    if (!written || !QFile::rename(partial, path)) {
        QFile::remove(partial);
        *error = QFileInfo(path).fileName() + QObject::tr(": cannot write the chart");
        return false;
    }
    return true;
}

void exportChartInteractively(QCustomPlot* plot, QWidget* parent, const QString& suggestedName) {
    const QString path = QFileDialog::getSaveFileName(
        parent, QObject::tr("Save chart"), suggestedName,
        QObject::tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
    if (path.isEmpty()) {
        return;
    }
    QDialog dialog(parent);
    dialog.setWindowTitle(QObject::tr("Chart size"));
    auto* form = new QFormLayout(&dialog);
    auto* width = new QSpinBox(&dialog);
    auto* height = new QSpinBox(&dialog);
    for (QSpinBox* box : {width, height}) {
        box->setRange(100, 10000);
        box->setSuffix(QObject::tr(" px"));
    }
    width->setValue(plot->width());
    height->setValue(plot->height());
    form->addRow(QObject::tr("Width"), width);
    form->addRow(QObject::tr("Height"), height);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    QString error;
    if (!exportChart(plot, path, QSize(width->value(), height->value()), &error)) {
        QMessageBox::critical(parent, QObject::tr("Cannot save the chart"), error);
    }
}

void installExportMenu(QCustomPlot* plot, QWidget* owner, std::function<QString()> name) {
    plot->setContextMenuPolicy(Qt::CustomContextMenu);
    QObject::connect(
        plot, &QWidget::customContextMenuRequested, owner, [plot, owner, name](const QPoint& at) {
            QMenu menu(owner);
            menu.addAction(QObject::tr("Save as PNG, SVG or PDF…"), owner,
                           [plot, owner, name] { exportChartInteractively(plot, owner, name()); });
            menu.exec(plot->mapToGlobal(at));
        });
}

} // namespace organ::widgets
