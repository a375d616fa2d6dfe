#pragma once

#include "support/job.h"
#include "support/text_safety.h"

#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace organ {
class GgufModel;
struct TensorSelector;
struct PurifyParams;
struct PurifiedTensor;
struct ZParams;
} // namespace organ

namespace organ::cli {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 1; // an input file is invalid, or the job failed
inline constexpr int kExitUsage = 2;   // bad command line

// Thrown for a bad command line; main prints it with the command's usage and exits 2.
struct UsageError {
    std::string message;
};

// A small argument list: flags and "--name value" / "--name=value" options, the rest positional.
class Arguments {
public:
    Arguments(std::vector<std::string> args, std::vector<std::string> flags,
              std::vector<std::string> options);
    bool flag(std::string_view name) const;
    // The value of an option given at most once, under `name` or its `alias` (-o, --output); a
    // second value is a UsageError, never silently the one that wins.
    std::optional<std::string> option(std::string_view name, std::string_view alias = {}) const;
    std::vector<std::string> all(std::string_view name) const; // every value of a repeated option
    std::uint64_t unsignedOption(std::string_view name, std::uint64_t fallback) const;
    double numberOption(std::string_view name, double fallback) const; // finite

    const std::vector<std::string>& positional() const { return m_positional; }

private:
    std::vector<std::pair<std::string, std::string>> m_values;
    std::vector<std::string> m_positional;
};

int runInspect(const std::vector<std::string>& args);
int runMeasure(const std::vector<std::string>& args);
int runSpecimen(const std::vector<std::string>& args);
int runGraft(const std::vector<std::string>& args);
int runPlanCommand(const std::vector<std::string>& args);
int runAssemble(const std::vector<std::string>& args);
int runAssembleOrgans(const std::string& directory, const std::string& output, bool keepInvalid);
int runExtract(const std::vector<std::string>& args);
int runPurify(const std::vector<std::string>& args);
int runMerge(const std::vector<std::string>& args);
int runQuantize(const std::vector<std::string>& args);
// organ quantize --report, --sensitivity and --target-bpw (quant_lab_command.cpp).
int runQuantizeReport(const std::vector<std::string>& args);
int runQuantizeSensitivity(const std::vector<std::string>& args);
int runQuantizeBudget(const std::vector<std::string>& args);
int runDiff(const std::vector<std::string>& args);
int runTokenize(const std::vector<std::string>& args);
int runMeta(const std::vector<std::string>& args);
int runSpectral(const std::vector<std::string>& args);
int runValidate(const std::vector<std::string>& args);
int runVitals(const std::vector<std::string>& args);
int runSurgeon(const std::vector<std::string>& args);
int runImatrix(const std::vector<std::string>& args);
int runFleet(const std::vector<std::string>& args);
int runServe(const std::vector<std::string>& args);

// --sample N|all (the Z-measure's default without it). Throws UsageError.
ZParams sampleFrom(const Arguments& args);
// --chunk N of vital signs (0 without it: the text whole). Throws UsageError.
std::size_t chunkFrom(const Arguments& args);
// The --json, --csv and --markdown targets, checked before any work: never an input, never a
// device, never two reports into one file. Throws UsageError (two into one); false when a target
// is refused, said on stderr after "organ COMMAND: ".
bool reportTargetsOk(const char* command, const Arguments& parsed, const std::vector<std::string>& inputs);
// Through the engine's safe writer: whole or absent, never over an input. False (said on stderr,
// after "organ COMMAND: ") when it could not be written.
bool writeReport(const char* command, const std::string& path, const std::string& text,
                 const std::vector<std::string>& inputs);

// The selection of `organ graft` and `organ purify`: --layers A-B, --system S, --role R...,
// --tensor NAME...
TensorSelector selectorFrom(const Arguments& args);
// The purification `methodOption` (--method, --purify) asks for with --keep, --threshold and
// --attenuation; nothing when it is absent. Throws UsageError for a bad method or number.
std::optional<PurifyParams> purifyParamsFrom(const Arguments& args, const char* methodOption);
// θ before → after, the change and the share kept, a tensor a line.
void printPurified(const std::vector<PurifiedTensor>& tensors, const PurifyParams& params);

// Each of `paths` read by `read` (readShardReport, readFleetReport), in order; the first that
// cannot be read is said on stderr after "organ COMMAND: ", and nothing is returned.
template <typename Read>
auto readEach(const char* command, const std::vector<std::string>& paths, Read read)
    -> std::optional<std::vector<decltype(read(paths.front()))>> {
    std::vector<decltype(read(paths.front()))> out;
    for (const std::string& path : paths) {
        try {
            out.push_back(read(path));
        } catch (const std::exception& error) {
            std::cerr << "organ " << command << ": " << escapeText(error.what()) << "\n";
            return std::nullopt;
        }
    }
    return out;
}

// The model at `path` (a GGUF file or an organ directory), or null after saying why on stderr,
// after "organ COMMAND: ".
std::shared_ptr<const GgufModel> openOrSay(const char* command, const std::string& path);

// The models of a command that reads several (inspect, validate), each opened in turn and given to
// `each`, which adds its JSON document to `documents` or prints its text, and returns its exit
// status; a model that cannot be opened or examined is said on stderr after "organ COMMAND: " and
// is kExitInvalid. The documents are printed last, one alone, several as an array. The worst status.
int forEachModel(const char* command, const std::vector<std::string>& paths,
                 const std::function<int(const std::string& path, const GgufModel& model,
                                         nlohmann::json& documents)>& each);

// A job's end said on stderr after "organ COMMAND: ": its error, or its warnings. True when it
// succeeded.
bool reportJobEnd(const char* command, const JobResult& done);

// Progress on stderr: a redrawn bar on a terminal, plain lines otherwise.
class ProgressPrinter {
public:
    explicit ProgressPrinter(std::string label);
    void update(std::uint64_t done, std::uint64_t total, std::string_view stage);
    void finish();

private:
    std::string m_label;
    bool m_terminal;
    int m_lastPercent = -1;
    std::string m_lastStage; // without a terminal, a line for each decile and each new stage
};

// A job's progress drawn by `printer`.
inline ProgressFn printingTo(ProgressPrinter& printer) {
    return [&printer](const Progress& p) { printer.update(p.done, p.total, p.stage); };
}

} // namespace organ::cli
