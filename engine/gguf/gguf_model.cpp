#include "gguf/gguf_model.h"

#include "support/errors.h"
#include "support/text_format.h"

#include <algorithm>
#include <cstdio>

namespace organ {
namespace {

std::optional<std::uint64_t> splitKey(const GgufFile& file, std::string_view key) {
    const MetaValue* value = file.find(key);
    return value != nullptr ? value->asUInt() : std::nullopt;
}

void checkShard(const GgufFile& shard, unsigned index, std::uint64_t count) {
    const std::string label = fileLabel(shard.path());
    const auto no = splitKey(shard, "split.no");
    if (!no || *no != index) {
        throw FormatError(label + ": key 'split.no' is " +
                          (no ? std::to_string(*no) : std::string("missing")) + ", expected " +
                          std::to_string(index) + " for part " + std::to_string(index + 1));
    }
    const auto partCount = splitKey(shard, "split.count");
    if (!partCount || *partCount != count) {
        throw FormatError(label + ": key 'split.count' is " +
                          (partCount ? std::to_string(*partCount) : std::string("missing")) + ", expected " +
                          std::to_string(count) + " as in the first part");
    }
}

} // namespace

// By hand: std::regex recurses once per character of `(.*)`, and a path of some 26 000
// characters overflowed the stack.
bool parseSplitName(const std::string& path, SplitName& out) {
    constexpr std::string_view kShape = "-00000-of-00000.gguf";
    if (path.size() < kShape.size()) {
        return false;
    }
    const std::string_view tail = std::string_view(path).substr(path.size() - kShape.size());
    auto number = [&](std::size_t at) {
        unsigned value = 0;
        for (std::size_t i = at; i < at + 5; ++i) {
            value = value * 10 + unsigned(tail[i] - '0');
        }
        return value;
    };
    for (std::size_t i = 0; i < kShape.size(); ++i) {
        const bool digit = kShape[i] == '0';
        if (digit ? tail[i] < '0' || tail[i] > '9' : tail[i] != kShape[i]) {
            return false;
        }
    }
    out.prefix = path.substr(0, path.size() - kShape.size());
    out.part = number(1);
    out.count = number(10);
    return out.part >= 1 && out.part <= out.count;
}

std::string splitPartPath(const std::string& prefix, unsigned part, unsigned count) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "-%05u-of-%05u.gguf", part, count);
    return prefix + suffix;
}

bool hasGgufExtension(std::string_view path) {
    if (path.size() < 5) {
        return false;
    }
    std::string tail(path.substr(path.size() - 5));
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return std::tolower(c); });
    return tail == ".gguf";
}

std::shared_ptr<const GgufModel> GgufModel::open(const RootedPath& path) {
    auto model = std::make_shared<GgufModel>();
    SplitName split;
    const bool isPart = parseSplitName(path.path, split);
    model->m_shards.push_back(
        GgufFile::open(isPart ? path.at(splitPartPath(split.prefix, 1, split.count)) : path));
    const GgufFile& first = *model->m_shards.front();
    const auto declared = splitKey(first, "split.count");
    if (!declared || *declared <= 1) {
        model->m_tensors = first.tensors();
        model->indexTensors();
        return model;
    }
    const std::string label = fileLabel(first.path());
    if (!isPart || split.count != *declared) {
        throw FormatError(label + ": key 'split.count' says " + std::to_string(*declared) +
                          " parts, but the file name does not end in " +
                          splitPartPath("", 1, static_cast<unsigned>(*declared)));
    }
    std::vector<std::shared_ptr<const GgufFile>> parts{model->m_shards.front()};
    for (unsigned part = 2; part <= split.count; ++part) {
        const std::string partPath = splitPartPath(split.prefix, part, split.count);
        try {
            parts.push_back(GgufFile::open(path.at(partPath)));
        } catch (const IoError& error) {
            throw IoError(label + ": part " + std::to_string(part) + " of " + std::to_string(split.count) +
                          " is missing or unreadable: " + error.what());
        }
    }
    return fromParts(std::move(parts));
}

std::shared_ptr<const GgufModel> GgufModel::fromParts(std::vector<std::shared_ptr<const GgufFile>> parts) {
    auto model = std::make_shared<GgufModel>();
    model->m_shards = std::move(parts);
    const GgufFile& first = *model->m_shards.front();
    const std::string label = fileLabel(first.path());
    const auto declared = splitKey(first, "split.count");
    if (!declared || *declared != model->m_shards.size()) {
        throw FormatError(label + ": key 'split.count' is " +
                          (declared ? std::to_string(*declared) : std::string("missing")) + ", but " +
                          std::to_string(model->m_shards.size()) + " parts are given");
    }
    for (unsigned part = 0; part < model->m_shards.size(); ++part) {
        checkShard(*model->m_shards[part], part, *declared);
    }
    for (std::uint32_t shard = 0; shard < model->m_shards.size(); ++shard) {
        for (TensorInfo tensor : model->m_shards[shard]->tensors()) {
            if (model->m_byName.count(tensor.name) != 0) {
                throw FormatError(fileLabel(model->m_shards[shard]->path()) + ": tensor '" + tensor.name +
                                  "' also appears in an earlier part");
            }
            tensor.shard = shard;
            model->m_byName.emplace(tensor.name, model->m_tensors.size());
            model->m_tensors.push_back(std::move(tensor));
        }
    }
    const auto total = splitKey(first, "split.tensors.count");
    if (!total || *total != model->m_tensors.size()) {
        throw FormatError(label + ": key 'split.tensors.count' is " +
                          (total ? std::to_string(*total) : std::string("missing")) + ", but the " +
                          std::to_string(model->m_shards.size()) + " parts hold " +
                          std::to_string(model->m_tensors.size()) + " tensors");
    }
    return model;
}

std::shared_ptr<const GgufModel> GgufModel::fromFile(std::shared_ptr<const GgufFile> file) {
    if (const auto declared = splitKey(*file, "split.count"); declared && *declared > 1) {
        throw FormatError(fileLabel(file->path()) + ": is one of " + std::to_string(*declared) +
                          " parts of a split model: open it from its files");
    }
    auto model = std::make_shared<GgufModel>();
    model->m_shards.push_back(std::move(file));
    model->m_tensors = model->m_shards.front()->tensors();
    model->indexTensors();
    return model;
}

std::shared_ptr<const GgufModel> GgufModel::partAlone(std::shared_ptr<const GgufFile> file) {
    auto model = std::make_shared<GgufModel>();
    model->m_shards.push_back(std::move(file));
    model->m_tensors = model->m_shards.front()->tensors();
    model->indexTensors();
    return model;
}

std::shared_ptr<const GgufModel> GgufModel::fromTensorFiles(std::shared_ptr<const GgufFile> header,
                                                            std::vector<TensorFile> data) {
    auto model = std::make_shared<GgufModel>();
    model->m_shards.push_back(std::move(header));
    model->m_tensors = model->m_shards.front()->tensors();
    if (data.size() != model->m_tensors.size()) {
        throw FormatError(fileLabel(model->path()) + ": " + std::to_string(data.size()) +
                          " tensor files for " + std::to_string(model->m_tensors.size()) + " tensors");
    }
    for (std::size_t i = 0; i < data.size(); ++i) {
        const TensorInfo& t = model->m_tensors[i];
        const std::uint64_t size = data[i].mapping->size();
        if (data[i].offset > size || t.bytes > size - data[i].offset) {
            throw FormatError(fileLabel(data[i].mapping->path()) + ": " + std::to_string(size) +
                              " bytes, too short for tensor '" + t.name + "' (" +
                              std::to_string(data[i].offset + t.bytes) + ")");
        }
    }
    model->m_tensorFiles = std::move(data);
    model->indexTensors();
    return model;
}

void GgufModel::indexTensors() {
    m_byName.reserve(m_tensors.size());
    for (std::size_t i = 0; i < m_tensors.size(); ++i) {
        m_byName.emplace(m_tensors[i].name, i);
    }
}

const TensorInfo* GgufModel::findTensor(std::string_view name) const {
    const auto it = m_byName.find(std::string(name));
    return it == m_byName.end() ? nullptr : &m_tensors[it->second];
}

std::span<const std::byte> GgufModel::tensorData(const TensorInfo& tensor) const {
    if (m_tensorFiles.empty()) {
        return m_shards.at(tensor.shard)->tensorData(tensor);
    }
    const TensorFile& file = m_tensorFiles.at(m_byName.at(tensor.name));
    return file.mapping->bytes().subspan(static_cast<std::size_t>(file.offset),
                                         static_cast<std::size_t>(tensor.bytes));
}

const std::shared_ptr<const MappedFile>& GgufModel::tensorMapping(const TensorInfo& tensor) const {
    if (m_tensorFiles.empty()) {
        return m_shards.at(tensor.shard)->mapping();
    }
    return m_tensorFiles.at(m_byName.at(tensor.name)).mapping;
}

TensorSource GgufModel::tensorSource(const TensorInfo& tensor) const {
    TensorSource source;
    source.bytes = tensorData(tensor);
    source.mapping = tensorMapping(tensor);
    if (!m_tensorFiles.empty()) {
        source.promised = m_tensorFiles.at(m_byName.at(tensor.name)).promised;
    }
    return source;
}

std::vector<std::shared_ptr<const MappedFile>> GgufModel::files() const {
    std::vector<std::shared_ptr<const MappedFile>> out;
    for (const auto& shard : m_shards) {
        out.push_back(shard->mapping());
    }
    for (const TensorFile& file : m_tensorFiles) {
        out.push_back(file.mapping);
    }
    return out;
}

std::uint64_t GgufModel::fileSize() const {
    std::uint64_t total = 0;
    for (const auto& shard : m_shards) {
        total += shard->fileSize();
    }
    return total;
}

std::string GgufModel::architecture() const {
    const MetaValue* value = find("general.architecture");
    const auto text = value != nullptr ? value->asString() : std::nullopt;
    return text ? std::string(*text) : std::string();
}

std::string GgufModel::name() const {
    const MetaValue* value = find("general.name");
    if (const auto text = value != nullptr ? value->asString() : std::nullopt; text && !text->empty()) {
        return std::string(*text);
    }
    std::string label = fileLabel(path());
    if (label.size() > 5 && label.ends_with(".gguf")) {
        label.resize(label.size() - 5);
    }
    return label;
}

std::optional<std::uint64_t> GgufModel::archValue(std::string_view key) const {
    const MetaValue* value = find(architecture() + "." + std::string(key));
    return value != nullptr ? value->asUInt() : std::nullopt;
}

} // namespace organ
