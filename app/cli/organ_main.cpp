#include "cli.h"
#include "support/mapped_file.h"
#include "support/text_safety.h"

#include <cstring>
#include <functional>
#include <iostream>
#include <map>

namespace {

constexpr const char* kUsage = R"(organ — surgery on GGUF language models

usage:
  organ inspect FILE... [--tensors] [--metadata] [--json] [--max-array N]
      Summary of each model: architecture, parameters, size, quantization mix,
      bits per weight, layers and anatomical systems.
      --tensors     every tensor: name, system, role, layer, dtype, shape, offset, bytes
      --metadata    every metadata key (arrays shown by length and first N items)
      --json        everything as JSON (see docs/inspect-json.md)
      --max-array N items shown per metadata array (default 8; all with --json)
  organ measure FILE... [--sample N|all] [--threads N] [--json F] [--csv F]
                [--markdown F] [--no-cache]
      Z-measure of every tensor (θ from 0° noise to 90° structure): a table per
      model, the per-system summary and, with several files, the Z-ranking.
      --sample N    values per tensor (default 100000); all: every value
      --threads N   worker threads (default: one per core)
      --json F, --csv F, --markdown F   write the full results (docs/measure.md)
      --no-cache    measure afresh instead of using the stored results
  organ measure --shard PART.gguf --json F [--sample N|all] [--threads N]
      Measures one file of a split model while the other files are absent (a model
      larger than the disk: download a part, measure it, delete it) and writes its
      shard report (docs/scale.md).
  organ measure --merge REPORT... [--json F] [--csv F] [--markdown F]
      The whole model's measurement from the shard reports of all its parts, equal
      to measuring the complete set; names the parts that are missing.
  organ fleet PATH... [--json F] [--csv F] [--markdown F] [--threads N]
              [--sample N|all] [--no-cache]
      Finds the models in files and folders (GGUF files, split sets once, organ
      directories), measures them in parallel through the cache and ranks them: per
      model parameters, size, bits per weight, dtype mix, θ mean, signal and θ per
      system; the scale law (θ mean against log10 of the parameters, at least three
      models). A model that cannot be read is listed with its error (exit status 1).
  organ fleet --merge REPORT.json... [--json F] [--csv F] [--markdown F]
      One fleet from the fleet reports of several runs (docs/scale.md).
  organ serve [--listen HOST:PORT] [--root DIR] [--token TOKEN]
      The HTTP API (docs/http-api.md): every operation as JSON over HTTP, for files
      inside --root. Listens on 127.0.0.1:8765 by default; any other address needs
      --token. Runs organ-serve, installed beside organ.
  organ graft --base A.gguf --donor B.gguf [--layers 5-20] [--system S] [--role R]...
              [--tensor NAME]... [--map I:J]... -o OUT.gguf [--save-plan PLAN.json]
              [--quantize TYPE [--imatrix F]] [--keep-invalid] [--json F]
      Replaces the recipient's (A's) selected tensors by the donor's (B's): by layer
      range, system, role or name; --map I:J puts donor layer I into layer J. Checks
      first (including whether llama.cpp would load the result), converts dtypes
      where it can, writes, then validates the chimera; an invalid chimera is not kept.
      --keep-invalid  write and keep a chimera llama.cpp would refuse (exit status 1)
      --quantize TYPE  quantize the chimera as organ quantize does (a plan's quantize),
                       with --imatrix F's importance matrix when given
  organ plan check PLAN.json [--json]
      The compatibility report of a graft plan (docs/graft-plan.md); nothing is written.
  organ assemble --plan PLAN.json [-o OUT.gguf] [--keep-invalid] [--json F]
      Runs a graft plan. --json F: the outcome (findings, validation, purified
      tensors) as JSON, as the HTTP API answers it.
  organ extract MODEL -o DIR [--json F]
      Takes the model apart into an organ directory: one file per tensor in
      skeleton/ organs/ embed/ norm/ adapters/ other/, and manifest.json with every
      metadata key, the tensor order and each tensor's SHA-256 (docs/organ-directory.md).
  organ assemble --organs DIR -o OUT.gguf [--keep-invalid]
      Puts an organ directory back together after checking every file against the
      manifest: the original GGUF byte for byte. One llama.cpp would not load is
      not kept (--keep-invalid keeps it, exit status 1).
  organ purify MODEL --method fft|haar [--keep F] [--threshold T] [--attenuation A]
               [--layers A-B] [--system S] [--role R]... [--tensor NAME]... -o OUT.gguf
               [--json F]
      Purifies the selected tensors (all without a selection) as purify v1 says:
      fft keeps the strongest frequencies of each row (--keep, default 0.9 of the
      power), haar the wavelet details coherent across scales (--threshold 1,
      --attenuation 0); mean and spread restored. Reports θ before → after and the
      relative change per tensor.
  organ quantize MODEL --type TYPE -o OUT.gguf [--imatrix F] [--tensor-type REGEX=TYPE]...
                 [--output-tensor-type T] [--token-embedding-type T] [--pure]
                 [--leave-output-tensor] [--threads N] [--json F]
      Quantizes as llama-quantize does, to the same bytes (docs/quantization.md):
      TYPE is Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, Q8_0,
      Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, F16, BF16 or F32, with llama-quantize's
      mixing rules (which tensors get more bits). A quantized input is quantized
      again, with a note (llama-quantize's --allow-requantize).
      --imatrix F   an importance matrix (llama-imatrix's GGUF format or legacy .dat)
      --tensor-type REGEX=TYPE  the type of the tensors whose name matches (repeatable)
      --output-tensor-type T, --token-embedding-type T  those tensors' types
      --pure        every quantizable tensor in TYPE, no mix
      --leave-output-tensor  output.weight as it is
  organ quantize --report MODEL [--imatrix F] [--types Q2_K,…] [--threads N] [--json F]
      Per tensor llama-quantize would quantize and per type (default Q2_K, Q3_K,
      Q4_K, Q5_K, Q6_K, Q8_0, IQ4_NL, IQ4_XS, F16; those whose block fits the rows):
      relative RMS error, cosine and θ after quantization, with the importance
      matrix when given. Nothing written.
  organ quantize --sensitivity MODEL --text FILE [--chunk N] [--types Q2_K,…]
                 [--groups tensor|layer|role] [--imatrix F] [--threads N] [--json F]
      KL divergence of the model with only one group quantized to each type
      (default Q2_K) from the model itself, on FILE (forward passes on weights never
      written), and the seconds each group took.
  organ quantize MODEL --target-bpw B|FILETYPE -o OUT.gguf [--text FILE] [--eval-text FILE]
                 [--chunk N] [--imatrix F] [--types …] [--groups …] [--sensitivity-from F.json]
                 [--json F]
      The type per group with the least predicted KL (the sum of the groups' measured
      KL at each type; default Q2_K, Q3_K, Q4_K, IQ4_XS, Q5_K, Q6_K, Q8_0) in at most B
      bits per weight (every tensor's bytes × 8 / every parameter; a file type: the
      size organ quantize --type writes), by an exact knapsack; written, then
      measured (KL, top-1, perplexity) on FILE and the held-out --eval-text; printed
      as llama-quantize --tensor-type arguments. --sensitivity-from reuses the KL
      table of an earlier --sensitivity or --target-bpw --json run.
  organ merge CONFIG.yaml -o OUT.gguf [--vitals TEXT [--chunk N]] [--keep-invalid] [--json F]
  organ merge --method M [--base B.gguf] --model X.gguf[:WEIGHT]... [--density D] [--gamma G]
              [--t T] [--seed N] [--out-type TYPE] -o OUT.gguf [--vitals TEXT] [--json F]
      Merges models as mergekit's method of the same name does (docs/merging.md):
      linear, slerp, task_arithmetic, ties, dare_linear, dare_ties, breadcrumbs,
      breadcrumbs_ties, model_stock, passthrough — from mergekit's YAML (models are
      GGUF files or organ directories, relative to the configuration; a key it does
      not support is refused by name) or from options. Inputs of any type; the output
      in the base's types (out_type / --out-type TYPE: as organ quantize TYPE would).
      Checked, written, validated as a graft plan's merge; Ctrl-C cancels.
      --vitals TEXT  the merge's vital signs (perplexity, KL) and its models' on TEXT,
                     before anything is written; --chunk N scores TEXT in chunks
      --json F       the outcome (findings, validation, the merge, vital signs)
  organ diff A.gguf B.gguf [--layers A-B] [--system S] [--role R]... [--tensor NAME]...
             [--threads N] [--json F]
      What changed from A to B, tensor by tensor (each decoded from its own type):
      relative error ‖B−A‖/‖A‖, cosine, SQNR in dB, largest |B−A|, the share of values
      that differ, identical bytes noted; tensors in one model only or of another shape
      listed; a summary per system and per layer (docs/diff-json.md).
  organ spectral MODEL [--layers A-B] [--system S] [--role R]... [--tensor NAME]... [--threads N]
                 [--json F]
      Spectral health (spectral v1, WeightWatcher's α): each weight matrix's eigenvalues of
      WᵀW (BDCSVD, double precision), the power-law tail fitted by maximum likelihood at the
      xmin of least Kolmogorov–Smirnov distance; α < 2 over-trained, > 6 under-trained, > 8
      unreliable; experts each their own. Ctrl-C cancels.
  organ tokenize MODEL [--text T | --file F] [--id N]... [--piece P]... [--search S [--limit N]]
                 [--json]
      The model's own tokenizer (as llama.cpp's, without parsing special tokens): the
      tokens of a text with their ids, types, vocabulary strings and bytes (byte-fallback
      tokens shown as \xNN, BOS/EOS marked by type); the token of an id, the id of a
      vocabulary string, the tokens holding a string. --json: everything as JSON.
  organ meta MODEL [--set KEY=VALUE[:TYPE]]... [--set-file KEY=FILE]... [--delete KEY]...
             -o OUT.gguf [--keep-invalid] [--json F]
      The model with its metadata edited and its tensors copied as they are. TYPE: u8 …
      i64, u64, f32, f64, bool, string, or T[] for an array (VALUE a JSON array); without
      it a key keeps its type (a new key is a string). --set-file takes a string from a
      file (a chat template). An edit that would stop llama.cpp loading the model (the
      architecture removed, a block count the tensors disagree with, a tokenizer array
      of the wrong length) is refused before anything is written.
  organ validate FILE... [--json]
      What llama.cpp's loader checks before it runs anything: key types, per-layer
      array lengths, the tensors each architecture needs with their shapes, the data
      layout (docs/validation.md).
  organ vitals MODEL [--text FILE] [--chunk N] [--prompt TEXT] [--tokens N] [--parent FILE]...
               [--json F]
  organ vitals --plan PLAN.json [...]
      Runs the model (a forward pass on the CPU) and reports whether it lives:
      perplexity on a text, KL divergence and top-1 agreement against each parent,
      layer importance, and a greedy continuation of a prompt. With --plan, the
      chimera the plan would write, never written; its base and donors are parents.
      Runs llama, qwen2, phi3, gemma2, gemma3 and gpt2 models.
      --text FILE    the text to score (default: built-in short stories)
      --chunk N      score it as llama-perplexity -c N does (a text longer than the
                     model's context): chunks of N tokens, each run on its own with BOS
                     first, their second halves scored; layer importance of the first
                     chunk
      --prompt TEXT  the start of the continuation (default "Once upon a time")
      --tokens N     tokens to continue (default 32; 0: none)
      --json F       everything as JSON (docs/vitals-json.md)
  organ surgeon MODEL --prune N [--beam W] --text F [options] -o PLAN.json
  organ surgeon BASE --merge DONOR... [--method task_arithmetic|ties] --text F [options] -o PLAN.json
  organ surgeon RECIPIENT --organs DONOR... --text F [options] -o PLAN.json
      Searches plans against a text, scoring each by the forward pass on the chimera it
      would write (never written), and writes the best as a graft plan (docs/auto-surgeon.md):
      --prune N: the N blocks whose removal hurts least (angular distance and block
      influence one-shot, then a greedy search, a beam of W); --merge: per-layer and
      per-system weights (and ties' densities) by a seeded evolution strategy from the
      best uniform weight; --organs: per layer and system, the donor's tensors or the
      recipient's own, by coordinate descent. Ctrl-C ends the search: the best so far
      is written.
      --text F          the text (default: built-in short stories); --chunk N as vitals
      --holdout X       search on the first 1 − X of the text, report on the rest
      --reference R     minimise KL to R's next-token distributions instead of NLL
      --budget E|Ns     at most E candidates run, or N seconds (both may be given)
      --max-bytes B, --max-bpw X, --max-layers N   constraints on the chosen plan
      --points K, --offspring L, --generations G, --seed S   the evolution (3, 6, 20, 0)
      --sweeps S        coordinate descent sweeps at most (3)
      --json F          every candidate scored, with its plan (docs/auto-surgeon.md)
  organ imatrix MODEL --text FILE [--chunk N] -o OUT.gguf [--json F]
      The importance matrix llama-imatrix computes (-f FILE -c N): the text cut into
      chunks of N tokens (default 512), each run through the model, and every layer
      weight's input squared and summed. Written in the GGUF imatrix format that
      llama-quantize --imatrix reads (docs/imatrix.md). Ctrl-C cancels: nothing written.
      --json F       the run (chunks, tokens, weights, perplexity) as JSON
  organ specimen OUT.gguf [--seed N]
      Writes a small llama model with structured weights and a tokenizer.
  organ help
      This text.

exit status: 0 success, 1 invalid input or failed job, 2 bad usage
)";

} // namespace

int main(int argc, char** argv) {
    using namespace organ::cli;
    const std::map<std::string, std::function<int(const std::vector<std::string>&)>> commands{
        {"inspect", runInspect},   {"measure", runMeasure},   {"graft", runGraft},
        {"plan", runPlanCommand},  {"assemble", runAssemble}, {"validate", runValidate},
        {"specimen", runSpecimen}, {"vitals", runVitals},     {"extract", runExtract},
        {"purify", runPurify},     {"fleet", runFleet},       {"serve", runServe},
        {"imatrix", runImatrix},   {"quantize", runQuantize}, {"merge", runMerge},
        {"diff", runDiff},         {"tokenize", runTokenize}, {"meta", runMeta},
        {"spectral", runSpectral}, {"surgeon", runSurgeon},
    };
    if (argc < 2) {
        std::cerr << kUsage;
        return kExitUsage;
    }
    const std::string command = argv[1];
    if (command == "help" || command == "--help" || command == "-h") {
        std::cout << kUsage;
        return kExitOk;
    }
    const auto it = commands.find(command);
    if (it == commands.end()) {
        std::cerr << "organ: unknown command '" << organ::escapeText(command) << "'\n\n" << kUsage;
        return kExitUsage;
    }
    try {
        const int status = it->second(std::vector<std::string>(argv + 2, argv + argc));
        // A file cut short while it was read gave zeros past its new end: a command that ended
        // well read them (a writer refuses to keep what it made from them, and says so itself).
        if (status == kExitOk && organ::MappedFile::cutEvents() != 0) {
            std::cerr << "organ " << command << ": "
                      << organ::escapeText(organ::MappedFile::cutShortMessage())
                      << ": what was read from it past its new end was zeros, not the file's\n";
            return kExitInvalid;
        }
        return status;
    } catch (const UsageError& error) {
        std::cerr << "organ " << command << ": " << organ::escapeText(error.message) << "\n\n" << kUsage;
        return kExitUsage;
    } catch (const std::bad_alloc&) {
        std::cerr << "organ " << command << ": out of memory\n";
        return kExitInvalid;
    } catch (const std::exception& error) {
        // Every command reports its own errors; this is the net under them: no input ever
        // ends the program with an uncaught exception.
        std::cerr << "organ " << command << ": " << organ::escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
}
