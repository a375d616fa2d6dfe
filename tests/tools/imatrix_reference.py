#!/usr/bin/env python3
"""Records what llama-imatrix computes on the F32 family model, for tst_imatrix.

Usage: imatrix_reference.py --bin LLAMA_BUILD/bin [--shared ../shared] [--out FILE]
                            [--compare OURS.gguf THEIRS.gguf]

Makes family-base-f32.gguf in a temporary folder with `llama-quantize family-base-f16.gguf … F32`
(F16 → F32 is exact), runs `llama-imatrix -f texts/TEXT -c CHUNK` on it for each run below (one
thread, an F32 key/value cache and flash attention off, so that llama.cpp's arithmetic is F32
throughout, as for ../shared/reference/vitals), and writes per weight its count, its number of
columns, every STEP-th column's sum and the sum of all columns, with llama-imatrix's perplexity
estimate. Nothing but that JSON is kept: no model, no imatrix file.

--compare prints the largest relative difference between two imatrix files' sums (all values),
for the numbers in the closing note of issue 26.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

RUNS = [("general.txt", 128), ("sea.txt", 64)]
STEP = 8


def read_imatrix(path):
    """The metadata and F32 tensors of a GGUF file (all an imatrix file holds)."""
    data = open(path, "rb").read()
    if data[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    _, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    pos = 24
    scalars = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def string():
        nonlocal pos
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += 8 + n
        return data[pos - n:pos].decode()

    def value(kind):
        nonlocal pos
        if kind == 8:
            return string()
        if kind == 9:
            item, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            return [value(item) for _ in range(n)]
        fmt = "<" + scalars[kind]
        (v,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v

    meta = {}
    for _ in range(n_kv):
        key = string()
        (kind,) = struct.unpack_from("<I", data, pos)
        pos += 4
        meta[key] = value(kind)
    infos = []
    for _ in range(n_tensors):
        name = string()
        (dims,) = struct.unpack_from("<I", data, pos)
        pos += 4
        ne = struct.unpack_from(f"<{dims}Q", data, pos)
        pos += 8 * dims
        kind, offset = struct.unpack_from("<IQ", data, pos)
        pos += 12
        infos.append((name, ne, kind, offset))
    align = meta.get("general.alignment", 32)
    base = (pos + align - 1) // align * align
    tensors = {}
    for name, ne, kind, offset in infos:
        if kind != 0:
            raise SystemExit(f"{path}: {name} is not F32")
        n = 1
        for d in ne:
            n *= d
        tensors[name] = list(struct.unpack_from(f"<{n}f", data, base + offset))
    return meta, tensors


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return result.stdout + result.stderr


def record(bin_dir, shared):
    family = os.path.join(shared, "models", "family")
    out = {
        "what": "llama-imatrix on family-base-f16.gguf widened to F32 by llama-quantize; "
        "-t 1 -ctk f32 -ctv f32 -fa off; written by tests/tools/imatrix_reference.py",
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "family-base-f32.gguf")
        run([os.path.join(bin_dir, "llama-quantize"), os.path.join(family, "family-base-f16.gguf"), model, "F32"])
        for text, chunk in RUNS:
            matrix = os.path.join(tmp, "imatrix.gguf")
            log = run([os.path.join(bin_dir, "llama-imatrix"), "-m", model, "-f", os.path.join(family, "texts", text),
                       "-c", str(chunk), "-o", matrix, "-t", "1", "-ctk", "f32", "-ctv", "f32", "-fa", "off"])
            ppl = re.search(r"Final estimate: PPL = ([0-9.]+)", log)
            meta, tensors = read_imatrix(matrix)
            weights = {}
            for name in sorted(tensors):
                if not name.endswith(".in_sum2"):
                    continue
                weight = name[: -len(".in_sum2")]
                sums = tensors[name]
                weights[weight] = {
                    "count": tensors[weight + ".counts"][0],
                    "columns": len(sums),
                    "step": STEP,
                    "values": [float(f"{v:.9g}") for v in sums[::STEP]],
                    "total": float(f"{sum(sums):.12g}"),
                }
            out["runs"].append({
                "text": text,
                "chunk": chunk,
                "chunk_count": meta["imatrix.chunk_count"],
                "perplexity": float(ppl.group(1)) if ppl else None,
                "weights": weights,
            })
    return out


def compare(ours, theirs):
    _, a = read_imatrix(ours)
    _, b = read_imatrix(theirs)
    worst, where = 0.0, None
    for name in sorted(b):
        if name not in a:
            raise SystemExit(f"{ours}: no {name}")
        for i, (x, y) in enumerate(zip(a[name], b[name])):
            d = abs(x - y) / max(abs(y), 1e-30)
            if d > worst:
                worst, where = d, f"{name}[{i}]: {x} vs {y}"
    print(f"{len(b)} tensors; largest relative difference {worst:.3g} at {where}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", help="llama.cpp's build/bin (llama-quantize, llama-imatrix)")
    parser.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "data", "imatrix",
                                                      "family-base-f32.json"))
    parser.add_argument("--compare", nargs=2, metavar=("OURS", "THEIRS"))
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    if not args.bin:
        parser.error("--bin is needed to record")
    data = record(args.bin, args.shared)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
