#include "gguf/gguf_writer.h"

#include "support/align.h"
#include "support/digest.h"
#include "support/errors.h"
#include "support/file_copy.h"
#include "support/read_ahead.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/write_behind.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <unordered_set>

namespace organ {
namespace {

constexpr std::size_t kChunk = 4u << 20;
constexpr std::uint64_t kWriteBehind = 8u << 20;

template <typename T> void put(std::vector<std::byte>& out, T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
}

void putString(std::vector<std::byte>& out, std::string_view text) {
    put<std::uint64_t>(out, text.size());
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    out.insert(out.end(), p, p + text.size());
}

struct PlannedTensor {
    const TensorToWrite* tensor;
    std::uint64_t bytes;
    std::uint64_t offset;
    std::uint64_t digest = 0;
    // Copied file to file (appendFileRange), never seen here: checked against its source instead
    // of a digest.
    bool copied = false;
};

std::uint32_t alignmentOf(const GgufWriteSpec& spec, const std::string& label) {
    for (const auto& [key, value] : spec.metadata) {
        if (key != "general.alignment") {
            continue;
        }
        const auto v = value.asUInt();
        if (value.type() != ValueType::U32 || !v || *v == 0 || (*v & (*v - 1)) != 0 ||
            *v > kGgufMaxAlignment) {
            throw FormatError(label + ": key 'general.alignment' must be a u32 power of two of at most " +
                              std::to_string(kGgufMaxAlignment) + " (ggml uses 32)");
        }
        return static_cast<std::uint32_t>(*v);
    }
    return kGgufDefaultAlignment;
}

std::vector<PlannedTensor> planTensors(const GgufWriteSpec& spec, std::uint32_t alignment,
                                       const std::string& label) {
    std::vector<PlannedTensor> planned;
    planned.reserve(spec.tensors.size());
    std::unordered_set<std::string_view> names;
    std::uint64_t offset = 0;
    for (const auto& tensor : spec.tensors) {
        const std::string named = label + ": tensor '" + tensor.name + "'";
        if (tensor.name.empty() || tensor.name.size() > kGgufMaxTensorName) {
            throw FormatError(named + ": a name must have 1 to 63 bytes");
        }
        if (!names.insert(tensor.name).second) {
            throw FormatError(named + ": the name appears twice");
        }
        if (tensor.nDims > kGgufMaxDims) {
            throw FormatError(named + ": more than 4 dimensions");
        }
        const auto& traits = traitsOf(tensor.type);
        std::uint64_t elements = 1;
        for (std::uint32_t d = 0; d < tensor.nDims; ++d) {
            if (tensor.ne[d] != 0 &&
                elements > std::numeric_limits<std::uint64_t>::max() / 2 / tensor.ne[d]) {
                throw FormatError(named + ": its element count overflows 64 bits");
            }
            elements *= tensor.ne[d];
        }
        if (tensor.ne[0] % traits.blockSize != 0) {
            throw FormatError(named + ": rows of " + std::to_string(tensor.ne[0]) + " are not whole " +
                              std::string(traits.name) + " blocks");
        }
        const std::uint64_t blocks = elements / traits.blockSize;
        if (blocks > std::numeric_limits<std::uint64_t>::max() / 2 / traits.bytesPerBlock) {
            throw FormatError(named + ": its size overflows 64 bits");
        }
        const std::uint64_t bytes = blocks * traits.bytesPerBlock;
        if (!tensor.source.generate && tensor.source.bytes.size() != bytes) {
            throw FormatError(named + ": the source holds " + groupDigits(tensor.source.bytes.size()) +
                              " bytes, the tensor needs " + groupDigits(bytes));
        }
        planned.push_back({&tensor, bytes, offset});
        offset = alignUp(offset + bytes, alignment);
    }
    return planned;
}

std::vector<std::byte> encodeHeader(const GgufWriteSpec& spec, const std::vector<PlannedTensor>& planned,
                                    std::uint32_t alignment) {
    std::vector<std::byte> header;
    put<std::uint32_t>(header, 0x46554747u);
    put<std::uint32_t>(header, 3);
    put<std::uint64_t>(header, spec.tensors.size());
    put<std::uint64_t>(header, spec.metadata.size());
    for (const auto& [key, value] : spec.metadata) {
        putString(header, key);
        put<std::uint32_t>(header, static_cast<std::uint32_t>(value.type()));
        value.appendEncodedV3(header);
    }
    for (const auto& plan : planned) {
        const TensorToWrite& tensor = *plan.tensor;
        putString(header, tensor.name);
        put<std::uint32_t>(header, tensor.nDims);
        for (std::uint32_t d = 0; d < tensor.nDims; ++d) {
            put<std::uint64_t>(header, tensor.ne[d]);
        }
        put<std::uint32_t>(header, static_cast<std::uint32_t>(tensor.type));
        put<std::uint64_t>(header, plan.offset);
    }
    // A file without tensors ends with its metadata, as llama.cpp's vocabulary files do.
    if (!planned.empty()) {
        header.resize(static_cast<std::size_t>(alignUp(header.size(), alignment)), std::byte{0});
    }
    return header;
}

// A tensor's source file is an input even when no other mapping of it is registered.
std::vector<std::string> sourcePaths(const GgufWriteSpec& spec) {
    std::vector<std::string> paths;
    for (const auto& tensor : spec.tensors) {
        if (tensor.source.mapping) {
            paths.push_back(tensor.source.mapping->path());
        }
    }
    return paths;
}

// Where a mapped source's bytes start in its file.
std::uint64_t sourceOffset(const TensorSource& source) {
    return static_cast<std::uint64_t>(source.bytes.data() - source.mapping->bytes().data());
}

// Re-opens the written file and checks it against the plan and the digests.
// Returns false when stopped.
bool verify(const RootedPath& path, const std::string& label, const GgufWriteSpec& spec,
            const std::vector<PlannedTensor>& planned, ProgressThrottle& throttle, std::uint64_t total,
            const StopToken* stop) {
    const auto written = GgufFile::open(path);
    if (written->metadata().size() != spec.metadata.size() || written->tensors().size() != planned.size()) {
        throw FormatError(label + ": verification failed: the re-opened file has other counts");
    }
    std::uint64_t done = 0;
    std::vector<std::byte> buffer;
    std::vector<std::byte> original;
    for (std::size_t i = 0; i < planned.size(); ++i) {
        const TensorInfo& info = written->tensors()[i];
        const TensorToWrite& tensor = *planned[i].tensor;
        if (info.name != tensor.name || info.type != tensor.type ||
            info.relativeOffset != planned[i].offset || info.bytes != planned[i].bytes) {
            throw FormatError(label + ": verification failed: tensor '" + tensor.name +
                              "' differs from the plan");
        }
        StripedDigest digest;
        bool same = true;
        for (std::uint64_t at = 0; at < info.bytes && same; at += kChunk) {
            if (stop != nullptr && stop->stopRequested()) {
                return false;
            }
            buffer.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, info.bytes - at)));
            written->mapping()->read(info.fileOffset + at, buffer);
            if (planned[i].copied) {
                const TensorSource& source = tensor.source;
                original.resize(buffer.size());
                source.mapping->read(sourceOffset(source) + at, original);
                same = original == buffer;
            } else {
                digest.update(buffer);
            }
            done += buffer.size();
            throttle.report(done, total, "verifying");
        }
        if (!same || (!planned[i].copied && digest.value() != planned[i].digest)) {
            throw FormatError(label + ": verification failed: the bytes of tensor '" + tensor.name +
                              "' read back differ from those written");
        }
    }
    return true;
}

} // namespace

void GgufWriteSpec::set(const std::string& key, MetaValue value) {
    for (auto& entry : metadata) {
        if (entry.first == key) {
            entry.second = std::move(value);
            return;
        }
    }
    metadata.emplace_back(key, std::move(value));
}

GgufLayout layoutGguf(const GgufWriteSpec& spec, const std::string& label) {
    const std::uint32_t alignment = alignmentOf(spec, label);
    const auto planned = planTensors(spec, alignment, label);
    GgufLayout layout;
    layout.header = encodeHeader(spec, planned, alignment);
    layout.fileSize = layout.header.size();
    if (!planned.empty()) {
        layout.fileSize += planned.back().offset + alignUp(planned.back().bytes, alignment);
    }
    return layout;
}

GgufWriteSpec specFromFile(const GgufFile& file) {
    GgufWriteSpec spec;
    for (const auto& entry : file.metadata()) {
        spec.metadata.emplace_back(entry.key, entry.value);
    }
    for (const auto& info : file.tensors()) {
        spec.tensors.push_back({info.name,
                                info.type,
                                info.nDims,
                                info.ne,
                                {file.tensorData(info), {}, file.mapping(), {}, {}, {}}});
    }
    return spec;
}

std::vector<FileSpan> readsOf(const TensorSource& source) {
    if (source.generate || !source.mapping || source.mapping->isBuffer() || source.bytes.empty()) {
        return {};
    }
    return {{source.mapping, sourceOffset(source), source.bytes.size()}};
}

TensorSource madeSource(std::function<std::vector<std::byte>()> make, std::uint64_t size, bool once,
                        std::string name) {
    struct State {
        std::mutex mutex;
        std::optional<std::vector<std::byte>> bytes;
        std::uint64_t next = 0; // where a read in order goes on
    };
    TensorSource source;
    source.generate = [make = std::move(make), size, once, name = std::move(name),
                       state = std::make_shared<State>()](std::uint64_t offset, std::span<std::byte> out) {
        std::lock_guard lock(state->mutex);
        if (!state->bytes) {
            state->bytes = make();
            if (state->bytes->size() != size) {
                throw FormatError(name + ": " + std::to_string(state->bytes->size()) + " bytes made, not " +
                                  std::to_string(size));
            }
        }
        if (offset > size || out.size() > size - offset) {
            throw FormatError(name + ": bytes asked for past the end of the tensor");
        }
        std::copy_n(state->bytes->begin() + static_cast<std::ptrdiff_t>(offset), out.size(), out.begin());
        state->next = offset == state->next ? offset + out.size() : 0;
        if (once && state->next == size) {
            state->bytes.reset();
            state->next = 0;
        }
    };
    return source;
}

std::string sha256Of(const TensorSource& source) {
    Sha256 sha;
    const auto data = source.bytes;
    if (!source.mapping) {
        sha.update(data);
        return sha.finishHex();
    }
    std::vector<std::byte> buffer;
    for (std::uint64_t at = 0; at < data.size(); at += kChunk) {
        buffer.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, data.size() - at)));
        source.mapping->read(sourceOffset(source) + at, buffer);
        sha.update(buffer);
    }
    return sha.finishHex();
}

void checkPromise(const TensorSource& source) {
    if (source.promised) {
        source.promised->check(sha256Of(source));
    }
}

JobResult writeGguf(const RootedPath& path, const GgufWriteSpec& spec, const ProgressFn& progress,
                    const StopToken* stop, const AcceptWritten& accept) {
    const std::string label = fileLabel(path.path);
    // A file cut short while it was read gave zeros past its new end (MappedFile): what was made
    // from it is not what it held, and is not kept.
    const std::uint64_t cutsBefore = MappedFile::cutEvents();
    try {
        const std::uint32_t alignment = alignmentOf(spec, label);
        auto planned = planTensors(spec, alignment, label);
        const std::vector<std::byte> header = encodeHeader(spec, planned, alignment);
        std::uint64_t total = 0;
        for (const auto& plan : planned) {
            total += plan.bytes;
        }
        ProgressThrottle throttle(progress);
        std::vector<std::byte> buffer;
        static constexpr std::array<std::byte, kGgufMaxAlignment> zeros{};
        std::uint64_t done = 0;
        SafeOutput out(path, sourcePaths(spec));
        JobResult result = JobResult::ok();
        result.warnings = out.warnings();
        out.write(header);
        // The tensors go through a descriptor of their own on the partial, after its header, since
        // the kernel copies into a descriptor (copy_file_range). One file: finish()'s fsync covers
        // what this one wrote, once its close is checked.
        UniqueFd data = out.partial().open(O_WRONLY);
        if (::lseek(data.get(), 0, SEEK_END) != static_cast<off_t>(header.size())) {
            throw IoError(label + ": cannot go to the end of the partial file: " + std::strerror(errno));
        }
        const auto put = [&](std::span<const std::byte> bytes) {
            writeAll(data.get(), bytes.data(), bytes.size(), label);
        };
        // The bytes made here (merged, quantized, hashed on the way) are sent on to the disk
        // 8 MiB at a time (sync_file_range starts the writing and does not wait for it), so that
        // the disk works while the rest is made: the kernel would otherwise keep them in memory
        // until finish()'s fsync, on a machine with memory to spare, and that fsync would wait for
        // all of them. What the kernel copies is left to that fsync, which runs while the file is
        // checked: sent on early, the copying would wait for the disk and the check after it (so
        // would the last few MiB made before a copy). Failures are fsync's to report.
        std::uint64_t sent = header.size();
        const auto fileEnd = [&] {
            const off_t end = ::lseek(data.get(), 0, SEEK_CUR);
            if (end < 0) {
                throw IoError(label + ": cannot tell where the partial file ends: " + std::strerror(errno));
            }
            return static_cast<std::uint64_t>(end);
        };
        const auto sendOn = [&] {
            const std::uint64_t end = fileEnd();
            if (end >= sent + kWriteBehind) {
                ::sync_file_range(data.get(), static_cast<off_t>(sent), static_cast<off_t>(end - sent),
                                  SYNC_FILE_RANGE_WRITE);
                sent = end;
            }
        };
        // What generated tensors read from files (a merge's inputs) is brought into the page cache
        // ahead of them, so that the disk reads the next tensors' inputs while this one's are
        // computed (docs/merging.md). Advice only: without a thread for it, nothing is read ahead.
        std::vector<std::vector<FileSpan>> steps;
        std::vector<std::size_t> stepOf(planned.size(), 0);
        std::vector<std::uint64_t> readBytes(planned.size(), 0);
        for (std::size_t i = 0; i < planned.size(); ++i) {
            const TensorSource& source = planned[i].tensor->source;
            if (source.generate && !source.reads.empty()) {
                stepOf[i] = steps.size();
                steps.push_back(source.reads);
                for (const FileSpan& span : source.reads) {
                    readBytes[i] += span.length;
                }
            }
        }
        const std::uint64_t window =
            steps.empty() ? 0 : spec.readAheadWindow.value_or(ReadAhead::defaultWindow());
        std::unique_ptr<ReadAhead> ahead;
        if (window != 0) {
            try {
                ahead = std::make_unique<ReadAhead>(std::move(steps), window);
            } catch (const std::system_error&) {
                // No thread for it: the inputs are read as the tensors need them.
            }
        }
        // Where the tensor's reads stand when `at` of its bytes are made (as far into them).
        const auto readAheadTo = [&](std::size_t index, std::uint64_t at) {
            if (ahead && readBytes[index] != 0) {
                const double share = static_cast<double>(at) / static_cast<double>(planned[index].bytes);
                ahead->reached(stepOf[index],
                               static_cast<std::uint64_t>(share * static_cast<double>(readBytes[index])));
            }
        };
        // A chunk made here is written, digested and sent on by a thread of its own while the next
        // is made: the kernel's copy into the page cache cost a merge into Q8_0 more CPU time than
        // the encoding did (docs/merging.md).
        // Declared after what its tasks use, so that it ends first.
        WriteBehind behind;
        for (std::size_t index = 0; index < planned.size(); ++index) {
            auto& plan = planned[index];
            const TensorSource& source = plan.tensor->source;
            // A file's bytes that need no hash on the way are copied by the kernel.
            if (source.mapping && !source.generate && !source.promised && !source.mapping->isBuffer()) {
                behind.drain();
                const std::uint64_t before = done;
                if (!appendFileRange(
                        *source.mapping, sourceOffset(source), plan.bytes, data.get(), label, buffer,
                        [&](std::uint64_t n) { throttle.report(before + n, total, "writing"); }, stop)) {
                    return JobResult::cancelled();
                }
                done += plan.bytes;
                plan.copied = true;
                put(std::span(zeros).first(
                    static_cast<std::size_t>(alignUp(plan.bytes, alignment) - plan.bytes)));
                sent = fileEnd();
                continue;
            }
            struct Digests {
                StripedDigest digest;
                std::optional<Sha256> promised;
            };
            auto digests = std::make_shared<Digests>();
            if (source.promised && !source.generate) {
                digests->promised.emplace();
            }
            for (std::uint64_t at = 0; at < plan.bytes; at += kChunk) {
                if (stop != nullptr && stop->stopRequested()) {
                    behind.drain(); // a write that failed first says so
                    return JobResult::cancelled();
                }
                const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, plan.bytes - at));
                std::vector<std::byte> made;
                std::span<const std::byte> chunk;
                if (source.generate) {
                    readAheadTo(index, at);
                    made = behind.buffer();
                    made.resize(n);
                    source.generate(at, made);
                    chunk = made;
                } else if (source.mapping) {
                    // Read, not touch the mapping: no page fault per 4 KiB, nothing left resident.
                    made = behind.buffer();
                    made.resize(n);
                    source.mapping->read(sourceOffset(source) + at, made);
                    chunk = made;
                } else {
                    chunk = source.bytes.subspan(static_cast<std::size_t>(at), n);
                }
                // `made` moves with its task; `chunk` still points into it.
                behind.post(
                    [&, chunk, digests] {
                        put(chunk);
                        sendOn();
                        digests->digest.update(chunk);
                        if (digests->promised) {
                            digests->promised->update(chunk);
                        }
                    },
                    std::move(made));
                done += n;
                throttle.report(done, total, "writing");
            }
            behind.post([&, digests] {
                if (digests->promised) {
                    source.promised->check(digests->promised->finishHex());
                }
                plan.digest = digests->digest.value();
                put(std::span(zeros).first(
                    static_cast<std::size_t>(alignUp(plan.bytes, alignment) - plan.bytes)));
            });
        }
        behind.drain();
        if (::close(data.release()) != 0) {
            throw IoError(label + ": close failed: " + std::strerror(errno));
        }
        // Checked before it replaces anything: a file already at the target stays as it was
        // unless the new one is whole and right. What is read back comes from the page cache, so
        // the partial goes to the disk (fsync) meanwhile; both end before anything else is done.
        std::future<void> synced = std::async(std::launch::async, [&out] { out.finish(); });
        const bool verified = verify(out.partial(), label, spec, planned, throttle, total, stop);
        synced.get();
        if (!verified) {
            return JobResult::cancelled();
        }
        if (accept) {
            if (const auto refusal = accept(out.partial())) {
                return JobResult::failed(*refusal);
            }
        }
        // Each file the tensors were read from, asked once, in the order they were read.
        std::set<const MappedFile*> asked{nullptr};
        std::string cut;
        const auto ask = [&](const MappedFile* file) {
            if (asked.insert(file).second && file->wasCutShort()) {
                cut += (cut.empty() ? "" : "; ") + file->cutShortText();
            }
        };
        for (const TensorToWrite& tensor : spec.tensors) {
            ask(tensor.source.mapping.get());
            for (const FileSpan& span : tensor.source.reads) {
                ask(span.file.get());
            }
        }
        if (cut.empty() && MappedFile::cutEvents() != cutsBefore) {
            cut = MappedFile::cutShortMessage();
        }
        if (!cut.empty()) {
            return JobResult::failed(cut + ": " + label + " was not written");
        }
        if (stop != nullptr && !stop->beginCommit()) {
            return JobResult::cancelled();
        }
        out.commit();
        throttle.report(total, total, "done", true);
        return result;
    } catch (const std::exception& error) {
        return JobResult::failed(error.what());
    }
}

} // namespace organ
