#include "fixtures.h"

#include "gguf/gguf_model.h"
#include "organs/organ_directory.h"
#include "quant/dequant.h"

#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QTest>
#include <memory>
#include <sys/wait.h>
#include <unistd.h>

namespace organ::testing {

TensorToWrite patternTensor(const std::string& name, TensorType type, std::vector<std::uint64_t> dims,
                            std::uint8_t seed) {
    TensorToWrite t;
    t.name = name;
    t.type = type;
    t.nDims = static_cast<std::uint32_t>(dims.size());
    std::uint64_t elements = 1;
    for (std::size_t d = 0; d < dims.size(); ++d) {
        t.ne[d] = dims[d];
        elements *= dims[d];
    }
    const auto& traits = traitsOf(type);
    auto buffer =
        std::make_shared<std::vector<std::byte>>(elements / traits.blockSize * traits.bytesPerBlock);
    for (std::size_t i = 0; i < buffer->size(); ++i) {
        // Small values: valid as floats of every width, never NaN patterns in F16/F32.
        (*buffer)[i] = static_cast<std::byte>((i * 7 + seed) % 61);
    }
    t.source.bytes = *buffer;
    t.source.owner = buffer;
    return t;
}

bool extractFixture(const QString& model, const QString& directory) {
    const JobResult result = extractOrgans(*GgufModel::open(model.toStdString()), directory.toStdString());
    if (!result.isOk()) {
        qWarning("fixture %s: %s", qPrintable(directory), result.message.c_str());
    }
    return result.isOk();
}

QByteArray folderDigest(const QString& folder) {
    QCryptographicHash all(QCryptographicHash::Sha256);
    QStringList files;
    for (QDirIterator it(folder, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories); it.hasNext();) {
        files.push_back(it.next());
    }
    files.sort();
    for (const QString& file : files) {
        all.addData(file.toUtf8());
        all.addData(readAll(file));
    }
    return all.result();
}

qint64 exitedProcess() {
    const pid_t child = ::fork();
    if (child == 0) {
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return child;
}

bool writeFixture(const QString& path, const GgufWriteSpec& spec) {
    const JobResult result = writeGguf(path.toStdString(), spec);
    if (!result.isOk()) {
        qWarning("fixture %s: %s", qPrintable(path), result.message.c_str());
    }
    return result.isOk();
}

QStringList writeSplitFixture(const QString& source, const QString& prefix, unsigned parts) {
    const auto file = GgufFile::open(source.toStdString());
    const GgufWriteSpec whole = specFromFile(*file);
    const std::size_t count = whole.tensors.size();
    QStringList paths;
    for (unsigned part = 0; part < parts; ++part) {
        GgufWriteSpec spec;
        if (part == 0) {
            spec.metadata = whole.metadata;
        }
        spec.set("split.no", MetaValue::fromU16(static_cast<std::uint16_t>(part)));
        spec.set("split.count", MetaValue::fromU16(static_cast<std::uint16_t>(parts)));
        spec.set("split.tensors.count", MetaValue::fromI32(static_cast<std::int32_t>(count)));
        for (std::size_t i = count * part / parts; i < count * (part + 1) / parts; ++i) {
            spec.tensors.push_back(whole.tensors[i]);
        }
        const QString path = QString::fromStdString(splitPartPath(prefix.toStdString(), part + 1, parts));
        if (!writeFixture(path, spec)) {
            return {};
        }
        paths << path;
    }
    return paths;
}

std::vector<float> tensorValues(const GgufModel& model, const std::string& name) {
    const TensorInfo& t = *model.findTensor(name);
    std::vector<float> values(static_cast<std::size_t>(t.elements));
    dequantizeRange(t.type, model.tensorData(t), 0, values.size(), values.data());
    return values;
}

QByteArray readAll(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

bool writeAll(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly | QIODevice::Truncate) && file.write(bytes) == bytes.size();
}

GgufWriteSpec perLayerLlama(std::uint8_t seed, std::vector<bool> flags, std::uint32_t width) {
    GgufWriteSpec spec;
    const std::uint32_t blocks = 5;
    const std::uint64_t embd = 16;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    spec.set("general.name", MetaValue::fromString("per-layer"));
    spec.set("llama.context_length", MetaValue::fromU32(64));
    spec.set("llama.embedding_length", MetaValue::fromU32(embd));
    spec.set("llama.block_count", MetaValue::fromU32(blocks));
    std::vector<MetaValue> ff;
    std::vector<MetaValue> heads;
    std::vector<MetaValue> pattern;
    for (std::uint32_t i = 0; i < blocks; ++i) {
        ff.push_back(MetaValue::fromU32(width));
        heads.push_back(MetaValue::fromU32(4));
        pattern.push_back(MetaValue::fromBool(flags[i]));
    }
    spec.set("llama.feed_forward_length", MetaValue::fromArray(ValueType::U32, ff));
    spec.set("llama.attention.head_count", MetaValue::fromArray(ValueType::U32, heads));
    spec.set("llama.attention.head_count_kv", MetaValue::fromArray(ValueType::U32, heads));
    spec.set("llama.attention.sliding_window_pattern", MetaValue::fromArray(ValueType::Bool, pattern));
    spec.set("llama.attention.layer_norm_rms_epsilon", MetaValue::fromF32(1e-5f));
    spec.set("tokenizer.ggml.model", MetaValue::fromString("llama"));
    std::vector<std::string> tokens;
    for (int k = 0; k < 32; ++k) {
        tokens.push_back("t" + std::to_string(k));
    }
    spec.set("tokenizer.ggml.tokens", MetaValue::fromStrings(tokens));
    spec.tensors.push_back(patternTensor("token_embd.weight", TensorType::F32, {embd, 32}, seed));
    for (std::uint32_t i = 0; i < blocks; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        const std::uint64_t f = width;
        spec.tensors.push_back(patternTensor(b + "attn_norm.weight", TensorType::F32, {embd}, seed));
        for (const char* w : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"}) {
            spec.tensors.push_back(patternTensor(b + w, TensorType::F32, {embd, embd}, seed));
        }
        spec.tensors.push_back(patternTensor(b + "ffn_norm.weight", TensorType::F32, {embd}, seed));
        spec.tensors.push_back(patternTensor(b + "ffn_gate.weight", TensorType::F32, {embd, f}, seed));
        spec.tensors.push_back(patternTensor(b + "ffn_up.weight", TensorType::F32, {embd, f}, seed));
        spec.tensors.push_back(patternTensor(b + "ffn_down.weight", TensorType::F32, {f, embd}, seed));
    }
    spec.tensors.push_back(patternTensor("output_norm.weight", TensorType::F32, {embd}, seed));
    return spec;
}

GraftPlan replacePlan(const QString& base, const QString& donor, const TensorSelector& select) {
    GraftPlan plan;
    plan.base = base.toStdString();
    plan.donors.emplace_back("healthy", donor.toStdString());
    GraftOperation o;
    o.kind = GraftOperation::Kind::Replace;
    o.donor = "healthy";
    o.select = select;
    plan.operations.push_back(o);
    return plan;
}

TensorSelector organsOfLayers(std::uint32_t first, std::uint32_t last) {
    TensorSelector s;
    s.system = System::Organ;
    s.firstLayer = first;
    s.lastLayer = last;
    return s;
}

} // namespace organ::testing
