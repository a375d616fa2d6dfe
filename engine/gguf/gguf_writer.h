#pragma once

#include "gguf/gguf_file.h"
#include "support/job.h"
#include "support/sha256.h"

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace organ {

// Where the writer gets a tensor's bytes: a span (of a mapped file or a buffer) or a
// callback that fills `out` with the bytes starting at `offset`. Only one chunk of a
// few MiB is ever in flight, so writing a 100 GB model needs a few MiB of memory.
// `promised`: what the bytes must hash to (an organ directory's tensor file); whoever reads
// them to copy or compute checks it (the writers as they copy, checkPromise before computing).
struct TensorSource {
    std::span<const std::byte> bytes;
    std::function<void(std::uint64_t offset, std::span<std::byte> out)> generate;
    std::shared_ptr<const MappedFile> mapping; // set when `bytes` lies in this mapping
    std::shared_ptr<const void> owner;         // keeps a buffer behind `bytes` alive
    std::optional<PromisedSha256> promised;
    // What `generate` reads, in the order it reads it (through the files' mappings): the writer
    // brings these bytes into the page cache ahead of it (support/read_ahead.h).
    std::vector<FileSpan> reads;
};

// A source of `size` bytes that `make` makes whole when they are first asked for, then served chunk
// by chunk. `once`: they are dropped after the last chunk is served in order (a writer reads each
// tensor once, so that a model is made one tensor at a time); otherwise they stay while the source
// lives (a reader that asks again and again). `name` names the tensor in errors.
TensorSource madeSource(std::function<std::vector<std::byte>()> make, std::uint64_t size, bool once,
                        std::string name);

// The SHA-256 of a source's `bytes`, read through its mapping with pread a few MiB at a time
// (memory stays flat, nothing is left resident). Not for generated sources.
std::string sha256Of(const TensorSource& source);
// The source's bytes as a span of the file they lie in, for `reads`: none when they are not a
// file's (a buffer, a generated source).
std::vector<FileSpan> readsOf(const TensorSource& source);
// Reads the source and checks the SHA-256 it was promised; nothing when it has no promise.
// Throws FormatError naming the file.
void checkPromise(const TensorSource& source);

struct TensorToWrite {
    std::string name;
    TensorType type = TensorType::F32;
    std::uint32_t nDims = 1;
    std::array<std::uint64_t, kGgufMaxDims> ne{1, 1, 1, 1};
    TensorSource source;
};

struct GgufWriteSpec {
    std::vector<std::pair<std::string, MetaValue>> metadata; // in file order
    std::vector<TensorToWrite> tensors;                      // in file order
    // How far past the tensor being written its sources' `reads` are brought into the page cache
    // ahead (support/read_ahead.h); none: ReadAhead::defaultWindow(), 0: not at all.
    std::optional<std::uint64_t> readAheadWindow;

    void set(const std::string& key, MetaValue value); // replaces or appends
};

// Everything in a parsed file, with tensor bytes taken from its mapping: writing this
// back unchanged reproduces a v3 file byte for byte.
GgufWriteSpec specFromFile(const GgufFile& file);

// The header a spec would be written with (metadata, tensor infos, padding) and the
// size of the whole file. Tensor sources are not read.
struct GgufLayout {
    std::vector<std::byte> header;
    std::uint64_t fileSize = 0;
};
GgufLayout layoutGguf(const GgufWriteSpec& spec, const std::string& label);

// Writes GGUF v3 to `path` through SafeOutput (safe_files.h): a partial file of this process
// beside it, every write and the close checked, fsynced, re-opened and checked (layout and
// every tensor's bytes), and only then renamed into place. Refuses targets that are inputs
// or not regular files. On cancel or failure no file is left behind and a file already at
// `path` is untouched. Warnings (partials of killed runs removed) are in the result.
// Runs on the calling thread.
// A source with a promised SHA-256 is checked as it is copied: a mismatch fails the write,
// naming the source's file.
// `accept`, when given, is asked about the verified partial file (reached through its folder's
// descriptor) before it is renamed into place; a message refuses it (the write fails with that
// message). The rename is the job's commit (StopToken::beginCommit): a stop requested before it
// cancels the write, one requested after it is refused.
using AcceptWritten = std::function<std::optional<std::string>(const RootedPath& partial)>;
JobResult writeGguf(const RootedPath& path, const GgufWriteSpec& spec, const ProgressFn& progress = {},
                    const StopToken* stop = nullptr, const AcceptWritten& accept = {});

} // namespace organ
