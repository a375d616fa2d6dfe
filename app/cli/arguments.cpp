#include "cli.h"
#include "organs/organ_directory.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <unistd.h>

namespace organ::cli {

Arguments::Arguments(std::vector<std::string> args, std::vector<std::string> flags,
                     std::vector<std::string> options) {
    auto contains = [](const std::vector<std::string>& list, const std::string& name) {
        return std::find(list.begin(), list.end(), name) != list.end();
    };
    bool onlyPositional = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (onlyPositional || arg.size() < 2 || arg[0] != '-') {
            m_positional.push_back(arg);
            continue;
        }
        if (arg == "--") {
            onlyPositional = true;
            continue;
        }
        std::string name = arg;
        std::optional<std::string> value;
        if (const auto eq = arg.find('='); eq != std::string::npos) {
            name = arg.substr(0, eq);
            value = arg.substr(eq + 1);
        }
        if (contains(flags, name) && !value) {
            m_values.emplace_back(name, "");
        } else if (contains(options, name)) {
            if (!value) {
                if (i + 1 >= args.size()) {
                    throw UsageError{name + " needs a value"};
                }
                value = args[++i];
            }
            m_values.emplace_back(name, *value);
        } else {
            throw UsageError{"unknown option " + arg};
        }
    }
}

bool Arguments::flag(std::string_view name) const {
    return std::any_of(m_values.begin(), m_values.end(), [&](const auto& v) { return v.first == name; });
}

std::optional<std::string> Arguments::option(std::string_view name, std::string_view alias) const {
    std::optional<std::pair<std::string, std::string>> found;
    for (const auto& [key, value] : m_values) {
        if (key != name && (alias.empty() || key != alias)) {
            continue;
        }
        if (found) {
            const std::string given =
                found->first == key ? key + " is" : found->first + " and " + key + " are";
            throw UsageError{given + " given twice ('" + found->second + "', then '" + value +
                             "'): give one value"};
        }
        found.emplace(key, value);
    }
    return found ? std::optional<std::string>(found->second) : std::nullopt;
}

std::vector<std::string> Arguments::all(std::string_view name) const {
    std::vector<std::string> out;
    for (const auto& [key, value] : m_values) {
        if (key == name) {
            out.push_back(value);
        }
    }
    return out;
}

std::uint64_t Arguments::unsignedOption(std::string_view name, std::uint64_t fallback) const {
    const auto text = option(name);
    if (!text) {
        return fallback;
    }
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (error != std::errc() || end != text->data() + text->size()) {
        throw UsageError{std::string(name) + " needs a whole number, not '" + *text + "'"};
    }
    return value;
}

double Arguments::numberOption(std::string_view name, double fallback) const {
    const auto text = option(name);
    if (!text) {
        return fallback;
    }
    double value = 0;
    const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (error != std::errc() || end != text->data() + text->size() || !std::isfinite(value)) {
        throw UsageError{std::string(name) + " needs a number, not '" + *text + "'"};
    }
    return value;
}

std::shared_ptr<const GgufModel> openOrSay(const char* command, const std::string& path) {
    try {
        return openModel(path);
    } catch (const std::exception& error) {
        std::cerr << "organ " << command << ": " << escapeText(error.what()) << "\n";
        return nullptr;
    }
}

int forEachModel(const char* command, const std::vector<std::string>& paths,
                 const std::function<int(const std::string& path, const GgufModel& model,
                                         nlohmann::json& documents)>& each) {
    nlohmann::json documents = nlohmann::json::array();
    int status = kExitOk;
    for (const auto& path : paths) {
        try {
            const auto model = openModel(path);
            status = std::max(status, each(path, *model, documents));
        } catch (const std::exception& error) {
            std::cerr << "organ " << command << ": " << escapeText(error.what()) << "\n";
            status = kExitInvalid;
        }
    }
    if (!documents.empty()) {
        std::cout << dumpJson(documents.size() == 1 ? documents.front() : documents, 2) << "\n";
    }
    return status;
}

bool reportJobEnd(const char* command, const JobResult& done) {
    if (!done.isOk()) {
        std::cerr << "organ " << command << ": " << escapeText(done.message) << "\n";
        return false;
    }
    for (const std::string& warning : done.warnings) {
        std::cerr << "organ " << command << ": warning: " << escapeText(warning) << "\n";
    }
    return true;
}

ProgressPrinter::ProgressPrinter(std::string label)
    : m_label(std::move(label)), m_terminal(::isatty(2) != 0) {}

void ProgressPrinter::update(std::uint64_t done, std::uint64_t total, std::string_view stage) {
    const int percent = total == 0 ? 100 : static_cast<int>(100.0 * static_cast<double>(done) / total);
    if (m_terminal) {
        constexpr int kWidth = 30;
        const int filled = percent * kWidth / 100;
        std::fprintf(stderr, "\r%s %-10.*s [%.*s%*s] %3d%%", m_label.c_str(), static_cast<int>(stage.size()),
                     stage.data(), filled, "##############################", kWidth - filled, "", percent);
        std::fflush(stderr);
    } else if (percent / 10 != m_lastPercent / 10 || stage != m_lastStage) {
        std::fprintf(stderr, "%s: %.*s %d%%\n", m_label.c_str(), static_cast<int>(stage.size()), stage.data(),
                     percent);
    }
    m_lastPercent = percent;
    m_lastStage = std::string(stage);
}

void ProgressPrinter::finish() {
    if (m_terminal && m_lastPercent >= 0) {
        std::fprintf(stderr, "\n");
    }
}

} // namespace organ::cli
