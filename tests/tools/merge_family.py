#!/usr/bin/env python3
"""Merges the family's fine-tunes on its base with every method and measures them (docs/merging.md).

Usage: merge_family.py ORGAN [--shared ../shared] [--work DIR] [--json FILE]

With `organ` only: the inputs in F16 (../shared/models/family), and in Q8_0 and Q4_K_M made from
them with `organ quantize`; `family-farm` and `family-sea` merged on `family-base` with each
method (`organ merge` of a mergekit configuration written here, the output in the base's types);
then the perplexity of base, each fine-tune and each merge on the family's farm, sea and general
texts (`organ vitals --chunk 128`, llama-perplexity -c 128's way). Prints a Markdown table per
input type, and with --json writes every number (tst_merge_family checks some of them).
"""
import argparse
import json
import os
import subprocess
import tempfile

TEXTS = ("farm", "sea", "general")
MODELS = ("base", "farm", "sea")

# (row name, method, global parameters, per-model parameters of farm and sea, base given)
MERGES = [
    ("linear ½ ½", "linear", {}, [{"weight": 0.5}, {"weight": 0.5}], False),
    ("slerp t ½ (farm → sea)", "slerp", {"t": 0.5}, None, False),
    ("task_arithmetic 1 1", "task_arithmetic", {}, [{"weight": 1.0}, {"weight": 1.0}], True),
    ("task_arithmetic ½ ½", "task_arithmetic", {}, [{"weight": 0.5}, {"weight": 0.5}], True),
    ("ties d ½, 1 1", "ties", {}, [{"weight": 1.0, "density": 0.5}, {"weight": 1.0, "density": 0.5}], True),
    ("ties d ½, 1 1, unnormalized", "ties", {"normalize": False},
     [{"weight": 1.0, "density": 0.5}, {"weight": 1.0, "density": 0.5}], True),
    ("dare_linear d ½, 1 1", "dare_linear", {}, [{"weight": 1.0, "density": 0.5}, {"weight": 1.0, "density": 0.5}],
     True),
    ("dare_ties d ½, 1 1", "dare_ties", {}, [{"weight": 1.0, "density": 0.5}, {"weight": 1.0, "density": 0.5}], True),
    ("breadcrumbs d 0.9 γ 0.01, 1 1", "breadcrumbs", {},
     [{"weight": 1.0, "density": 0.9, "gamma": 0.01}, {"weight": 1.0, "density": 0.9, "gamma": 0.01}], True),
    ("breadcrumbs_ties d 0.9 γ 0.01, 1 1", "breadcrumbs_ties", {},
     [{"weight": 1.0, "density": 0.9, "gamma": 0.01}, {"weight": 1.0, "density": 0.9, "gamma": 0.01}], True),
    ("model_stock", "model_stock", {}, [{}, {}], True),
    # The farm fine-tune gained little on its domain, and the sea's task vector costs the farm text:
    # weighted towards the farm.
    ("slerp t 0.3 (farm → sea)", "slerp", {"t": 0.3}, None, False),
    ("task_arithmetic 1 ½", "task_arithmetic", {}, [{"weight": 1.0}, {"weight": 0.5}], True),
    ("ties d ½, 1 ½, unnormalized", "ties", {"normalize": False},
     [{"weight": 1.0, "density": 0.5}, {"weight": 0.5, "density": 0.5}], True),
    ("dare_ties d ½, 1 ½", "dare_ties", {}, [{"weight": 1.0, "density": 0.5}, {"weight": 0.5, "density": 0.5}], True),
    ("breadcrumbs_ties d 0.9 γ 0.01, 1 ½", "breadcrumbs_ties", {},
     [{"weight": 1.0, "density": 0.9, "gamma": 0.01}, {"weight": 0.5, "density": 0.9, "gamma": 0.01}], True),
]


def run(args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {result.stderr}")
    return result


def yaml_value(value):
    return json.dumps(value)  # JSON scalars are YAML scalars


def write_config(path, method, parameters, models, base, farm, sea, with_base):
    lines = [f"merge_method: {method}"]
    if method == "slerp":
        lines += [f"base_model: {farm}", "models:", f"  - model: {farm}", f"  - model: {sea}"]
    else:
        if with_base:
            lines.append(f"base_model: {base}")
        lines.append("models:")
        for model, params in zip((farm, sea), models):
            lines.append(f"  - model: {model}")
            if params:
                lines.append("    parameters:")
                lines += [f"      {k}: {yaml_value(v)}" for k, v in params.items()]
    if parameters:
        lines.append("parameters:")
        lines += [f"  {k}: {yaml_value(v)}" for k, v in parameters.items()]
    lines.append("dtype: float16")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def perplexities(organ, model, texts, work):
    out = {}
    for text in TEXTS:
        report = os.path.join(work, "vitals.json")
        run([organ, "vitals", model, "--text", texts[text], "--chunk", "128", "--tokens", "0", "--json", report])
        with open(report) as f:
            out[text] = json.load(f)["perplexity"]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("organ")
    parser.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    parser.add_argument("--work")
    parser.add_argument("--json")
    options = parser.parse_args()
    family = os.path.join(options.shared, "models/family")
    texts = {t: os.path.join(family, "texts", f"{t}.txt") for t in TEXTS}
    work = options.work or tempfile.mkdtemp(prefix="merge-family-")
    results = {}
    for kind in ("F16", "Q8_0", "Q4_K_M"):
        paths = {}
        for m in MODELS:
            source = os.path.join(family, f"family-{m}-f16.gguf")
            if kind == "F16":
                paths[m] = os.path.abspath(source)
            else:
                paths[m] = os.path.join(work, f"family-{m}-{kind.lower()}.gguf")
                if not os.path.exists(paths[m]):
                    run([options.organ, "quantize", source, "--type", kind, "-o", paths[m]])
        rows = {m: perplexities(options.organ, paths[m], texts, work) for m in MODELS}
        for name, method, parameters, models, with_base in MERGES:
            config = os.path.join(work, f"{kind}-{method}.yaml")
            output = os.path.join(work, f"{kind}-{len(rows)}.gguf")
            write_config(config, method, parameters, models, paths["base"], paths["farm"], paths["sea"], with_base)
            run([options.organ, "merge", config, "-o", output])
            rows[name] = perplexities(options.organ, output, texts, work)
            os.remove(output)
        results[kind] = rows
        print(f"\n{kind} inputs (perplexity, --chunk 128; lower is better)\n")
        print("| model | farm | sea | general |")
        print("|---|---|---|---|")
        for name, p in rows.items():
            print(f"| {name} | {p['farm']:.4f} | {p['sea']:.4f} | {p['general']:.4f} |")
    if options.json:
        with open(options.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
