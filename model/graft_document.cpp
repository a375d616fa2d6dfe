#include "graft_document.h"

#include "gguf/tensor_name.h"
#include "merge/merge_method.h"
#include "support/text_format.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QUndoCommand>
#include <QUndoStack>
#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace organ::model {
namespace {

QString trText(const char* text) {
    return QCoreApplication::translate("organ::model::GraftDocument", text);
}

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

// The plan replaced as a whole: small, and every edit kind undoes the same way. The file it is
// saved as goes with it: clearing the plan starts a new one, and undoing that brings the file back.
class PlanCommand : public QUndoCommand {
public:
    struct State {
        GraftPlan plan;
        QString fileName;
    };
    PlanCommand(GraftDocument* document, State before, State after, const QString& text)
        : QUndoCommand(text), m_document(document), m_before(std::move(before)), m_after(std::move(after)) {}
    void redo() override { m_document->setPlan(m_after.plan, m_after.fileName); }
    void undo() override { m_document->setPlan(m_before.plan, m_before.fileName); }

private:
    GraftDocument* m_document;
    State m_before;
    State m_after;
};

QString fileOf(const std::string& path) {
    return QFileInfo(q(path)).fileName();
}

// "a, b and c".
QString listText(const QStringList& items) {
    if (items.size() <= 1) {
        return items.join(QString());
    }
    return items.mid(0, items.size() - 1).join(QStringLiteral(", ")) + trText(" and ") + items.back();
}

// "layer 3", "layers 0–4", "layers 0 and 4", "layers 0, 2–4".
QString layersText(const std::set<std::uint32_t>& layers) {
    QStringList runs;
    for (auto it = layers.begin(); it != layers.end();) {
        const std::uint32_t first = *it;
        std::uint32_t last = first;
        while (++it != layers.end() && *it == last + 1) {
            last = *it;
        }
        runs << (first == last ? QString::number(first) : QStringLiteral("%1–%2").arg(first).arg(last));
    }
    const bool one = layers.size() == 1;
    return (one ? trText("layer %1") : trText("layers %1")).arg(listText(runs));
}

// What a set of tensors is, for a person: "ffn_up of layers 0–4", "organ and skeleton of
// layer 2 (7 tensors)", "token_embd and output", or the name of a single tensor.
QString selectionText(const std::vector<std::string>& names) {
    if (names.size() == 1) {
        return q(names.front());
    }
    std::map<std::pair<std::size_t, QString>, int> roleOrder; // anatomical order
    QStringList outside;
    std::map<std::size_t, std::set<std::uint32_t>> systems; // each system's layers
    std::set<std::uint32_t> layers;
    for (const auto& name : names) {
        const TensorAnatomy a = classifyTensor(name);
        const QString role = q(a.role) + (a.isBias ? trText(" bias") : QString());
        if (!a.layer) {
            outside << role;
            continue;
        }
        layers.insert(*a.layer);
        systems[static_cast<std::size_t>(a.system)].insert(*a.layer);
        roleOrder[{a.order, role}] = 0;
    }
    QStringList roles;
    for (const auto& [key, unused] : roleOrder) {
        roles << key.second;
    }
    QStringList parts;
    if (!layers.empty()) {
        // One or two roles by name; more by their systems.
        if (roles.size() <= 2) {
            parts << listText(roles) + u' ' + trText("of %1").arg(layersText(layers));
        } else {
            auto nameOf = [](std::size_t system) {
                const auto n = systemName(static_cast<System>(system));
                return QString::fromUtf8(n.data(), qsizetype(n.size()));
            };
            // One span of layers for all the systems, or each system with its own.
            const bool sameLayers = std::ranges::all_of(
                systems, [&](const auto& entry) { return entry.second == systems.begin()->second; });
            QStringList described;
            if (sameLayers) {
                QStringList systemNames;
                for (const auto& [system, unused] : systems) {
                    systemNames << nameOf(system);
                }
                described << trText("%1 of %2").arg(listText(systemNames), layersText(layers));
            } else {
                for (const auto& [system, its] : systems) {
                    described << trText("%1 of %2").arg(nameOf(system), layersText(its));
                }
            }
            parts << trText("%1 (%2)").arg(listText(described),
                                           countOf(qint64(names.size() - std::size_t(outside.size())),
                                                   trText("tensor"), trText("tensors")));
        }
    }
    if (!outside.isEmpty()) {
        parts << listText(outside);
    }
    return listText(parts);
}

// A drop's or a merge's evaluation told: its message into `message` (unless null); whether it may
// be done.
template <typename Evaluation> bool allows(const Evaluation& evaluation, QString* message) {
    if (message != nullptr) {
        *message = evaluation.message;
    }
    return evaluation.ok;
}

} // namespace

GraftDocument::GraftDocument(const OpenModels* models, QObject* parent)
    : QObject(parent), m_undo(new QUndoStack(this)), m_models(models) {
    connect(m_undo, &QUndoStack::cleanChanged, this, &GraftDocument::changed);
    connect(m_models, &OpenModels::opened, this, &GraftDocument::recheck);
    connect(m_models, &OpenModels::closed, this, &GraftDocument::recheck);
}

// The stack clears itself when deleted, which would signal to views of a half-destroyed document.
GraftDocument::~GraftDocument() {
    m_undo->blockSignals(true);
}

std::shared_ptr<const ModelSnapshot> GraftDocument::model(const QString& path) const {
    const auto entry = m_models->find(path);
    return entry ? entry->snapshot : nullptr;
}

bool GraftDocument::isModified() const {
    return !m_undo->isClean();
}

bool GraftDocument::uses(const QString& path) const {
    return !isEmpty() && (base() == path || !donorId(path).isEmpty());
}

QString GraftDocument::donorId(const QString& path) const {
    for (const auto& [id, donorPath] : m_plan.donors) {
        if (q(donorPath) == path) {
            return q(id);
        }
    }
    return {};
}

void GraftDocument::setPlan(const GraftPlan& plan, const QString& fileName) {
    // The plan as the chimera's tensors and vital signs see it: without the name it is given.
    const auto unnamed = [](GraftPlan p) {
        std::erase_if(p.operations, [](const GraftOperation& o) {
            return o.kind == GraftOperation::Kind::SetMetadata && o.key == "general.name";
        });
        return graftPlanToJson(p);
    };
    const bool renamedOnly = unnamed(m_plan) == unnamed(plan);
    m_plan = plan;
    m_fileName = fileName;
    ++m_revision;
    if (!renamedOnly) {
        m_chimeraRevision = m_revision;
    }
    recheck();
}

QString GraftDocument::takeEditMessage() {
    return std::exchange(m_editMessage, QString());
}

QString GraftDocument::refusal(const QString& recipient) const {
    QString error;
    withBase(recipient, &error);
    return error;
}

void GraftDocument::push(const QString& text, GraftPlan after, const QString& message, bool newFile) {
    // Donors no operation reads any more leave the plan; an empty plan forgets its base.
    std::set<std::string> used;
    for (const auto& o : after.operations) {
        used.insert(o.donor);
        for (const auto& range : o.stack) {
            used.insert(range.model);
        }
        for (const std::string& id : o.merge.modelIds()) {
            used.insert(id);
        }
    }
    std::erase_if(after.donors, [&](const auto& donor) { return !used.contains(donor.first); });
    if (after.operations.empty()) {
        after.base.clear();
    }
    m_editMessage = message.isEmpty() ? text : message;
    m_undo->push(new PlanCommand(this, {m_plan, m_fileName},
                                 {std::move(after), newFile ? QString() : m_fileName}, text));
}

void GraftDocument::recheck() {
    m_report = {};
    m_unavailable.clear();
    if (!m_plan.base.empty()) {
        std::string missing;
        if (auto models = openModels(m_plan, &missing)) {
            m_report = checkGraft(m_plan, GraftModels::fromModels(std::move(*models)));
        } else {
            m_unavailable = tr("%1 is not open: open it to check and assemble the plan").arg(fileOf(missing));
        }
    }
    emit changed();
}

GraftPlan GraftDocument::withBase(const QString& recipient, QString* error) const {
    GraftPlan plan = m_plan;
    if (plan.base.empty()) {
        plan.base = recipient.toStdString();
    } else if (q(plan.base) != recipient) {
        *error = tr("The plan grafts into %1: clear it, or make %1 the recipient, to plan for %2")
                     .arg(fileOf(plan.base), QFileInfo(recipient).fileName());
    }
    return plan;
}

GraftDocument::DropResult GraftDocument::evaluateDrop(const TensorDrag& drag, const QString& recipient,
                                                      const DropTarget& target) const {
    DropResult result;
    const auto to = model(recipient);
    const auto from = model(drag.model);
    if (to == nullptr || from == nullptr) {
        result.message = tr("That model is no longer open");
        return result;
    }
    const DropEvaluation e = organ::evaluateDrop(
        m_plan, {*to->model, to->anatomy, recipient.toStdString()},
        {*from->model, from->anatomy, drag.model.toStdString()}, drag.tensors, target,
        [this](const GraftPlan& plan, std::string* missing) { return openModels(plan, missing); });
    for (const auto& l : e.leftOut) {
        result.leftOut << (l.why == DropEvaluation::LeftOut::Why::NotInRecipient
                               ? tr("%1: the recipient has no such tensor").arg(q(l.tensor))
                               : q(l.finding));
    }
    using Refusal = DropEvaluation::Refusal;
    switch (e.refusal) {
    case Refusal::None:
        break;
    case Refusal::SameModel:
        result.message =
            tr("%1 is the recipient itself: drag from another model").arg(fileOf(drag.model.toStdString()));
        return result;
    case Refusal::UnknownTensors:
        result.message = tr("The dragged tensors do not belong to that model");
        return result;
    case Refusal::OtherBase:
        result.message = tr("The plan grafts into %1: clear it, or make %1 the recipient, to plan for %2")
                             .arg(fileOf(e.otherBase), QFileInfo(recipient).fileName());
        return result;
    case Refusal::NoneInSystem: {
        const auto name = systemName(e.system);
        result.message = tr("None of the dragged tensors belongs to %1")
                             .arg(QString::fromUtf8(name.data(), qsizetype(name.size())));
        return result;
    }
    case Refusal::DifferentRole:
        result.message =
            tr("%1 cannot replace %2: a tensor replaces one of the same role").arg(q(e.source), q(e.wanted));
        return result;
    case Refusal::SpansLayers:
        result.message =
            tr("The dragged tensors span several layers, or none: drop them on the model or on a "
               "system to graft them in place");
        return result;
    case Refusal::ModelNotOpen:
        result.message = tr("%1 is not open").arg(fileOf(e.missing));
        return result;
    case Refusal::Incompatible:
        result.message = q(e.reason);
        return result;
    case Refusal::NothingFits:
        result.message = result.leftOut.isEmpty() ? tr("Nothing to graft") : result.leftOut.front();
        return result;
    }
    const GraftOperation& op = e.operation;
    result.ok = true;
    result.operation = op;
    result.plan = e.plan;
    result.tensors = int(e.tensors);
    const QString count = countOf(qint64(e.tensors), tr("tensor"), tr("tensors"));
    result.message = op.kind == GraftOperation::Kind::MapLayer
                         ? tr("Maps layer %1 → %2: %3").arg(op.fromLayer).arg(op.toLayer).arg(count)
                         : tr("Replaces %1").arg(count);
    if (!result.leftOut.isEmpty()) {
        result.message += tr("; leaves out %1: %2").arg(e.leftOutTensors).arg(result.leftOut.front());
    }
    // Replacing a tensor the plan merges takes it out of the merge: said before the drop. A layer
    // mapped onto another sets the tensors of the same roles in its target.
    const bool mapped = op.kind == GraftOperation::Kind::MapLayer;
    std::set<std::string> replaced;
    for (const std::string& name : op.select.names) {
        const auto parsed = mapped ? parseLayerName(name) : std::nullopt;
        replaced.insert(parsed ? layerTensorName(op.toLayer, parsed->rest) : name);
    }
    const auto merged = std::ranges::count_if(m_report.layout.tensors, [&](const ChimeraTensor& t) {
        return t.mergeOperation >= 0 &&
               (replaced.contains(t.name) ||
                (mapped && replaced.empty() && !suffixInLayer(t.name, op.toLayer).empty()));
    });
    if (merged > 0) {
        result.message +=
            tr("; %1 merged now, so taken out of the merge")
                .arg(merged == qsizetype(e.tensors) ? tr("all of them") : tr("%1 of them").arg(merged));
    }
    return result;
}

bool GraftDocument::canDropTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target,
                                   QString* message) {
    return allows(evaluateDrop(drag, recipient, target), message);
}

bool GraftDocument::dropTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target) {
    DropResult result = evaluateDrop(drag, recipient, target);
    if (!allows(result, &m_lastDropMessage)) {
        return false;
    }
    push(tr("graft: %1").arg(describe(result.operation)), std::move(result.plan), result.message);
    return true;
}

GraftDocument::MergeRequest GraftDocument::evaluateMerge(const TensorDrag& drag, const QString& recipient,
                                                         const DropTarget& target) const {
    MergeRequest result;
    result.recipient = recipient;
    result.donor = drag.model;
    const auto to = model(recipient);
    const auto from = model(drag.model);
    if (to == nullptr || from == nullptr) {
        result.message = tr("That model is no longer open");
        return result;
    }
    if (drag.model == recipient) {
        result.message = tr("%1 is the recipient itself: a merge needs another model")
                             .arg(fileOf(drag.model.toStdString()));
        return result;
    }
    QString error;
    withBase(recipient, &error);
    if (!error.isEmpty()) {
        result.message = error;
        return result;
    }
    const auto& donorTensors = from->model->tensors();
    // Several tensors (a layer, a system) dropped on a heatmap cell merge into the cell's layer,
    // as they replace there; one tensor merges with the cell's own.
    std::optional<std::uint32_t> cellLayer;
    if (target.kind == DropTarget::Kind::Tensor && drag.tensors.size() > 1 &&
        drag.pick != TensorDrag::Pick::Role && target.tensor >= 0 &&
        std::size_t(target.tensor) < to->anatomy.tensors.size()) {
        cellLayer = to->anatomy.tensors[std::size_t(target.tensor)].layer;
    }
    std::vector<int> kept;
    for (const int t : drag.tensors) {
        if (t < 0 || std::size_t(t) >= donorTensors.size()) {
            result.message = tr("The dragged tensors do not belong to that model");
            return result;
        }
        const TensorAnatomy& a = from->anatomy.tensors[std::size_t(t)];
        // A role across layers (a heatmap row's label) merges in place on any cell, as it replaces.
        const bool fits =
            target.kind == DropTarget::Kind::Model ||
            (drag.pick == TensorDrag::Pick::Role && target.kind == DropTarget::Kind::Tensor) ||
            (target.kind == DropTarget::Kind::System && a.system == target.system) ||
            (target.kind == DropTarget::Kind::Layer && a.layer == target.layer &&
             (!target.hasSystem || a.system == target.system)) ||
            (cellLayer && a.layer == cellLayer) ||
            (target.kind == DropTarget::Kind::Tensor &&
             donorTensors[std::size_t(t)].name == to->model->tensors()[std::size_t(target.tensor)].name);
        if (fits) {
            kept.push_back(t);
        } else if (target.kind == DropTarget::Kind::Layer || cellLayer) {
            result.leftOut << tr("%1: not in layer %2 (a merge combines tensors of one name)")
                                  .arg(q(donorTensors[std::size_t(t)].name))
                                  .arg(cellLayer ? *cellLayer : *target.layer);
        } else if (target.kind == DropTarget::Kind::System) {
            const auto name = systemName(target.system);
            result.leftOut << tr("%1: not in %2")
                                  .arg(q(donorTensors[std::size_t(t)].name),
                                       QString::fromUtf8(name.data(), qsizetype(name.size())));
        } else if (target.kind == DropTarget::Kind::Tensor) {
            result.leftOut << tr("%1: not %2 (a merge combines tensors of one name)")
                                  .arg(q(donorTensors[std::size_t(t)].name),
                                       q(to->model->tensors()[std::size_t(target.tensor)].name));
        }
    }
    if (kept.empty()) {
        result.message =
            target.kind == DropTarget::Kind::Tensor
                ? tr("A merge combines tensors of one name: drop %1 of the donor on it")
                      .arg(q(to->model->tensors()[std::size_t(target.tensor)].name))
            : target.kind == DropTarget::Kind::Layer
                ? tr("None of the dragged tensors is in layer %1: a merge combines tensors of one name")
                      .arg(*target.layer)
                : tr("None of the dragged tensors belongs there");
        return result;
    }
    std::set<int> mine;
    for (const int t : kept) {
        const TensorInfo& theirs = donorTensors[std::size_t(t)];
        const TensorInfo* own = to->model->findTensor(theirs.name);
        if (own == nullptr) {
            result.leftOut << tr("%1: the recipient has no such tensor").arg(q(theirs.name));
        } else if (own->ne != theirs.ne) {
            result.leftOut << tr("%1: its shape differs from the recipient's").arg(q(theirs.name));
        } else {
            mine.insert(int(own - to->model->tensors().data()));
        }
    }
    if (mine.empty()) {
        result.message = result.leftOut.front();
        return result;
    }
    for (const int t : mine) {
        result.names.push_back(to->model->tensors()[std::size_t(t)].name);
    }
    result.ok = true;
    result.message = tr("Merges %1 with %2 (Shift held: merge instead of replace)")
                         .arg(countOf(qint64(result.names.size()), tr("tensor"), tr("tensors")),
                              QFileInfo(drag.model).fileName());
    if (!result.leftOut.isEmpty()) {
        result.message += tr("; leaves out %1: %2").arg(result.leftOut.size()).arg(result.leftOut.front());
    }
    return result;
}

bool GraftDocument::canMergeTensors(const TensorDrag& drag, const QString& recipient,
                                    const DropTarget& target, QString* message) {
    return allows(evaluateMerge(drag, recipient, target), message);
}

bool GraftDocument::mergeTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target) {
    MergeRequest request = evaluateMerge(drag, recipient, target);
    if (!allows(request, &m_lastDropMessage)) {
        return false;
    }
    QMetaObject::invokeMethod(
        this, [this, request = std::move(request)] { emit mergeRequested(request); }, Qt::QueuedConnection);
    return true;
}

namespace {

// A merge with its flags as they act: normalize and rescale left out are their defaults, so that
// one given at its default is the same merge.
MergeSpec withDefaults(MergeSpec spec) {
    spec.normalize = takesParameter(spec.method, "normalize")
                         ? std::optional(spec.normalize.value_or(normalizesByDefault(spec.method)))
                         : std::nullopt;
    spec.rescale =
        takesParameter(spec.method, "rescale") ? std::optional(spec.rescale.value_or(true)) : std::nullopt;
    return spec;
}

int mergeOperationOf(const GraftPlan& plan) {
    for (std::size_t k = 0; k < plan.operations.size(); ++k) {
        if (plan.operations[k].kind == GraftOperation::Kind::Merge) {
            return int(k);
        }
    }
    return -1;
}

} // namespace

std::optional<MergeSpec> GraftDocument::plannedMerge() const {
    const int index = mergeOperationOf(m_plan);
    if (index < 0) {
        return std::nullopt;
    }
    MergeSpec spec = m_plan.operations[std::size_t(index)].merge;
    spec.renameModels([this](const std::string& id) {
        const std::string* path = id == "base" ? &m_plan.base : m_plan.donorPath(id);
        return path != nullptr ? *path : id;
    });
    return spec;
}

bool GraftDocument::merge(const QString& recipient, MergeSpec byPath, const std::vector<std::string>& names) {
    QString error;
    GraftPlan after = withBase(recipient, &error);
    if (!error.isEmpty() || names.empty()) {
        m_lastDropMessage = error;
        return false;
    }
    byPath.renameModels([&](const std::string& path) { return after.modelId(path); });
    const int existing = mergeOperationOf(after);
    std::set<std::string> wanted(names.begin(), names.end());
    std::set<std::string> merged; // what the plan's merge merges now
    if (existing >= 0) {
        const TensorSelector& before = after.operations[std::size_t(existing)].select;
        merged.insert(before.names.begin(), before.names.end());
        for (const ChimeraTensor& t : m_report.layout.tensors) {
            if (t.mergeOperation == existing) {
                merged.insert(t.name);
            }
        }
        wanted.insert(merged.begin(), merged.end());
    }
    const std::size_t added = wanted.size() - merged.size();
    GraftOperation op;
    op.kind = GraftOperation::Kind::Merge;
    op.merge = std::move(byPath);
    // In the recipient's order, as the tree lists them.
    if (const auto base = model(recipient)) {
        for (const TensorInfo& t : base->model->tensors()) {
            if (wanted.erase(t.name) > 0) {
                op.select.names.push_back(t.name);
            }
        }
    }
    op.select.names.insert(op.select.names.end(), wanted.begin(), wanted.end());
    const QString method = q(std::string(mergeMethodName(op.merge.method)));
    const QString all = countOf(qint64(op.select.names.size()), tr("tensor"), tr("tensors"));
    QString text = tr("Merge %1 (%2)").arg(all, method);
    if (existing >= 0) {
        const GraftOperation& before = after.operations[std::size_t(existing)];
        const bool sameSpec = withDefaults(before.merge) == withDefaults(op.merge);
        if (added == 0 && sameSpec && after.base == m_plan.base) {
            m_lastDropMessage = tr("The plan merges these %1 so already: nothing changed").arg(all);
            return false; // no step to undo
        }
        const QString more = countOf(qint64(added), tr("tensor"), tr("tensors"));
        text = added == 0 ? tr("Change the merge of %1 (%2)").arg(all, method)
               : sameSpec ? tr("Merge %1 more (%2, %3 in all)").arg(more, method, all)
                          : tr("Merge %1 more and change the merge (%2, %3 in all)").arg(more, method, all);
        after.operations[std::size_t(existing)] = std::move(op);
    } else {
        const auto quantize =
            std::find_if(after.operations.begin(), after.operations.end(),
                         [](const GraftOperation& o) { return o.kind == GraftOperation::Kind::Quantize; });
        after.operations.insert(quantize, std::move(op));
    }
    push(text, std::move(after));
    return true;
}

std::vector<GraftDocument::Merged> GraftDocument::mergedTensors() const {
    std::vector<Merged> out;
    const auto recipient = model(base());
    if (recipient == nullptr) {
        return out;
    }
    for (const ChimeraTensor& t : m_report.layout.tensors) {
        const TensorInfo* mine = t.merge ? recipient->model->findTensor(t.name) : nullptr;
        if (mine != nullptr) {
            out.push_back({int(mine - recipient->model->tensors().data()), t.name});
        }
    }
    return out;
}

QString GraftDocument::mergeText() const {
    const int index = mergeOperationOf(m_plan);
    if (index < 0) {
        return {};
    }
    const MergeSpec& spec = m_plan.operations[std::size_t(index)].merge;
    QStringList models;
    if (!spec.base.empty()) {
        models << modelName(spec.base);
    }
    for (const MergeModel& m : spec.models) {
        if (m.model != spec.base) {
            models << modelName(m.model);
        }
    }
    return tr("%1 of %2").arg(q(std::string(mergeMethodName(spec.method))), listText(models));
}

void GraftDocument::removeOperation(int index) {
    if (index < 0 || index >= int(m_plan.operations.size())) {
        return;
    }
    GraftPlan after = m_plan;
    after.operations.erase(after.operations.begin() + index);
    push(tr("Remove: %1").arg(describe(index)), std::move(after));
}

void GraftDocument::moveOperation(int from, int to) {
    const int count = int(m_plan.operations.size());
    if (from < 0 || from >= count || to < 0 || to >= count || from == to) {
        return;
    }
    GraftPlan after = m_plan;
    auto op = after.operations[std::size_t(from)];
    after.operations.erase(after.operations.begin() + from);
    after.operations.insert(after.operations.begin() + to, std::move(op));
    push(tr("Move: %1").arg(describe(from)), std::move(after));
}

void GraftDocument::layerOperation(const QString& recipient, GraftOperation op, const QString& text) {
    QString error;
    GraftPlan after = withBase(recipient, &error);
    if (!error.isEmpty()) {
        m_lastDropMessage = error;
        return;
    }
    if (op.kind == GraftOperation::Kind::Quantize) {
        std::erase_if(after.operations,
                      [](const GraftOperation& o) { return o.kind == GraftOperation::Kind::Quantize; });
    }
    after.operations.push_back(std::move(op));
    push(text, std::move(after));
}

void GraftDocument::duplicateLayer(const QString& recipient, std::uint32_t layer) {
    GraftOperation op;
    op.kind = GraftOperation::Kind::DuplicateLayer;
    op.toLayer = layer;
    layerOperation(recipient, op, tr("Duplicate layer %1").arg(layer));
}

void GraftDocument::removeLayer(const QString& recipient, std::uint32_t layer) {
    GraftOperation op;
    op.kind = GraftOperation::Kind::RemoveLayer;
    op.toLayer = layer;
    layerOperation(recipient, op, tr("Remove layer %1").arg(layer));
}

void GraftDocument::purify(const QString& recipient, std::vector<std::string> names,
                           const PurifyParams& params) {
    if (names.empty()) {
        return;
    }
    GraftOperation op;
    op.kind = GraftOperation::Kind::Purify;
    const int count = int(names.size());
    op.select.names = std::move(names);
    op.purify = params;
    layerOperation(recipient, op, tr("Purify %n tensor(s)", nullptr, count));
}

void GraftDocument::quantize(const QString& recipient, const QuantizeRecipe& recipe) {
    GraftOperation op;
    op.kind = GraftOperation::Kind::Quantize;
    op.quantize = recipe;
    layerOperation(recipient, op,
                   tr("Quantize to %1").arg(QString::fromUtf8(quantFileTypeName(recipe.fileType))));
}

void GraftDocument::repeatLayers(const QString& recipient, std::uint32_t first, std::uint32_t last) {
    const auto snapshot = model(recipient);
    if (snapshot == nullptr || first > last || last >= snapshot->anatomy.layerCount()) {
        return;
    }
    const std::uint32_t end = snapshot->anatomy.layerCount() - 1;
    GraftOperation op;
    op.kind = GraftOperation::Kind::StackLayers;
    op.stack.push_back({"base", 0, last});
    op.stack.push_back({"base", first, last});
    if (last < end) {
        op.stack.push_back({"base", last + 1, end});
    }
    layerOperation(recipient, op, tr("Repeat layers %1–%2").arg(first).arg(last));
}

void GraftDocument::removeOperationsUsing(const QString& path) {
    if (isEmpty() || !uses(path)) {
        return;
    }
    if (base() == path) {
        clear();
        return;
    }
    const std::string id = donorId(path).toStdString();
    GraftPlan after = m_plan;
    // A merge of several models goes on without this one, if it still can (a merge of the farm and
    // the sea keeps the sea); the other operations that use it go.
    for (GraftOperation& o : after.operations) {
        if (o.kind == GraftOperation::Kind::Merge && o.merge.base != id) {
            const auto before = o.merge.models.size();
            std::erase_if(o.merge.models, [&](const MergeModel& m) { return m.model == id; });
            if (o.merge.models.size() != before && mergeSpecProblem(o.merge)) {
                o.merge.models.clear();
            }
        }
    }
    std::erase_if(after.operations, [&](const GraftOperation& o) {
        return o.donor == id ||
               std::any_of(o.stack.begin(), o.stack.end(),
                           [&](const LayerRange& r) { return r.model == id; }) ||
               std::ranges::count(o.merge.modelIds(), id) > 0 ||
               (o.kind == GraftOperation::Kind::Merge && o.merge.models.empty());
    });
    push(tr("Remove what uses %1 from the plan").arg(QFileInfo(path).fileName()), std::move(after));
}

void GraftDocument::adopt(const GraftPlan& plan, const QString& text) {
    push(text, plan, {}, true);
}

void GraftDocument::clear() {
    if (!isEmpty()) {
        push(tr("Clear the plan"), GraftPlan{}, {}, true);
    }
}

namespace {

bool setsName(const GraftOperation& o) {
    return o.kind == GraftOperation::Kind::SetMetadata && o.key == "general.name";
}

} // namespace

QString GraftDocument::chimeraName() const {
    for (auto it = m_plan.operations.rbegin(); it != m_plan.operations.rend(); ++it) {
        if (const auto name = setsName(*it) ? it->value.asString() : std::nullopt) {
            return QString::fromUtf8(name->data(), qsizetype(name->size()));
        }
    }
    return {};
}

QString GraftDocument::recipientName() const {
    const auto snapshot = model(base());
    const MetaValue* name = snapshot ? snapshot->model->find("general.name") : nullptr;
    return name != nullptr ? QString::fromStdString(std::string(name->asString().value_or(""))) : QString();
}

QString GraftDocument::defaultChimeraName() const {
    // A plan that only quantizes makes the same model in fewer bits: it keeps its name.
    if (m_plan.donors.empty() && !m_plan.operations.empty() &&
        std::all_of(m_plan.operations.begin(), m_plan.operations.end(),
                    [](const GraftOperation& o) { return o.kind == GraftOperation::Kind::Quantize; })) {
        return recipientName();
    }
    QStringList parts;
    for (const QString& path : QStringList{base()}) {
        if (const auto snapshot = model(path)) {
            parts << modelDisplayName(*snapshot->model);
        }
    }
    for (const auto& [id, path] : m_plan.donors) {
        const auto snapshot = model(q(path));
        parts << (snapshot ? modelDisplayName(*snapshot->model) : q(id));
    }
    return parts.isEmpty() ? QString() : tr("%1 chimera").arg(parts.join(QStringLiteral(" + ")));
}

void GraftDocument::setChimeraName(const QString& name) {
    // The name the recipient has already is not set again.
    if (isEmpty() || name == chimeraName() || (chimeraName().isEmpty() && name == recipientName())) {
        return;
    }
    GraftPlan after = m_plan;
    std::erase_if(after.operations, setsName);
    if (!name.isEmpty()) {
        GraftOperation op;
        op.kind = GraftOperation::Kind::SetMetadata;
        op.key = "general.name";
        op.value = MetaValue::fromString(name.toStdString());
        after.operations.push_back(std::move(op));
    }
    push(name.isEmpty() ? tr("Unname the chimera") : tr("Name the chimera %1").arg(name), std::move(after));
}

QString GraftDocument::metadataEdit(const QString& recipient, const std::string& key,
                                    std::optional<GraftOperation> op, const QString& text) {
    QString error;
    GraftPlan after = withBase(recipient, &error);
    if (!error.isEmpty()) {
        return error;
    }
    const auto ofKey = [&](const GraftOperation& o) {
        return (o.kind == GraftOperation::Kind::SetMetadata ||
                o.kind == GraftOperation::Kind::RemoveMetadata) &&
               o.key == key;
    };
    const auto at = std::find_if(after.operations.begin(), after.operations.end(), ofKey);
    if (at == after.operations.end() && !op) {
        return {};
    }
    // In the place of the key's earlier edit, so that the plan reads in the order it was made.
    const auto place = at - after.operations.begin();
    std::erase_if(after.operations, ofKey);
    if (op) {
        after.operations.insert(after.operations.begin() +
                                    std::min<std::ptrdiff_t>(place, std::ssize(after.operations)),
                                std::move(*op));
    }
    if (!after.operations.empty()) {
        std::string missing;
        const auto models = openModels(after, &missing);
        if (!models) {
            return tr("%1 is not open").arg(fileOf(missing));
        }
        std::set<std::string> known;
        for (const Finding& f : m_report.findings) {
            known.insert(f.message);
        }
        QStringList reasons;
        for (const Finding& f : checkGraft(after, GraftModels::fromModels(*models)).findings) {
            if (f.severity == Finding::Severity::Error && !known.contains(f.message)) {
                reasons << q(f.message);
            }
        }
        if (!reasons.isEmpty()) {
            return reasons.join(u'\n');
        }
    }
    push(text, std::move(after));
    return {};
}

QString GraftDocument::setMetadata(const QString& recipient, const std::string& key, const MetaValue& value) {
    const auto snapshot = model(recipient);
    if (snapshot == nullptr) {
        return tr("That model is no longer open");
    }
    const MetaValue* original = snapshot->model->find(key);
    if (original != nullptr && *original == value) {
        return metadataEdit(recipient, key, std::nullopt, tr("Restore %1").arg(q(key)));
    }
    GraftOperation op;
    op.kind = GraftOperation::Kind::SetMetadata;
    op.key = key;
    op.value = value;
    return metadataEdit(recipient, key, std::move(op), tr("Set %1").arg(q(key)));
}

QString GraftDocument::removeMetadata(const QString& recipient, const std::string& key) {
    const auto snapshot = model(recipient);
    if (snapshot == nullptr) {
        return tr("That model is no longer open");
    }
    if (snapshot->model->find(key) == nullptr) {
        // A key only the plan adds: removing it is dropping the edit.
        return metadataEdit(recipient, key, std::nullopt, tr("Remove %1").arg(q(key)));
    }
    GraftOperation op;
    op.kind = GraftOperation::Kind::RemoveMetadata;
    op.key = key;
    return metadataEdit(recipient, key, std::move(op), tr("Remove %1").arg(q(key)));
}

std::vector<std::pair<std::string, std::optional<MetaValue>>>
GraftDocument::metadataEdits(const QString& path) const {
    std::vector<std::pair<std::string, std::optional<MetaValue>>> edits;
    if (m_plan.base.empty() || q(m_plan.base) != path) {
        return edits;
    }
    for (const GraftOperation& o : m_plan.operations) {
        if (o.kind == GraftOperation::Kind::SetMetadata) {
            edits.emplace_back(o.key, o.value);
        } else if (o.kind == GraftOperation::Kind::RemoveMetadata) {
            edits.emplace_back(o.key, std::nullopt);
        }
    }
    return edits;
}

// The file name is the plan's before it is clean: whoever shows "saved as …" on the clean state
// sees the new name. Saved under the name it had, the stack may be clean already: changed() says so.
void GraftDocument::save(const QString& path) {
    saveGraftPlan(m_plan, path.toStdString());
    m_fileName = path;
    markSaved();
    emit changed();
}

void GraftDocument::load(const QString& path) {
    GraftPlan plan = loadGraftPlan(path.toStdString());
    m_undo->clear();
    setPlan(plan, path);
    m_undo->setClean();
}

void GraftDocument::recover(const QString& path) {
    GraftPlan plan = loadGraftPlan(path.toStdString());
    m_undo->clear();
    setPlan(plan, QString());
    m_undo->resetClean();
}

void GraftDocument::markSaved() {
    m_undo->setClean();
}

GraftDocument::OperationSummary GraftDocument::summary(int operation) const {
    OperationSummary s;
    for (const ChimeraTensor& t : m_report.layout.tensors) {
        if ((t.operation == operation && t.model != "base") || (t.purify && t.purifyOperation == operation) ||
            (t.quantizeOperation == operation && operation >= 0) ||
            (t.merge && t.mergeOperation == operation)) {
            ++s.tensors;
            if (const TensorInfo* info = source(t).tensor) {
                s.bytes += info->bytes;
            }
        }
    }
    for (const Finding& f : m_report.findings) {
        if (f.operation == operation) {
            s.errors += f.severity == Finding::Severity::Error;
            s.warnings += f.severity == Finding::Severity::Warning;
        }
    }
    return s;
}

QString GraftDocument::modelName(const std::string& id) {
    return id == "base" ? tr("the recipient") : q(id);
}

QStringList GraftDocument::modelNames(const MergeSpec& merge) {
    QStringList names;
    for (const MergeModel& m : merge.models) {
        names << modelName(m.model);
    }
    return names;
}

QString GraftDocument::describe(int operation) const {
    if (operation < 0 || operation >= int(m_plan.operations.size())) {
        return {};
    }
    return describe(m_plan.operations[std::size_t(operation)]);
}

QString GraftDocument::describe(const GraftOperation& o) const {
    using Kind = GraftOperation::Kind;
    switch (o.kind) {
    case Kind::Replace:
        if (o.select.names.empty()) {
            return tr("replace a selection from %1").arg(q(o.donor));
        }
        return tr("replace %1 from %2").arg(selectionText(o.select.names), q(o.donor));
    case Kind::MapLayer: {
        // The chimera names of layer toLayer, said as the donor's layer.
        std::vector<std::string> sources;
        for (const auto& name : o.select.names) {
            sources.push_back(layerTensorName(o.fromLayer, suffixInLayer(name, o.toLayer)));
        }
        return tr("map %1 from %2 onto layer %3")
            .arg(sources.empty() ? tr("layer %1").arg(o.fromLayer) : selectionText(sources), q(o.donor))
            .arg(o.toLayer);
    }
    case Kind::StackLayers: {
        QStringList ranges;
        for (const auto& r : o.stack) {
            ranges << tr("%1 %2–%3").arg(modelName(r.model)).arg(r.first).arg(r.last);
        }
        return tr("stack layers: %1").arg(ranges.join(QStringLiteral(", ")));
    }
    case Kind::DuplicateLayer:
        return tr("duplicate layer %1").arg(o.toLayer);
    case Kind::RemoveLayer:
        return tr("remove layer %1").arg(o.toLayer);
    case Kind::SetMetadata:
        return tr("set %1").arg(q(o.key));
    case Kind::RemoveMetadata:
        return tr("remove %1").arg(q(o.key));
    case Kind::Purify:
        return tr("purify %1 (%2, %3)")
            .arg(o.select.names.empty() ? tr("a selection") : selectionText(o.select.names),
                 q(purifyMethodName(o.purify.method)), q(purifyParamsText(o.purify)));
    case Kind::Quantize: {
        // A mix of the Quantization page names a type per tensor: the file type is only its default.
        const QString type = o.quantize.tensorTypes.empty()
                                 ? q(std::string(quantFileTypeName(o.quantize.fileType)))
                                 : tr("%1 with %2")
                                       .arg(q(std::string(quantFileTypeName(o.quantize.fileType))),
                                            countOf(qint64(o.quantize.tensorTypes.size()),
                                                    tr("tensor-type override"), tr("tensor-type overrides")));
        return o.quantize.imatrix.empty() ? tr("quantize to %1").arg(type)
                                          : tr("quantize to %1 with the importance matrix %2")
                                                .arg(type, q(fileLabel(o.quantize.imatrix)));
    }
    case Kind::Merge: {
        return tr("merge %1 with %2 (%3)")
            .arg(o.select.isEmpty()       ? tr("every tensor")
                 : o.select.names.empty() ? tr("a selection")
                                          : selectionText(o.select.names),
                 listText(modelNames(o.merge)), q(std::string(mergeMethodName(o.merge.method))));
    }
    }
    return {};
}

std::optional<NamedModels> GraftDocument::openModels(const GraftPlan& plan, std::string* missing) const {
    NamedModels models;
    auto add = [&](const std::string& id, const std::string& path) {
        const auto snapshot = model(q(path));
        if (snapshot == nullptr) {
            *missing = path;
            return false;
        }
        models.emplace_back(id, snapshot->model);
        return true;
    };
    if (!add("base", plan.base)) {
        return std::nullopt;
    }
    for (const auto& [id, path] : plan.donors) {
        if (!add(id, path)) {
            return std::nullopt;
        }
    }
    return models;
}

GraftDocument::Source GraftDocument::source(const ChimeraTensor& tensor) const {
    Source s;
    const std::string* path = tensor.model == "base" ? &m_plan.base : m_plan.donorPath(tensor.model);
    if (path == nullptr) {
        return s;
    }
    s.path = q(*path);
    s.snapshot = model(s.path);
    s.tensor = s.snapshot ? s.snapshot->model->findTensor(tensor.sourceName) : nullptr;
    return s;
}

std::optional<double> GraftDocument::chimeraThetaMean(
    const std::function<const ModelMeasurement*(const QString& path)>& measurementOf,
    const PurifiedThetaFn& purifiedTheta) const {
    double sum = 0;
    int measured = 0;
    for (const ChimeraTensor& t : m_report.layout.tensors) {
        const Source from = source(t);
        const ModelMeasurement* m = measurementOf(from.path);
        if (m == nullptr || from.tensor == nullptr) {
            return std::nullopt;
        }
        if ((t.purify || t.merge) && purifiedTheta) {
            const auto after = purifiedTheta(t, from);
            if (!after) {
                return std::nullopt;
            }
            if (*after) {
                sum += **after;
                ++measured;
            }
            continue;
        }
        if (const auto& theta = m->tensors[std::size_t(from.index())].theta) {
            sum += *theta;
            ++measured;
        }
    }
    return measured > 0 ? std::optional<double>(sum / measured) : std::nullopt;
}

std::vector<GraftDocument::Replacement> GraftDocument::replacements() const {
    std::vector<Replacement> out;
    const auto recipient = model(base());
    if (recipient == nullptr) {
        return out;
    }
    for (const ChimeraTensor& t : m_report.layout.tensors) {
        if (t.model == "base") {
            continue;
        }
        const TensorInfo* mine = recipient->model->findTensor(t.name);
        const Source theirs = source(t);
        if (mine == nullptr || theirs.tensor == nullptr) {
            continue;
        }
        Replacement r;
        r.recipientTensor = int(mine - recipient->model->tensors().data());
        r.donorPath = theirs.path;
        r.donorTensor = theirs.index();
        for (std::size_t k = 0; k < m_plan.donors.size(); ++k) {
            if (m_plan.donors[k].first == t.model) {
                r.donorIndex = int(k);
            }
        }
        out.push_back(r);
    }
    return out;
}

std::vector<GraftDocument::Purification> GraftDocument::purifications() const {
    std::vector<Purification> out;
    const auto recipient = model(base());
    if (recipient == nullptr) {
        return out;
    }
    for (const ChimeraTensor& t : m_report.layout.tensors) {
        // A merged tensor's θ is the merge's (purified as planned): the merge preview has it.
        const TensorInfo* mine = t.purify && !t.merge ? recipient->model->findTensor(t.name) : nullptr;
        if (mine == nullptr) {
            continue;
        }
        Purification p;
        p.recipientTensor = int(mine - recipient->model->tensors().data());
        p.source = source(t);
        p.target = t.targetType;
        if (p.source.tensor != nullptr) {
            out.push_back(std::move(p));
        }
    }
    return out;
}

} // namespace organ::model
