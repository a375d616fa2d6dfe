// libFuzzer target: arbitrary bytes as the text vital signs score, through the tokenizers of
// the shared vocabularies (../shared/models: SentencePiece with byte fallback, and GPT-2's
// byte-level BPE read with each pre-tokenizer). Nothing may escape or crash, and the tokens
// must give the text back: BPE loses nothing of valid UTF-8, SentencePiece nothing at all
// (after the space it puts in front; its space marker ▁ reads as a space).
#include "gguf/gguf_writer.h"
#include "vitals/tokenizer.h"
#include "vitals/unicode_classes.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Vocabulary {
    organ::Tokenizer tokenizer;
    bool bytePairs;
};

std::vector<Vocabulary>& vocabularies() {
    static std::vector<Vocabulary> all;
    return all;
}

bool validUtf8(const std::string& text) {
    return organ::utf8Of(organ::codePointsOf(text)) == text;
}

std::string markersAsSpaces(std::string text) {
    for (std::size_t at = text.find("\xE2\x96\x81"); at != std::string::npos;
         at = text.find("\xE2\x96\x81", at)) {
        text.replace(at, 3, " ");
    }
    return text;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    using namespace organ;
    const char* shared = std::getenv("ORGAN_SHARED_DIR");
    const std::filesystem::path models = std::filesystem::path(shared ? shared : ORGAN_SHARED_DIR) / "models";
    const std::filesystem::path folder = std::filesystem::temp_directory_path() / "organ-fuzz-tokenizer";
    std::filesystem::create_directories(folder);
    vocabularies().push_back(
        {Tokenizer::fromModel(*GgufModel::open((models / "stories260K-f32.gguf").string())), false});
    const std::string gpt2 = (models / "ggml-vocab-gpt-2.gguf").string();
    for (const char* pre : {"gpt-2", "llama-bpe", "qwen2", "starcoder", "falcon", "default"}) {
        GgufWriteSpec spec = specFromFile(*GgufFile::open(gpt2));
        spec.set("tokenizer.ggml.pre", MetaValue::fromString(pre));
        const std::string path = (folder / (std::string(pre) + ".gguf")).string();
        if (!writeGguf(path, spec).isOk()) {
            std::fprintf(stderr, "fuzz_tokenizer: cannot write %s\n", path.c_str());
            std::abort();
        }
        vocabularies().push_back({Tokenizer::fromModel(*GgufModel::open(path)), true});
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const bool valid = validUtf8(text);
    for (const Vocabulary& v : vocabularies()) {
        std::vector<std::int32_t> tokens = v.tokenizer.encode(text);
        if (!tokens.empty() && tokens.front() == v.tokenizer.bos()) {
            tokens.erase(tokens.begin());
        }
        const std::string back = v.tokenizer.decode(tokens);
        // SentencePiece turns spaces into its marker ▁ before it cuts the text, as llama.cpp
        // does: a stray lead byte may take part of a marker with it, which then comes back as
        // bytes, not as a space. Up to that, it gives back any bytes.
        if (v.bytePairs ? valid && back != text
                        : !text.empty() && markersAsSpaces(back) != markersAsSpaces(" " + text)) {
            std::fprintf(stderr, "fuzz_tokenizer: the %s tokens do not give the text back\n",
                         v.tokenizer.kind().c_str());
            std::abort();
        }
    }
    return 0;
}
