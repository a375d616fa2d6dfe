#!/usr/bin/env python3
"""Records llama.cpp's per-token NLL and perplexity for the K-quant and IQ4 models, for tst_vitals.

Usage: quant_vitals_reference.py --logits PATH/llama_logits [--shared ../shared] [--out FILE]
       quant_vitals_reference.py --logits PATH/llama_logits --model M.gguf --text T.txt

Runs llama_logits (../shared/tools: one batch, one thread, an F32 key/value cache, flash
attention off) on each model and text below, the text cut to the model's 256-token context, and
keeps the token ids, the NLL of each next token, the log-sum-exp of each position and the
perplexity — not the logits. With --model and --text it prints one model's perplexity instead
(for models made in /tmp with llama-quantize, which are never committed).
"""
import argparse
import json
import os
import subprocess

# The wide models (random weights, 2 blocks) on 256 tokens of the family's general text, wide-q4_k_m
# also on the vitals text; the trained family model on its three texts.
CASES = [(f"quant/wide-{t}.gguf", "models/family/texts/general.txt")
         for t in ("q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k", "iq4_nl", "iq4_xs")]
CASES += [("quant/wide-q4_k_m.gguf", "reference/vitals/story-a.txt")]
CASES += [("family/family-base-q4_k_m.gguf", f"models/family/texts/{t}.txt") for t in ("general", "farm", "sea")]
MAX_TOKENS = 256


def logits(tool, model, text):
    out = subprocess.run([tool, model, text, str(MAX_TOKENS)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logits", required=True, help="llama_logits built against the referee")
    parser.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "data", "vitals",
                                                      "quant-perplexity.json"))
    parser.add_argument("--model")
    parser.add_argument("--text")
    args = parser.parse_args()
    if args.model:
        d = logits(args.logits, args.model, args.text)
        print(f"{len(d['tokens'])} tokens, perplexity {d['perplexity']:.6f}, "
              f"mean NLL {sum(d['nll']) / len(d['nll']):.6f}")
        return
    cases = []
    for model, text in CASES:
        d = logits(args.logits, os.path.join(args.shared, "models", model), os.path.join(args.shared, text))
        cases.append({
            "model": model,
            "text": text,
            "tokens": d["tokens"],
            "nll": d["nll"],
            "logsumexp": d["logsumexp"],
            "perplexity": d["perplexity"],
        })
        print(f"{model} on {text}: {len(d['tokens'])} tokens, perplexity {d['perplexity']:.6f}")
    data = {
        "about": "llama.cpp's numbers (the referee build, llama_logits from ../shared/tools: one batch, one "
        "thread, F32 KV cache, flash attention off; text cut to 256 tokens) for the K-quant and IQ4 "
        "models; written by tests/tools/quant_vitals_reference.py. Paths are relative to ../shared.",
        "cases": cases,
    }
    with open(args.out, "w") as f:
        json.dump(data, f, indent=None, separators=(", ", ": "))
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
