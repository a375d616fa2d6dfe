#include "path_row.h"

#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>

namespace organ::widgets {

QHBoxLayout* pathRow(QLineEdit* path, QPushButton* button, std::function<QString(const QString&)> ask) {
    QObject::connect(button, &QPushButton::clicked, path, [path, ask = std::move(ask)] {
        const QString chosen = ask(path->text());
        if (!chosen.isEmpty()) {
            path->setText(chosen);
        }
    });
    auto* row = new QHBoxLayout;
    row->addWidget(path, 1);
    row->addWidget(button);
    return row;
}

} // namespace organ::widgets
