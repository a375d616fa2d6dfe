#include "open_offer.h"

#include <QPushButton>

namespace organ::app {

QMessageBox* offerToOpen(QWidget* parent, QMessageBox::Icon icon, const QString& title, const QString& text,
                         const QString& name, const QString& buttons,
                         std::function<void(widgets::ModelPane::Side)> open) {
    auto* box = new QMessageBox(icon, title, text, QMessageBox::NoButton, parent);
    box->setObjectName(name);
    box->setAttribute(Qt::WA_DeleteOnClose);
    using Side = widgets::ModelPane::Side;
    for (const auto& [label, side, suffix] :
         {std::tuple(QMessageBox::tr("Open as recipient"), Side::Recipient, QStringLiteral("Recipient")),
          std::tuple(QMessageBox::tr("Open as donor"), Side::Donor, QStringLiteral("Donor"))}) {
        QPushButton* button = box->addButton(label, QMessageBox::AcceptRole);
        button->setObjectName(buttons + suffix);
        QObject::connect(button, &QPushButton::clicked, box, [open, side = side] { open(side); });
    }
    box->addButton(QMessageBox::Close);
    return box;
}

} // namespace organ::app
