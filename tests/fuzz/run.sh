#!/usr/bin/env bash
# The engine's libFuzzer targets (cmake --preset fuzz, clang; build/fuzz).
#
#   tests/fuzz/run.sh [SECONDS]            each target for SECONDS (default 60), seeded with the
#                                          checked-in corpus, the shared models (../shared/models),
#                                          the malformed cases of tst_malformed (from the dev
#                                          build, when it exists) and the example plans
#   tests/fuzz/run.sh --build              builds the targets, nothing else
#   tests/fuzz/run.sh --smoke SECONDS T    target T for SECONDS from the checked-in corpus only
#                                          (the suite's smoke run; the corpus is not written)
#   tests/fuzz/run.sh --minimize SECONDS   runs each target for SECONDS seeded with the project's
#                                          own inputs only (the checked-in corpus, the malformed
#                                          cases, the example plans and texts: nothing of
#                                          ../shared goes into the project), then merges what it
#                                          found into tests/fuzz/corpus/ (inputs up to 64 KiB),
#                                          keeping only inputs that add coverage
#
# Inputs that fail are written to build/fuzz/findings/<target>/, and the script fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

targets=(fuzz_gguf fuzz_plan fuzz_tokenizer)
corpus=tests/fuzz/corpus
mode=run
if [ "${1:-}" = --build ] || [ "${1:-}" = --smoke ] || [ "${1:-}" = --minimize ]; then
    mode="${1#--}"
    shift
fi
seconds="${1:-60}"

build() {
    cmake --preset fuzz >/dev/null
    cmake --build --preset fuzz
}

# Runs target $1 for $seconds on the corpus folders that follow; fails when it finds an input
# that fails (a crash, a sanitizer report, a leak, a timeout, memory beyond the limit).
fuzz() {
    local target="$1"
    shift
    local findings="build/fuzz/findings/$target"
    rm -rf "$findings"
    mkdir -p "$findings"
    echo "== $target, ${seconds} s"
    local status=0
    "build/fuzz/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=4194304 -print_final_stats=1 -artifact_prefix="$findings/" "$@" >"build/fuzz/$target.log" 2>&1 ||
        status=$?
    grep -E '^(#[0-9]+ +DONE|INFO: seed corpus|==[0-9]+==|SUMMARY|stat::number_of_executed_units|stat::peak_rss_mb|.*(ERROR|Test unit written))' \
        "build/fuzz/$target.log" || true
    if [ "$status" -ne 0 ] || [ -n "$(ls -A "$findings")" ]; then
        echo "run.sh: $target failed (exit status $status): build/fuzz/$target.log, build/fuzz/findings/$target/" >&2
        return 1
    fi
}

case "$mode" in
build)
    build
    exit 0
    ;;
smoke)
    target="${2:?usage: tests/fuzz/run.sh --smoke SECONDS TARGET}"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    cp -r "$corpus/${target#fuzz_}" "$work/seeds"
    fuzz "$target" "$work/seeds"
    exit 0
    ;;
esac

build
seeds=build/fuzz/seeds
rm -rf "$seeds"
mkdir -p "$seeds/gguf" "$seeds/plan" "$seeds/tokenizer"
if [ "$mode" = minimize ]; then
    :
elif [ -d ../shared/models ]; then
    find ../shared/models -name '*.gguf' -size -4M -exec cp -t "$seeds/gguf" {} +
else
    echo "run.sh: ../shared/models is missing: the reader is seeded without real files" >&2
fi
if [ -x build/dev/tests/tst_malformed ]; then
    ORGAN_FUZZ_SEEDS="$PWD/$seeds/gguf" build/dev/tests/tst_malformed corruptField >/dev/null
else
    echo "run.sh: build/dev/tests/tst_malformed is not built: no malformed seeds" >&2
fi
cp docs/examples/*.json "$seeds/plan/"
cp resources/texts/*.txt "$seeds/tokenizer/"
if [ "$mode" = run ] && [ -f ../shared/reference/vitals/story-a.txt ]; then
    cp ../shared/reference/vitals/story-a.txt "$seeds/tokenizer/"
fi
echo "seeds: $(find "$seeds/gguf" -type f | wc -l) GGUF files, $(find "$seeds/plan" -type f | wc -l) plans"
status=0
for target in "${targets[@]}"; do
    kind="${target#fuzz_}"
    found="build/fuzz/found/$kind"
    mkdir -p "$found" "$corpus/$kind"
    fuzz "$target" "$found" "$seeds/$kind" "$corpus/$kind" || status=1
    if [ "$mode" = minimize ]; then
        merged=$(mktemp -d)
        "build/fuzz/tests/fuzz/$target" -merge=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
            "$merged" "$corpus/$kind" "$found" >"build/fuzz/$target.merge.log" 2>&1
        rm -rf "${corpus:?}/$kind"
        mv "$merged" "$corpus/$kind"
        echo "corpus/$kind: $(find "$corpus/$kind" -type f | wc -l) inputs, $(du -sh "$corpus/$kind" | cut -f1)"
    fi
done
exit "$status"
