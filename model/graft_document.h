#pragma once

#include "anatomy/anatomy_tree.h"
#include "display_names.h"
#include "graft/assembly.h"
#include "graft/drop_evaluation.h"
#include "graft/graft_plan.h"
#include "measure/model_measure.h"
#include "open_models.h"
#include "tensor_drag.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>
#include <map>
#include <memory>
#include <optional>

class QUndoStack;

namespace organ::model {

// The window's graft plan: the same GraftPlan the CLI runs, edited through an undo stack,
// checked against the models the window has open after every change. Drops of donor
// tensors become operations here (TensorDropHandler); nothing is written until assembly.
class GraftDocument : public QObject, public TensorDropHandler {
    Q_OBJECT
public:
    // Plans refer to models by their (absolute) path; `models` are the ones open in the window,
    // and the plan is checked again whenever one opens or closes.
    explicit GraftDocument(const OpenModels* models, QObject* parent = nullptr);
    ~GraftDocument() override;

    // The open model at `path`, or null.
    std::shared_ptr<const ModelSnapshot> model(const QString& path) const;

    const GraftPlan& plan() const { return m_plan; }
    const CompatibilityReport& report() const { return m_report; }
    // Why the plan cannot be checked (a model it names is not open), or empty.
    const QString& unavailable() const { return m_unavailable; }
    QUndoStack* undoStack() const { return m_undo; }
    bool isEmpty() const { return m_plan.operations.empty(); }
    bool isModified() const;
    // The recipient the plan grafts into, empty before the first operation.
    QString base() const { return QString::fromStdString(m_plan.base); }
    // True when the plan reads from the model (as base or donor).
    bool uses(const QString& path) const;
    QString donorId(const QString& path) const;

    // One outcome of a drop: the operation it adds (possibly narrowed to the compatible
    // tensors), or why nothing fits.
    struct DropResult {
        bool ok = false;
        QString message;     // the reason it does not fit, or what it adds
        QStringList leftOut; // why some dragged tensors were left out
        GraftOperation operation;
        GraftPlan plan;  // the plan with the operation added (base and donor set)
        int tensors = 0; // chimera tensors the operation sets
    };
    DropResult evaluateDrop(const TensorDrag& drag, const QString& recipient, const DropTarget& target) const;

    bool canDropTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target,
                        QString* message) override;
    bool dropTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target) override;
    // A merge of a donor's tensors into the recipient's of the same names: which recipient
    // tensors it covers, or why none fits. Nothing is planned until merge() is called with the
    // method the user chose.
    struct MergeRequest {
        bool ok = false;
        QString message; // the reason it does not fit, or what it merges
        QStringList leftOut;
        QString recipient;
        QString donor;                  // the model the tensors come from
        std::vector<std::string> names; // the recipient's tensors, in its order
    };
    MergeRequest evaluateMerge(const TensorDrag& drag, const QString& recipient,
                               const DropTarget& target) const;
    bool canMergeTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target,
                         QString* message) override;
    // Emits mergeRequested (queued: the drop ends first) when the drop fits.
    bool mergeTensors(const TensorDrag& drag, const QString& recipient, const DropTarget& target) override;
    // The plan's merge operation with its models named by path (the plan's ids replaced), or
    // nullopt when the plan merges nothing.
    std::optional<MergeSpec> plannedMerge() const;
    // Merges `names` (the recipient's tensors, as the chimera has them) as `byPath` says, its models
    // named by path: one undoable step. A plan merges once, so a plan that merges already keeps
    // merging what it merged, with these tensors added, by the new method and parameters. The
    // merge goes before the plan's quantize operation. False when nothing changed (the plan merged
    // these tensors so already: no step) or the recipient cannot be the plan's base; lastDropMessage()
    // then says which.
    bool merge(const QString& recipient, MergeSpec byPath, const std::vector<std::string>& names);

    // What the last dropTensors() said (added, left out), for the status bar.
    const QString& lastDropMessage() const { return m_lastDropMessage; }

    // Edits, each one undoable step.
    void removeOperation(int index);
    void moveOperation(int from, int to);
    void duplicateLayer(const QString& recipient, std::uint32_t layer);
    void removeLayer(const QString& recipient, std::uint32_t layer);
    // Passthrough: the recipient's layers 0…last, then first…last again, then the rest.
    void repeatLayers(const QString& recipient, std::uint32_t first, std::uint32_t last);
    // A purify operation on the chimera's tensors of these names, as the plan makes them.
    void purify(const QString& recipient, std::vector<std::string> names, const PurifyParams& params);
    // The plan's quantize operation (one at most: it replaces the one there), last in the list.
    void quantize(const QString& recipient, const QuantizeRecipe& recipe);
    // Removes every operation that reads `path` (all of them when it is the base).
    void removeOperationsUsing(const QString& path);
    // Makes `plan` (models by path) the document's plan, in place of what it held, as one undoable
    // step named `text` (the auto-surgeon's chosen plan); the plan is saved nowhere yet.
    void adopt(const GraftPlan& plan, const QString& text);
    void clear();
    // The chimera's general.name: a `set general.name` operation of the plan (added, changed,
    // or removed when empty), so that a saved plan names its chimera the same way.
    void setChimeraName(const QString& name);
    QString chimeraName() const; // the plan's, empty when it sets none
    QString
    defaultChimeraName() const;    // "<recipient> + <donor> chimera"; the recipient's own when only quantized
    QString recipientName() const; // the recipient's general.name, empty when it has none

    // The recipient's metadata, edited through set_metadata and remove_metadata operations, one per
    // key: an edit replaces the plan's earlier one of its key, and setting the value the model has
    // drops it. Each is one undoable step. Returns why it is refused, or empty: the plan grafts
    // into another model, or the edited plan's check finds an error the plan did not have (what
    // organ meta refuses: a key llama.cpp needs removed, a count the tensors disagree with…).
    QString setMetadata(const QString& recipient, const std::string& key, const MetaValue& value);
    QString removeMetadata(const QString& recipient, const std::string& key);
    // The plan's metadata edits of the model at `path`, key → value (nullopt: removed), in plan
    // order; none unless the plan grafts into it.
    std::vector<std::pair<std::string, std::optional<MetaValue>>> metadataEdits(const QString& path) const;

    // Plans on disk, the JSON of `organ assemble --plan`. Throw FormatError/IoError.
    void save(const QString& path);
    void load(const QString& path); // models it names must be opened by the caller
    // An autosaved plan brought back after a crash: the plan, unsaved (no file name, modified),
    // with an empty undo history.
    void recover(const QString& path);
    void markSaved();
    QString fileName() const { return m_fileName; }
    // How the window names a model of the plan: "the recipient" for the plan's base, else its id.
    static QString modelName(const std::string& id);
    // The models a merge combines, each named so.
    static QStringList modelNames(const MergeSpec& merge);

    // Per operation: the chimera tensors it sets and their bytes in the donor, and its
    // findings' worst severity.
    struct OperationSummary {
        int tensors = 0;
        std::uint64_t bytes = 0;
        int errors = 0;
        int warnings = 0;
    };
    OperationSummary summary(int operation) const;
    QString describe(int operation) const;
    QString describe(const GraftOperation& operation) const;

    // The open models `plan` names, "base" first; nullopt, with `missing` set to the file,
    // when one of them is not open.
    std::optional<NamedModels> openModels(const GraftPlan& plan, std::string* missing) const;

    // Where a chimera tensor's bytes come from: its model's path, and that model and tensor
    // when the model is open.
    struct Source {
        QString path;
        std::shared_ptr<const ModelSnapshot> snapshot;
        const TensorInfo* tensor = nullptr;
        int index() const { return tensor ? int(tensor - snapshot->model->tensors().data()) : -1; }
    };
    Source source(const ChimeraTensor& tensor) const;

    // θ mean of the chimera: each of its tensors with the θ measured in its source
    // (`measurementOf` by file; null when not measured); nullopt until every source is
    // measured, or when no tensor has a θ.
    // A purified or merged tensor counts with the θ `purifiedTheta` gives it (nullopt: not known
    // yet, and then neither is the mean).
    using PurifiedThetaFn =
        std::function<std::optional<std::optional<double>>(const ChimeraTensor&, const Source&)>;
    std::optional<double>
    chimeraThetaMean(const std::function<const ModelMeasurement*(const QString& path)>& measurementOf,
                     const PurifiedThetaFn& purifiedTheta = {}) const;

    // Recipient tensors the plan replaces, and where from.
    struct Replacement {
        int recipientTensor = -1;
        QString donorPath;
        int donorTensor = -1;
        int donorIndex = 0; // position of the donor in the plan, for its colour
    };
    std::vector<Replacement> replacements() const;

    // Recipient tensors the plan purifies (and does not merge): the chimera tensor, where its
    // bytes come from and the type it will be stored in.
    struct Purification {
        int recipientTensor = -1;
        Source source;
        TensorType target = TensorType::F32;
    };
    std::vector<Purification> purifications() const;

    // Recipient tensors the plan merges, and how ("ties of the recipient, farm and sea").
    struct Merged {
        int recipientTensor = -1;
        std::string name; // in the chimera
    };
    std::vector<Merged> mergedTensors() const;
    QString mergeText() const; // "ties of the recipient, farm and sea", empty when the plan merges nothing

    // Internal: the undo commands set the plan (and the file it is saved as) through this.
    void setPlan(const GraftPlan& plan, const QString& fileName);
    // Counts every change of the plan (edits, undo, redo, load): what was computed for one
    // revision (a chimera's check) is stale at another.
    quint64 revision() const { return m_revision; }
    // The revision of the last change to what the chimera computes: naming it (general.name, as
    // Assemble chimera… does) leaves its vital signs current.
    quint64 chimeraRevision() const { return m_chimeraRevision; }
    // What the last edit did, for the status bar, once: empty after undo and redo, which the
    // undo stack names itself.
    QString takeEditMessage();
    // Why the plan takes no operation on `recipient` (it grafts into another model), empty when
    // it does.
    QString refusal(const QString& recipient) const;

signals:
    void changed();
    // A merge was dropped: the window asks for the method and parameters, then calls merge().
    void mergeRequested(const organ::model::GraftDocument::MergeRequest& request);

private:
    // An undoable edit named `text`; `message` (else `text`) is what the status bar says of it.
    // A new file starts a plan saved nowhere yet (Clear).
    void push(const QString& text, GraftPlan after, const QString& message = {}, bool newFile = false);
    void recheck();
    GraftPlan withBase(const QString& recipient, QString* error) const;
    // Adds `op` at the end of the plan of `recipient` (a quantize operation replaces the plan's).
    void layerOperation(const QString& recipient, GraftOperation op, const QString& text);
    // The plan with `key`'s edit replaced by `op` (none: dropped), checked: the refusal, or empty
    // once pushed as `text`.
    QString metadataEdit(const QString& recipient, const std::string& key, std::optional<GraftOperation> op,
                         const QString& text);

    GraftPlan m_plan;
    CompatibilityReport m_report;
    QString m_unavailable;
    QUndoStack* m_undo = nullptr;
    const OpenModels* m_models;
    QString m_lastDropMessage;
    QString m_editMessage;
    QString m_fileName;
    quint64 m_revision = 0;
    quint64 m_chimeraRevision = 0;
};

} // namespace organ::model
