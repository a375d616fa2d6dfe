#!/usr/bin/env bash
# Builds the libFuzzer targets (cmake --preset fuzz, clang) and runs each for SECONDS
# (default 60), seeded with the shared models (../shared/models), the malformed cases of
# tst_malformed (from the dev build, when it exists) and the example plans. Findings are
# written to build/fuzz/findings/<target>/; the script fails when a target finds one.
#   tests/fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
corpus=build/fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus/gguf" "$corpus/plan" "$corpus/tokenizer" build/fuzz/findings/fuzz_gguf \
    build/fuzz/findings/fuzz_plan build/fuzz/findings/fuzz_tokenizer
if [ -d ../shared/models ]; then
    find ../shared/models -name '*.gguf' -size -4M -exec cp -t "$corpus/gguf" {} +
else
    echo "run.sh: ../shared/models is missing: the reader is seeded without real files" >&2
fi
if [ -x build/dev/tests/tst_malformed ]; then
    ORGAN_FUZZ_SEEDS="$PWD/$corpus/gguf" build/dev/tests/tst_malformed corruptField >/dev/null
else
    echo "run.sh: build/dev/tests/tst_malformed is not built: no malformed seeds" >&2
fi
cp docs/examples/*.json "$corpus/plan/"
cp resources/texts/*.txt "$corpus/tokenizer/"
if [ -f ../shared/reference/vitals/story-a.txt ]; then
    cp ../shared/reference/vitals/story-a.txt "$corpus/tokenizer/"
fi
echo "seeds: $(ls "$corpus/gguf" | wc -l) GGUF files, $(ls "$corpus/plan" | wc -l) plans"
status=0
for target in fuzz_gguf fuzz_plan fuzz_tokenizer; do
    kind="${target#fuzz_}"
    echo "== $target, ${seconds} s"
    if ! "build/fuzz/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=4194304 -print_final_stats=1 -artifact_prefix="build/fuzz/findings/$target/" \
        "$corpus/$kind" 2>&1 | grep -E '^(#[0-9]+ +DONE|INFO: seed corpus|==[0-9]+==|SUMMARY|stat::number_of_executed_units|stat::peak_rss_mb|.*(ERROR|Test unit written))'; then
        :
    fi
    if [ -n "$(ls -A "build/fuzz/findings/$target")" ]; then
        echo "run.sh: $target found inputs that fail: build/fuzz/findings/$target/" >&2
        status=1
    fi
done
exit "$status"
