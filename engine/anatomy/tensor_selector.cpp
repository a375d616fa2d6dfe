#include "anatomy/tensor_selector.h"

#include <algorithm>

namespace organ {

bool TensorSelector::isEmpty() const {
    return names.empty() && !system && roles.empty() && !firstLayer;
}

bool TensorSelector::matches(const std::string& name, const TensorAnatomy& anatomy) const {
    if (!names.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
        return false;
    }
    if (system && anatomy.system != *system) {
        return false;
    }
    if (!roles.empty() && std::find(roles.begin(), roles.end(), anatomy.role) == roles.end()) {
        return false;
    }
    if (firstLayer && (!anatomy.layer || *anatomy.layer < *firstLayer || *anatomy.layer > *lastLayer)) {
        return false;
    }
    return true;
}

} // namespace organ
