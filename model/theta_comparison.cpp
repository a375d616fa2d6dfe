#include "theta_comparison.h"

#include "display_names.h"

#include <QCoreApplication>

namespace organ::model {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("organ::model::ThetaComparison", text);
}

} // namespace

ThetaComparison compareTheta(const ModelSnapshot& recipient, const ModelMeasurement* recipientTheta,
                             const ModelSnapshot& donor, const ModelMeasurement* donorTheta) {
    ThetaComparison out;
    const GgufModel& r = *recipient.model;
    const GgufModel& d = *donor.model;
    const QString rName = modelDisplayName(r);
    const QString dName = modelDisplayName(d);
    if (r.architecture() != d.architecture()) {
        out.reason = tr("%1 is %2 and %3 is %4: Δθ compares models of one architecture")
                         .arg(rName, displayText(r.architecture()), dName, displayText(d.architecture()));
        return out;
    }
    std::size_t shared = 0;
    for (const TensorInfo& t : r.tensors()) {
        const TensorInfo* twin = d.findTensor(t.name);
        if (twin == nullptr) {
            continue;
        }
        if (twin->ne != t.ne) {
            out.reason = tr("%1 is %2 in %3 and %4 in %5: Δθ compares tensors of equal shapes")
                             .arg(QString::fromStdString(t.name), QString::fromStdString(t.shapeText()),
                                  rName, QString::fromStdString(twin->shapeText()), dName);
            return out;
        }
        ++shared;
    }
    if (shared == 0) {
        out.reason = tr("%1 and %2 have no tensor names in common").arg(rName, dName);
        return out;
    }
    if (recipientTheta == nullptr || donorTheta == nullptr) {
        out.reason = tr("Δθ shows once both %1 and %2 are measured").arg(rName, dName);
        return out;
    }
    out.comparable = true;
    out.deltas.resize(r.tensors().size());
    for (std::size_t i = 0; i < out.deltas.size(); ++i) {
        const TensorInfo* twin = d.findTensor(r.tensors()[i].name);
        if (twin == nullptr) {
            continue;
        }
        const auto& mine = recipientTheta->tensors[i].theta;
        const auto& theirs = donorTheta->tensors[static_cast<std::size_t>(twin - d.tensors().data())].theta;
        if (mine && theirs) {
            out.deltas[i] = *theirs - *mine;
        }
    }
    return out;
}

} // namespace organ::model
