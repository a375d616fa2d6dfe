#!/usr/bin/env python3
"""A mutation run: hostile variants of real GGUF files through every organ command.

Takes the GGUF files of a folder (../shared/models by default), makes mutated copies of them
(bit flips, truncation, huge counts and lengths, invalid UTF-8 and control characters in
strings, FIFOs and links in place of files) and runs every subcommand on each: inspect (plain,
--tensors --metadata, --json), measure (with the cache, and --json/--csv/--markdown), validate,
graft and assemble (the mutant as base, as donor), plan check, vitals (alone, with the mutant as
parent, and on the plan), extract and assemble --organs (also after damaging the manifest), and
purify (both methods). It reports how many runs
crashed (a signal), hung (past the timeout), wrote raw control bytes to the terminal, or used
more than the memory limit, with the peak memory of any run, and keeps the files of each
failure in the work folder.

usage: mutation_run.py ORGAN [--models DIR] [--count N] [--seed S] [--work DIR] [--timeout SECONDS]
Not part of the test suite (it takes minutes); the suite has a regression test for each kind
of failure this run ever found.
"""
import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time


def mutations(data, rng):
    """Yields (kind, bytes) variants of one GGUF file."""
    header = min(len(data), 64 * 1024)
    for _ in range(3):
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(header)
            b[i] ^= 1 << rng.randrange(8)
        yield "bitflip", bytes(b)
    yield "truncate", data[: rng.randrange(1, len(data))]
    # A u64 or u32 somewhere in the header set to a huge value (counts, lengths, dims, offsets).
    for value in (0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 1 << 40):
        b = bytearray(data)
        i = rng.randrange(8, header - 8)
        b[i : i + 8] = struct.pack("<Q", value)
        yield "huge", bytes(b)
    b = bytearray(data)
    i = rng.randrange(8, header - 4)
    b[i : i + 4] = struct.pack("<I", 0xFFFFFFFF)
    yield "huge32", bytes(b)
    # Invalid UTF-8 and control characters into printable runs (names, keys, values, tokens).
    for kind, payload in (("utf8", b"\xff\xfe"), ("control", b"\x1b]0;x\x07"), ("newline", b"\n\r")):
        b = bytearray(data)
        runs = [i for i in range(16, header - 8) if 0x61 <= b[i] <= 0x7A and 0x61 <= b[i + 1] <= 0x7A]
        for i in rng.sample(runs, min(4, len(runs))):
            b[i : i + len(payload)] = payload
        yield kind, bytes(b)


def run(command, timeout):
    """Runs one command; returns (status, peak KiB, stdout+stderr). Status: exit code,
    'signal N' or 'hang'."""
    # Output to a file, never a pipe: a pipe that nobody reads would block a large output.
    with tempfile.TemporaryFile() as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=sink)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid != 0:
                sink.seek(0)
                out = sink.read()
                if os.WIFSIGNALED(status):
                    return f"signal {os.WTERMSIG(status)}", usage.ru_maxrss, out
                return os.WEXITSTATUS(status), usage.ru_maxrss, out
            if time.monotonic() > deadline:
                process.kill()
                _, _, usage = os.wait4(process.pid, 0)
                return "hang", usage.ru_maxrss, b""
            time.sleep(0.002)


def raw_controls(text):
    return any((c < 0x20 and c not in (0x0A,)) or c == 0x7F for c in text) or not valid_utf8(text)


def valid_utf8(text):
    try:
        text.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("organ")
    parser.add_argument("--models", default=os.path.join(here, "../../../shared/models"))
    parser.add_argument("--count", type=int, default=40, help="source files to mutate (default 40)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", default="/tmp/organ-mutation-run")
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--memory-limit-mib", type=int, default=512)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    env_cache = os.path.join(args.work, "cache")
    os.environ["ORGAN_CACHE_DIR"] = env_cache
    sources = sorted(
        os.path.join(root, f) for root, _, files in os.walk(args.models) for f in files if f.endswith(".gguf")
    )
    sources = [s for s in sources if os.path.getsize(s) < 8 << 20][: args.count]
    donor = next(s for s in sources if s.endswith("stories260K-f32.gguf"))
    files, runs, crashes, hangs, raw, heavy, peak = 0, 0, [], [], [], [], 0
    for k, source in enumerate(sources):
        data = open(source, "rb").read()
        for m, (kind, mutant) in enumerate(mutations(data, rng)):
            path = os.path.join(args.work, f"m{k:03d}-{m:02d}-{kind}.gguf")
            open(path, "wb").write(mutant)
            files += 1
            plan = path + ".plan.json"
            open(plan, "w").write(
                '{"format":"organ-graft-plan","version":1,"base":"%s","donors":{"d":"%s"},'
                '"operations":[{"op":"replace","donor":"d","system":"organ"},{"op":"duplicate_layer","layer":0}]}'
                % (os.path.basename(path), donor)
            )
            out = path + ".out"
            commands = [
                ["inspect", path],
                ["inspect", path, "--tensors", "--metadata"],
                ["inspect", path, "--json"],
                ["measure", path],
                ["measure", path, "--json", out + ".json", "--csv", out + ".csv", "--markdown", out + ".md"],
                ["validate", path],
                ["graft", "--base", path, "--donor", donor, "--system", "organ", "-o", out + ".a.gguf"],
                ["graft", "--base", donor, "--donor", path, "--layers", "0-1", "-o", out + ".b.gguf"],
                ["plan", "check", plan],
                ["assemble", "--plan", plan, "-o", out + ".c.gguf"],
                ["vitals", path, "--tokens", "4"],
                ["vitals", donor, "--parent", path, "--tokens", "4", "--json", out + ".vitals.json"],
                ["vitals", "--plan", plan, "--tokens", "4"],
                ["extract", path, "-o", out + ".organs"],
                ["assemble", "--organs", out + ".organs", "-o", out + ".d.gguf"],
                ["purify", path, "--method", "fft", "--system", "organ", "-o", out + ".e.gguf"],
                ["purify", path, "--method", "haar", "--layers", "0-1", "-o", out + ".f.gguf"],
                "damage-manifest",
                ["assemble", "--organs", out + ".organs", "-o", out + ".g.gguf"],
            ]
            for command in commands:
                if command == "damage-manifest":
                    manifest = os.path.join(out + ".organs", "manifest.json")
                    if os.path.exists(manifest):
                        damaged = bytearray(open(manifest, "rb").read())
                        for _ in range(rng.randint(1, 4)):
                            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
                        open(manifest, "wb").write(bytes(damaged))
                    continue
                status, kib, text = run([args.organ] + command, args.timeout)
                runs += 1
                peak = max(peak, kib)
                what = f"{os.path.basename(path)}: organ {' '.join(command[:2])} -> {status}"
                if status == "hang":
                    hangs.append(what)
                elif isinstance(status, str) or status not in (0, 1):
                    crashes.append(what)
                if raw_controls(text):
                    raw.append(what)
                if kib > args.memory_limit_mib * 1024:
                    heavy.append(f"{what} ({kib // 1024} MiB)")
    # Special files in place of inputs and outputs.
    fifo = os.path.join(args.work, "fifo.gguf")
    os.mkfifo(fifo)
    link = os.path.join(args.work, "link-to-donor.gguf")
    os.symlink(donor, link)
    special = [
        ["inspect", fifo],
        ["validate", "/dev/zero"],
        ["graft", "--base", donor, "--donor", donor, "--layers", "0", "-o", "/dev/null"],
        ["graft", "--base", donor, "--donor", donor, "--layers", "0", "-o", link],
        ["graft", "--base", donor, "--donor", donor, "--layers", "0", "-o", os.path.join(args.work, "x.gguf"),
         "--save-plan", donor],
        ["measure", donor, "--json", fifo],
        ["vitals", donor, "--text", fifo],
        ["vitals", donor, "--text", "/dev/zero"],
        ["vitals", donor, "--json", link],
        ["extract", fifo, "-o", os.path.join(args.work, "fifo-organs")],
        ["extract", donor, "-o", link],
        ["assemble", "--organs", "/dev/zero", "-o", os.path.join(args.work, "y.gguf")],
        ["assemble", "--organs", fifo, "-o", os.path.join(args.work, "y.gguf")],
        ["purify", donor, "--method", "fft", "-o", link],
        ["purify", fifo, "--method", "haar", "-o", os.path.join(args.work, "z.gguf")],
    ]
    for command in special:
        status, kib, text = run([args.organ] + command, args.timeout)
        runs += 1
        peak = max(peak, kib)
        what = f"organ {' '.join(command)} -> {status}"
        if status == "hang":
            hangs.append(what)
        elif status != 1:
            crashes.append(what)
    ok = not (crashes or hangs or raw or heavy)
    print(f"mutated files: {files} (from {len(sources)} sources), runs: {runs}")
    print(f"crashes: {len(crashes)}, hangs: {len(hangs)}, raw control bytes: {len(raw)}, "
          f"over {args.memory_limit_mib} MiB: {len(heavy)}; peak memory of a run: {peak / 1024:.1f} MiB")
    for line in crashes + hangs + raw + heavy:
        print("  " + line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
