#!/usr/bin/env bash
# Measures a split model larger than the disk, one shard at a time, with GNU parallel: each
# part is downloaded, measured (organ measure --shard) and deleted before the next one starts
# on that slot, so at most JOBS parts are ever on disk. Then the shard reports are merged into
# the whole model's report. See docs/scale.md.
#
#   measure-shards.sh BASE_URL PREFIX COUNT [JOBS]
#   measure-shards.sh https://huggingface.co/org/repo/resolve/main Kimi-K2.5-Q4_K_M 13 2
#
# Add  -S host1,host2 --transferfile {} --return {.}.shard.json --cleanup  to the parallel line
# to spread the parts over several machines with ssh (organ must be installed on each).
set -euo pipefail

if [ "$#" -lt 3 ]; then
    echo "usage: $0 BASE_URL PREFIX COUNT [JOBS]" >&2
    exit 2
fi
base_url=$1
prefix=$2
count=$3
jobs=${4:-1}

parts=()
for ((part = 1; part <= count; part++)); do
    parts+=("$(printf '%s-%05d-of-%05d.gguf' "$prefix" "$part" "$count")")
done

# A part already measured (its report exists) is not fetched again: the run can be resumed.
# shellcheck disable=SC2016  # the single quotes are parallel's: it substitutes {} and {.}
parallel --will-cite --halt now,fail=1 -j "$jobs" \
    '[ -s {.}.shard.json ] || { curl -fL --retry 3 -o {} '"$base_url"'/{} && organ measure --shard {} --json {.}.shard.json; rm -f {}; }' \
    ::: "${parts[@]}"

reports=()
for part in "${parts[@]}"; do
    reports+=("${part%.gguf}.shard.json")
done
organ measure --merge "${reports[@]}" --json "$prefix.measure.json" --markdown "$prefix.measure.md"
