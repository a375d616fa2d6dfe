#pragma once

#include "fixtures.h"

#include <QObject>
#include <QTemporaryDir>

namespace organ::testing {

// What the tests of organ directories share: a temporary folder, a model (set by the test,
// usually the shared stories model) and fresh directories extracted from it.
class OrganFixture : public QObject {
protected:
    QString path(const QString& name) const { return m_dir.filePath(name); }
    // `m_model` taken apart into path(name); empty when it could not be (said).
    QString extracted(const QString& name) const {
        return extractFixture(m_model, path(name)) ? path(name) : QString();
    }

    QTemporaryDir m_dir;
    QString m_model;
};

} // namespace organ::testing
