#pragma once

#include <QFile>
#include <nlohmann/json.hpp>

namespace organ::testing {

// The token ids llama.cpp gives each kept text with each shared vocabulary
// (tests/data/tokenizer/llama-cpp-token-ids.json: "texts_hex", "vocabularies"); empty when the file
// cannot be read.
inline nlohmann::json llamaCppTokenIds() {
    QFile file(QStringLiteral(ORGAN_SOURCE_DIR "/tests/data/tokenizer/llama-cpp-token-ids.json"));
    if (!file.open(QIODevice::ReadOnly)) {
        return {};
    }
    return nlohmann::json::parse(file.readAll().toStdString());
}

} // namespace organ::testing
