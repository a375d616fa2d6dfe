// organ tokenize: a model's tokenizer on a text, and lookups in its vocabulary.
#include "cli.h"
#include "organs/organ_directory.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/token_lookup.h"

#include <charconv>
#include <iostream>

namespace organ::cli {
namespace {

constexpr std::uint64_t kMaxTextBytes = 16u << 20;

std::int32_t idFrom(const std::string& text) {
    std::int32_t id = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (error != std::errc() || end != text.data() + text.size()) {
        throw UsageError{"--id needs a token id, not '" + text + "'"};
    }
    return id;
}

} // namespace

int runTokenize(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--json"}, {"--text", "--file", "--id", "--piece", "--search", "--limit"});
    const auto text = parsed.option("--text");
    const auto file = parsed.option("--file");
    const auto ids = parsed.all("--id");
    const auto pieces = parsed.all("--piece");
    const auto search = parsed.option("--search");
    if (parsed.positional().size() != 1 || (text && file) ||
        (!text && !file && ids.empty() && pieces.empty() && !search)) {
        throw UsageError{"tokenize needs one model and --text T, --file F, --id N, --piece P or --search S"};
    }
    std::vector<std::int32_t> asked;
    for (const std::string& id : ids) {
        asked.push_back(idFrom(id));
    }
    const std::size_t limit = parsed.unsignedOption("--limit", 50);
    const std::string& path = parsed.positional().front();
    try {
        const Tokenizer tokenizer = Tokenizer::fromModel(*openModel(path));
        const bool json = parsed.flag("--json");
        nlohmann::json doc = {{"format", "organ-tokenize"},
                              {"version", 1},
                              {"model", jsonText(fileLabel(path))},
                              {"tokenizer", tokenizer.kind()},
                              {"vocabulary_size", tokenizer.size()},
                              {"bos", tokenizer.bos()},
                              {"eos", tokenizer.eos()},
                              {"adds_bos", tokenizer.addsBos()}};
        std::string out = escapeText(fileLabel(path)) + ": " + tokenizer.kind() + " tokenizer, " +
                          std::to_string(tokenizer.size()) + " tokens, BOS " +
                          std::to_string(tokenizer.bos()) +
                          (tokenizer.addsBos() ? " (put first)" : " (not put first)") + ", EOS " +
                          std::to_string(tokenizer.eos()) + "\n";
        auto rowsOf = [&](const std::vector<std::int32_t>& list) {
            std::vector<TokenRow> rows;
            for (const std::int32_t id : list) {
                rows.push_back(tokenRow(tokenizer, id));
            }
            return rows;
        };
        auto jsonOf = [](const std::vector<TokenRow>& rows) {
            nlohmann::json list = nlohmann::json::array();
            for (const TokenRow& r : rows) {
                list.push_back(tokenRowToJson(r));
            }
            return list;
        };
        if (text || file) {
            const std::string input = text ? *text : readSmallFile(RootedPath(*file), kMaxTextBytes);
            const std::vector<std::int32_t> tokens = tokenizer.encode(input);
            const std::vector<TokenRow> rows = rowsOf(tokens);
            doc["ids"] = tokens;
            doc["tokens"] = jsonOf(rows);
            out += "\n" + std::to_string(tokens.size()) + " tokens for " + std::to_string(input.size()) +
                   " bytes of text\n" + tokenTableText(rows, true);
        }
        if (!asked.empty()) {
            const std::vector<TokenRow> rows = rowsOf(asked);
            doc["lookup"] = jsonOf(rows);
            out += "\n" + tokenTableText(rows, false);
        }
        if (!pieces.empty()) {
            nlohmann::json found = nlohmann::json::object();
            out += "\n";
            for (const std::string& piece : pieces) {
                const std::int32_t id = tokenizer.lookup(piece);
                found[jsonText(piece)] = id >= 0 ? nlohmann::json(id) : nlohmann::json(nullptr);
                out += "  " + escapeText(piece) + " → " +
                       (id >= 0 ? std::to_string(id) : "not in the vocabulary") + "\n";
            }
            doc["pieces"] = found;
        }
        if (search) {
            const std::vector<TokenRow> rows = rowsOf(searchVocabulary(tokenizer, *search, limit));
            doc["search"] = jsonOf(rows);
            out += "\n" + std::to_string(rows.size()) +
                   (rows.size() == 1 ? " token holds \"" : " tokens hold \"") + escapeText(*search) + "\"" +
                   (rows.size() == limit ? " (the first " + std::to_string(limit) + ")" : std::string()) +
                   "\n" + tokenTableText(rows, false);
        }
        std::cout << (json ? dumpJson(doc, 2) + "\n" : out);
        return kExitOk;
    } catch (const std::exception& error) {
        std::cerr << "organ tokenize: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
}

} // namespace organ::cli
