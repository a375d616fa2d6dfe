#include "anatomy/anatomy_tree.h"

#include <algorithm>
#include <map>

namespace organ {
namespace {

class TreeBuilder {
public:
    TreeBuilder(const GgufModel& model, const ModelAnatomy& anatomy) : m_model(model), m_anatomy(anatomy) {}

    int add(AnatomyNode node, int parent) {
        node.parent = parent;
        const int index = static_cast<int>(m_tree.nodes.size());
        auto& siblings = parent < 0 ? m_tree.roots : m_tree.nodes[parent].children;
        node.row = static_cast<int>(siblings.size());
        siblings.push_back(index);
        m_tree.nodes.push_back(std::move(node));
        return index;
    }

    void addTensors(const std::vector<int>& tensors, int parent) {
        for (int t : tensors) {
            AnatomyNode node;
            node.kind = AnatomyNode::Kind::Tensor;
            node.tensor = t;
            node.system = m_anatomy.tensors[t].system;
            node.layer = m_anatomy.tensors[t].layer;
            node.stats.add(m_model.tensors()[t]);
            add(std::move(node), parent);
        }
    }

    // Sums the stats of every node from its children (children come after parents).
    AnatomyTree finish() {
        for (int i = static_cast<int>(m_tree.nodes.size()) - 1; i >= 0; --i) {
            const AnatomyNode& node = m_tree.nodes[i];
            if (node.parent >= 0) {
                GroupStats& up = m_tree.nodes[node.parent].stats;
                up.tensors += node.stats.tensors;
                up.parameters += node.stats.parameters;
                up.bytes += node.stats.bytes;
            }
        }
        return std::move(m_tree);
    }

private:
    const GgufModel& m_model;
    const ModelAnatomy& m_anatomy;
    AnatomyTree m_tree;
};

// Tensor indices in anatomical order: rule order, then name.
std::vector<int> anatomicalOrder(const GgufModel& model, const ModelAnatomy& anatomy) {
    std::vector<int> order(model.tensors().size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        order[i] = static_cast<int>(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        const auto& ta = anatomy.tensors[a];
        const auto& tb = anatomy.tensors[b];
        if (ta.order != tb.order) {
            return ta.order < tb.order;
        }
        return model.tensors()[a].name < model.tensors()[b].name;
    });
    return order;
}

} // namespace

AnatomyTree buildAnatomyTree(const GgufModel& model, const ModelAnatomy& anatomy, TreeGrouping grouping) {
    TreeBuilder builder(model, anatomy);
    // Key: (outer, inner) where absent layers sort first as -1.
    std::map<std::pair<long, long>, std::vector<int>> groups;
    for (int t : anatomicalOrder(model, anatomy)) {
        const auto& a = anatomy.tensors[t];
        const long system = static_cast<long>(a.system);
        const long layer = a.layer ? static_cast<long>(*a.layer) : -1;
        groups[grouping == TreeGrouping::SystemLayer ? std::pair(system, layer) : std::pair(layer, system)]
            .push_back(t);
    }
    int outerNode = -1;
    long outerKey = -2;
    for (const auto& [key, tensors] : groups) {
        if (key.first != outerKey) {
            outerKey = key.first;
            AnatomyNode outer;
            if (grouping == TreeGrouping::SystemLayer) {
                outer.kind = AnatomyNode::Kind::System;
                outer.system = static_cast<System>(key.first);
            } else {
                outer.kind = AnatomyNode::Kind::Layer;
                if (key.first >= 0) {
                    outer.layer = static_cast<std::uint32_t>(key.first);
                }
            }
            outerNode = builder.add(std::move(outer), -1);
        }
        if (grouping == TreeGrouping::SystemLayer && key.second < 0) {
            builder.addTensors(tensors, outerNode); // embeddings, output, output norm
            continue;
        }
        AnatomyNode inner;
        if (grouping == TreeGrouping::SystemLayer) {
            inner.kind = AnatomyNode::Kind::Layer;
            inner.system = static_cast<System>(key.first);
            inner.layer = static_cast<std::uint32_t>(key.second);
        } else {
            inner.kind = AnatomyNode::Kind::System;
            inner.system = static_cast<System>(key.second);
            if (key.first >= 0) {
                inner.layer = static_cast<std::uint32_t>(key.first);
            }
        }
        builder.addTensors(tensors, builder.add(std::move(inner), outerNode));
    }
    return builder.finish();
}

std::shared_ptr<const ModelSnapshot> ModelSnapshot::of(std::shared_ptr<const GgufModel> model) {
    auto snapshot = std::make_shared<ModelSnapshot>();
    snapshot->model = std::move(model);
    snapshot->anatomy = analyzeAnatomy(*snapshot->model);
    snapshot->bySystem = buildAnatomyTree(*snapshot->model, snapshot->anatomy, TreeGrouping::SystemLayer);
    snapshot->byLayer = buildAnatomyTree(*snapshot->model, snapshot->anatomy, TreeGrouping::LayerSystem);
    return snapshot;
}

} // namespace organ
