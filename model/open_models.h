#pragma once

#include "anatomy/anatomy_tree.h"
#include "measure/model_measure.h"

#include <QObject>
#include <QString>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace organ::model {

// The Z-measure of one open model's tensors, stored once: the anatomy tree, the θ heatmap, the
// side charts and the inspector of every view showing the model read it here and follow its
// signals instead of keeping copies.
class TensorResults : public QObject {
    Q_OBJECT
public:
    explicit TensorResults(std::size_t tensors, QObject* parent = nullptr);

    std::size_t size() const { return m_results.size(); }
    // A tensor's result; nullopt until it is measured (and for an index out of range).
    const std::optional<ZResult>& at(int tensor) const;
    std::optional<double> theta(int tensor) const;
    // The whole measurement (model figures, parameters, cache), once it is complete.
    const ModelMeasurement* measurement() const { return m_measurement.get(); }
    std::shared_ptr<const ModelMeasurement> measurementPointer() const { return m_measurement; }

    // One tensor measured: emits changed() with the θ it had before.
    void set(int tensor, const ZResult& result);
    // The measurement is complete: every tensor's result at once (one reset(), so a model of a
    // thousand tensors costs the event loop one pass when it comes from the cache).
    void setMeasurement(std::shared_ptr<const ModelMeasurement> measurement);

signals:
    void changed(int tensor, std::optional<double> thetaBefore);
    void reset();

private:
    std::vector<std::optional<ZResult>> m_results;
    std::shared_ptr<const ModelMeasurement> m_measurement;
};

// Points `slot`, a member of `receiver`, at `results` (null: none): the old results' signals no
// longer reach the receiver; the new ones' changed(tensor, thetaBefore) calls `changed`, their
// reset() and their destruction (which also nulls the slot) call `reset`, and so does this.
template <typename Receiver, typename Changed, typename Reset>
void followResults(Receiver* receiver, const TensorResults*& slot, const TensorResults* results,
                   Changed changed, Reset reset) {
    if (slot != nullptr) {
        QObject::disconnect(slot, nullptr, receiver, nullptr);
    }
    slot = results;
    if (slot != nullptr) {
        QObject::connect(slot, &TensorResults::changed, receiver, changed);
        QObject::connect(slot, &TensorResults::reset, receiver, reset);
        QObject::connect(slot, &QObject::destroyed, receiver, [&slot, reset] {
            slot = nullptr;
            reset();
        });
    }
    reset();
}

// The models open in the window, one entry per file however many views show it: its snapshot and
// its measurement. Views take a model when they open and give it back when they close; the
// last one to give it back closes it.
class OpenModels : public QObject {
    Q_OBJECT
public:
    struct Entry {
        std::shared_ptr<const ModelSnapshot> snapshot;
        TensorResults* results = nullptr;
    };

    explicit OpenModels(QObject* parent = nullptr) : QObject(parent) {}

    // The model at `path` (absolute): the entry of the views that have it open, or the model
    // opened now (`opened` says which). Throws the engine's error when it cannot be opened.
    Entry take(const QString& path, bool* opened = nullptr);
    // A snapshot opened elsewhere (tests, a document read from the command line) as an entry.
    Entry take(std::shared_ptr<const ModelSnapshot> snapshot, bool* opened = nullptr);
    // A view of `path` closed; the model closes with the last one.
    void giveBack(const QString& path);

    std::optional<Entry> find(const QString& path) const;
    std::vector<QString> paths() const;

signals:
    void opened(const QString& path);
    void closed(const QString& path);

private:
    struct Held {
        Entry entry;
        int views = 0;
    };
    std::map<QString, Held> m_models;
};

} // namespace organ::model
