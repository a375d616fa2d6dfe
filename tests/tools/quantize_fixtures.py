#!/usr/bin/env python3
"""Makes tests/data/quantize/: what llama-quantize writes for the models of ../shared/models, as
per-tensor SHA-256s (the files themselves are never kept).

For every model and type below it runs `llama-quantize --pure [--imatrix F] MODEL OUT TYPE`
(with an importance matrix for the family base, the one model ../shared/reference has one for,
and with a synthetic one for wide-f32's heavy-tailed F32 weights, names ending in .imatrix and
.synthetic; the older types Q4_0 … Q5_1 only so, their path without one being tested elsewhere), records
each tensor of OUT that the type changed: name, type, block count and the SHA-256 of its bytes.
tst_quantize_kquants quantizes the same input tensors with the engine's writers and compares.
With --mix it also quantizes the family base to the file types tst_quantize_model checks (with
the mixing rules, no --pure) and records every tensor of those files. With --rules it writes two
models of zeros whose shapes reach the other mixing rules (32 layers with 4 heads per key-value
head; 8 experts) and records the type llama-quantize gives each tensor, for every file type, with
and without a synthetic importance matrix (RULE_SHAPES, *.types).

usage: quantize_fixtures.py LLAMA_BIN_DIR [--shared DIR] [--scratch DIR] [--out DIR] [--mix] [--rules]
LLAMA_BIN_DIR holds a llama.cpp build's llama-quantize (../shared/tools/referee.sh makes one).
The scratch folder keeps llama-quantize's outputs for inspection; nothing there is committed.
"""
import argparse
import hashlib
import os
import struct
import subprocess
import sys

# ggml type number -> (name, elements per block, bytes per block), for the types written here.
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
         6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84),
         11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
         14: ("Q6_K", 256, 210), 20: ("IQ4_NL", 32, 18), 23: ("IQ4_XS", 256, 136),
         30: ("BF16", 1, 2)}

PURE_TYPES = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"]
WEIGHTED_ONLY = ["Q4_0", "Q4_1", "Q5_0", "Q5_1"]
MIX_TYPES = ["Q4_K_M", "Q3_K_M", "Q5_K_S", "Q6_K", "IQ4_XS"]
MODELS = ["quant/wide-f32.gguf", "family/family-base-f16.gguf", "family/family-farm-f16.gguf",
          "family/family-sea-f16.gguf"]
IMATRIX = {"family-base-f16": "reference/family/family-base-imatrix.gguf"}
# Models without an importance matrix of their own get a synthetic one (write_synthetic_imatrix).
SYNTHETIC = {"wide-f32"}


def read_string(f):
    (n,) = struct.unpack("<Q", f.read(8))
    return f.read(n).decode("utf-8")


def skip_value(f, kind):
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    if kind == 8:
        read_string(f)
    elif kind == 9:
        (inner,) = struct.unpack("<I", f.read(4))
        (count,) = struct.unpack("<Q", f.read(8))
        for _ in range(count):
            skip_value(f, inner)
    else:
        f.read(sizes[kind])


def read_header(f, path):
    """[(name, ne, type number, offset)] and the data start of an open GGUF v3 file."""
    magic, version, n_tensors, n_kv = struct.unpack("<4sIQQ", f.read(24))
    assert magic == b"GGUF" and version == 3, path
    alignment = 32
    for _ in range(n_kv):
        key = read_string(f)
        (kind,) = struct.unpack("<I", f.read(4))
        if key == "general.alignment":
            (alignment,) = struct.unpack("<I", f.read(4))
        else:
            skip_value(f, kind)
    infos = []
    for _ in range(n_tensors):
        name = read_string(f)
        (dims,) = struct.unpack("<I", f.read(4))
        ne = struct.unpack("<%dQ" % dims, f.read(8 * dims))
        kind, offset = struct.unpack("<IQ", f.read(12))
        infos.append((name, ne, kind, offset))
    return infos, (f.tell() + alignment - 1) // alignment * alignment


def tensors_of(path):
    """[(name, type name, blocks, bytes)] of a GGUF v3 file, in file order."""
    with open(path, "rb") as f:
        infos, start = read_header(f, path)
        out = []
        for name, ne, kind, offset in infos:
            elements = 1
            for n in ne:
                elements *= n
            type_name, block, size = TYPES[kind]
            f.seek(start + offset)
            out.append((name, type_name, elements // block, f.read(elements // block * size)))
        return out


def synthetic_weight(column):
    """The synthetic importance of a column, exact in float32 (tst_quantize_kquants computes it too)."""
    return 0.25 + ((37 * column) % 101) / 16.0


def write_synthetic_imatrix(model, path):
    """An importance matrix in llama-imatrix's GGUF format for every matrix of `model` but the token
    embedding: in_sum2 = synthetic_weight(column) for each expert, counts = 1."""
    with open(model, "rb") as f:
        infos, _ = read_header(f, model)
    entries = [(name, ne[0], ne[2] if len(ne) > 2 else 1) for name, ne, _, _ in infos
               if len(ne) >= 2 and ne[1] > 1 and name != "token_embd.weight"]

    def string(text):
        data = text.encode("utf-8")
        return struct.pack("<Q", len(data)) + data

    kv = string("general.type") + struct.pack("<I", 8) + string("imatrix")
    kv += string("imatrix.datasets") + struct.pack("<IIQ", 9, 8, 1) + string("synthetic")
    kv += string("imatrix.chunk_count") + struct.pack("<II", 4, 1)
    kv += string("imatrix.chunk_size") + struct.pack("<II", 4, 512)
    tensors = b""
    data = b""
    for name, columns, experts in entries:
        sums = [synthetic_weight(j) for _ in range(experts) for j in range(columns)]
        for suffix, values, ne in ((".in_sum2", sums, (columns, experts)), (".counts", [1.0] * experts, (1, experts))):
            tensors += string(name + suffix) + struct.pack("<IQQIQ", 2, ne[0], ne[1], 0, len(data))
            data += struct.pack("<%df" % len(values), *values)
            data += b"\0" * ((32 - len(data) % 32) % 32)
    header = struct.pack("<4sIQQ", b"GGUF", 3, 2 * len(entries), 4) + kv + tensors
    header += b"\0" * ((32 - len(header) % 32) % 32)
    with open(path, "wb") as f:
        f.write(header + data)


def record(source, written, out_path, header, only_changed):
    before = {name: kind for name, kind, _, _ in tensors_of(source)}
    lines = []
    for name, kind, blocks, data in tensors_of(written):
        if only_changed and before[name] == kind:
            continue
        lines.append("%s\t%s\t%d\t%s" % (name, kind, blocks, hashlib.sha256(data).hexdigest()))
    with open(out_path, "w") as f:
        f.write("# " + header + "\n")
        f.write("\n".join(lines) + "\n")


# Models whose shapes reach the mixing rules the family does not (tst_quantize_model builds the
# same names and shapes): a dense llama of 32 layers with 4 heads per key-value head, and one of
# 4 layers with 8 experts. Their weights are zeros; only the types llama-quantize picks are kept.
RULE_SHAPES = {
    "dense32": {"layers": 32, "heads": 8, "kv_heads": 2, "experts": 0},
    "moe8": {"layers": 4, "heads": 8, "kv_heads": 8, "experts": 8},
}
RULE_TYPES = ["Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K",
              "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "IQ4_XS"]


def rule_shape_tensors(shape):
    """[(name, ne)] of a rule shape: embedding 256, FFN 512, vocabulary 512, head size 32."""
    e, f, v = 256, 512, 512
    kv = 32 * shape["kv_heads"]
    out = [("token_embd.weight", (e, v)), ("output_norm.weight", (e,)), ("output.weight", (e, v))]
    for i in range(shape["layers"]):
        p = "blk.%d." % i
        out += [(p + "attn_norm.weight", (e,)), (p + "attn_q.weight", (e, e)), (p + "attn_k.weight", (e, kv)),
                (p + "attn_v.weight", (e, kv)), (p + "attn_output.weight", (e, e)), (p + "ffn_norm.weight", (e,))]
        if shape["experts"]:
            n = shape["experts"]
            out += [(p + "ffn_gate_inp.weight", (e, n)), (p + "ffn_gate_exps.weight", (e, f, n)),
                    (p + "ffn_up_exps.weight", (e, f, n)), (p + "ffn_down_exps.weight", (f, e, n))]
        else:
            out += [(p + "ffn_gate.weight", (e, f)), (p + "ffn_up.weight", (e, f)), (p + "ffn_down.weight", (f, e))]
    return out


def write_rule_shape(shape, path):
    """A llama GGUF of the shape, every matrix F16 zeros, norms F32 ones."""
    def string(text):
        data = text.encode("utf-8")
        return struct.pack("<Q", len(data)) + data

    def u32(key, value):
        return string(key) + struct.pack("<II", 4, value)

    kv = [string("general.architecture") + struct.pack("<I", 8) + string("llama"),
          u32("llama.block_count", shape["layers"]), u32("llama.context_length", 256),
          u32("llama.embedding_length", 256), u32("llama.feed_forward_length", 512),
          u32("llama.attention.head_count", shape["heads"]),
          u32("llama.attention.head_count_kv", shape["kv_heads"]), u32("llama.rope.dimension_count", 32),
          u32("llama.vocab_size", 512),
          string("llama.attention.layer_norm_rms_epsilon") + struct.pack("<If", 6, 1e-5)]
    if shape["experts"]:
        kv += [u32("llama.expert_count", shape["experts"]), u32("llama.expert_used_count", 2)]
    tensors = b""
    data = b""
    for name, ne in rule_shape_tensors(shape):
        count = 1
        for n in ne:
            count *= n
        kind, payload = (0, struct.pack("<f", 1.0) * count) if len(ne) == 1 else (1, b"\0" * (2 * count))
        tensors += string(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        tensors += struct.pack("<IQ", kind, len(data))
        data += payload + b"\0" * ((32 - len(payload) % 32) % 32)
    header = struct.pack("<4sIQQ", b"GGUF", 3, len(rule_shape_tensors(shape)), len(kv)) + b"".join(kv) + tensors
    header += b"\0" * ((32 - len(header) % 32) % 32)
    with open(path, "wb") as f:
        f.write(header + data)


def record_types(written, out_path, header):
    with open(out_path, "w") as f:
        f.write("# " + header + "\n")
        for name, kind, _, _ in tensors_of(written):
            f.write("%s\t%s\n" % (name, kind))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("--shared", default=os.path.join(here, "..", "..", "..", "shared"))
    parser.add_argument("--scratch", default="/tmp/quantize-fixtures")
    parser.add_argument("--out", default=os.path.join(here, "..", "data", "quantize"))
    parser.add_argument("--mix", action="store_true")
    parser.add_argument("--rules", action="store_true")
    args = parser.parse_args()
    quantize = os.path.join(args.bin, "llama-quantize")
    os.makedirs(args.scratch, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)

    def run(model, out, kind, imatrix, pure):
        command = [quantize] + (["--pure"] if pure else [])
        if imatrix:
            command += ["--imatrix", imatrix]
        command += [model, out, kind, "1"]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return " ".join(["llama-quantize"] + command[1:]).replace(args.shared + "/", "../shared/").replace(out, "OUT.gguf").replace(
            args.scratch + "/", "SCRATCH/")

    for relative in MODELS:
        model = os.path.join(args.shared, "models", relative)
        stem = os.path.basename(relative)[:-len(".gguf")]
        variants = [(kind, None, "") for kind in PURE_TYPES]
        if stem in IMATRIX:
            weighted = os.path.join(args.shared, IMATRIX[stem])
            variants += [(kind, weighted, ".imatrix") for kind in PURE_TYPES + WEIGHTED_ONLY]
        if stem in SYNTHETIC:
            synthetic = os.path.join(args.scratch, stem + ".synthetic-imatrix.gguf")
            write_synthetic_imatrix(model, synthetic)
            variants += [(kind, synthetic, ".synthetic") for kind in PURE_TYPES + WEIGHTED_ONLY]
        for kind, imatrix, suffix in variants:
            name = "%s.%s%s" % (stem, kind.lower(), suffix)
            out = os.path.join(args.scratch, name + ".gguf")
            header = run(model, out, kind, imatrix, True)
            record(model, out, os.path.join(args.out, name + ".tsv"), header, True)
            print(name, file=sys.stderr)
    if args.mix:
        model = os.path.join(args.shared, "models", MODELS[1])
        imatrix = os.path.join(args.shared, IMATRIX["family-base-f16"])
        for kind in MIX_TYPES:
            for im in (None, imatrix):
                name = "family-base-f16.mix-%s%s" % (kind.lower(), ".imatrix" if im else "")
                out = os.path.join(args.scratch, name + ".gguf")
                header = run(model, out, kind, im, False)
                record(model, out, os.path.join(args.out, name + ".tsv"), header, False)
                print(name, file=sys.stderr)


    if args.rules:
        for shape_name, shape in RULE_SHAPES.items():
            model = os.path.join(args.scratch, "rules-%s.gguf" % shape_name)
            write_rule_shape(shape, model)
            synthetic = os.path.join(args.scratch, "rules-%s.synthetic-imatrix.gguf" % shape_name)
            write_synthetic_imatrix(model, synthetic)
            for kind in RULE_TYPES:
                for im in (None, synthetic):
                    name = "rules-%s.%s%s" % (shape_name, kind.lower(), ".synthetic" if im else "")
                    out = os.path.join(args.scratch, name + ".gguf")
                    header = run(model, out, kind, im, False)
                    record_types(out, os.path.join(args.out, name + ".types"), header)
                    os.remove(out)
                    print(name, file=sys.stderr)


if __name__ == "__main__":
    main()
