#pragma once

#include "anatomy/anatomy.h"

#include <memory>
#include <vector>

namespace organ {

// The anatomy as a tree, flat: nodes refer to each other by index. Built once per model
// and handed to the GUI as an immutable snapshot.
struct AnatomyNode {
    enum class Kind : std::uint8_t { System, Layer, Tensor };
    Kind kind = Kind::Tensor;
    int parent = -1;
    int row = 0; // index among the parent's children (or among the roots)
    std::vector<int> children;
    System system = System::Other;      // System nodes, and Layer nodes under a system
    std::optional<std::uint32_t> layer; // Layer nodes, and System nodes under a layer
    int tensor = -1;                    // Tensor nodes: index into GgufModel::tensors()
    GroupStats stats;                   // everything below the node
};

enum class TreeGrouping : std::uint8_t {
    SystemLayer, // system → layer → tensor; tensors outside layers sit under their system
    LayerSystem, // layer → system → tensor; tensors outside layers under a "no layer" node
};

struct AnatomyTree {
    std::vector<AnatomyNode> nodes;
    std::vector<int> roots;
};

AnatomyTree buildAnatomyTree(const GgufModel& model, const ModelAnatomy& anatomy, TreeGrouping grouping);

// A model with everything the window shows about it, computed once (on any thread).
struct ModelSnapshot {
    std::shared_ptr<const GgufModel> model;
    ModelAnatomy anatomy;
    AnatomyTree bySystem;
    AnatomyTree byLayer;

    // Of a model opened already (a GGUF, or an organ directory: organs/organ_directory.h openModel).
    static std::shared_ptr<const ModelSnapshot> of(std::shared_ptr<const GgufModel> model);
};

} // namespace organ
