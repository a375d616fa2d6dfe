#include "open_models.h"

#include "organs/organ_directory.h"

namespace organ::model {

TensorResults::TensorResults(std::size_t tensors, QObject* parent)
    : QObject(parent), m_results(tensors, std::nullopt) {}

const std::optional<ZResult>& TensorResults::at(int tensor) const {
    static const std::optional<ZResult> none;
    return tensor < 0 || std::size_t(tensor) >= m_results.size() ? none : m_results[std::size_t(tensor)];
}

std::optional<double> TensorResults::theta(int tensor) const {
    const auto& result = at(tensor);
    return result ? result->theta : std::nullopt;
}

void TensorResults::set(int tensor, const ZResult& result) {
    if (tensor < 0 || std::size_t(tensor) >= m_results.size()) {
        return;
    }
    const std::optional<double> before = theta(tensor);
    m_results[std::size_t(tensor)] = result;
    emit changed(tensor, before);
}

void TensorResults::setMeasurement(std::shared_ptr<const ModelMeasurement> measurement) {
    if (!measurement || measurement->tensors.size() != m_results.size()) {
        return;
    }
    m_measurement = std::move(measurement);
    for (std::size_t t = 0; t < m_results.size(); ++t) {
        m_results[t] = m_measurement->tensors[t];
    }
    emit reset();
}

OpenModels::Entry OpenModels::take(const QString& path, bool* opened) {
    if (const auto it = m_models.find(path); it != m_models.end()) {
        ++it->second.views;
        if (opened != nullptr) {
            *opened = false;
        }
        return it->second.entry;
    }
    return take(ModelSnapshot::of(openModel(path.toStdString())), opened);
}

OpenModels::Entry OpenModels::take(std::shared_ptr<const ModelSnapshot> snapshot, bool* opened) {
    const QString path = QString::fromStdString(snapshot->model->path());
    Held& held = m_models[path];
    const bool fresh = held.views++ == 0;
    if (fresh) {
        held.entry.results = new TensorResults(snapshot->model->tensors().size(), this);
        held.entry.snapshot = std::move(snapshot);
    }
    if (opened != nullptr) {
        *opened = fresh;
    }
    if (fresh) {
        emit this->opened(path);
    }
    return held.entry;
}

void OpenModels::giveBack(const QString& path) {
    const auto it = m_models.find(path);
    if (it == m_models.end() || --it->second.views > 0) {
        return;
    }
    TensorResults* results = it->second.entry.results;
    m_models.erase(it);
    emit closed(path);
    results->deleteLater();
}

std::optional<OpenModels::Entry> OpenModels::find(const QString& path) const {
    const auto it = m_models.find(path);
    return it == m_models.end() ? std::nullopt : std::optional(it->second.entry);
}

std::vector<QString> OpenModels::paths() const {
    std::vector<QString> out;
    for (const auto& [path, held] : m_models) {
        out.push_back(path);
    }
    return out;
}

} // namespace organ::model
