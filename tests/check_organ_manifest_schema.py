"""Validates organ directory manifests against docs/organ-manifest.schema.json.

Usage: check_organ_manifest_schema.py SCHEMA ORGAN WORKDIR MODEL...
Every MODEL is extracted with `organ extract` and its manifest must validate, as must those of
directories `organ purify` and `organ graft` write from the first; manifests our
reader refuses (a path out of the directory, a bad digest, a scalar of the wrong kind) must be
refused by the schema too.
"""
import copy
import json
import os
import shutil
import subprocess
import sys

import jsonschema


def main():
    schema_path, organ, workdir, *models = sys.argv[1:]
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    failures = 0
    manifests = []
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    for i, model in enumerate(models):
        if not os.path.exists(model):
            print(f"skip {model}: missing")
            continue
        target = os.path.join(workdir, f"m{i}")
        subprocess.run([organ, "extract", model, "-o", target], check=True, capture_output=True)
        with open(os.path.join(target, "manifest.json")) as f:
            manifest = json.load(f)
        manifests.append(manifest)
        errors = list(validator.iter_errors(manifest))
        if errors:
            failures += 1
            print(f"FAIL {model}: {[e.message for e in errors][:3]}")
        else:
            print(f"ok   {model}")
    if not manifests:
        print("FAIL no model could be extracted")
        return 1
    # Directories organ purify and organ graft write (from the first directory) validate too.
    first = os.path.join(workdir, "m0")
    made = [("purify", [organ, "purify", first, "--method", "haar", "--system", "organ", "-o",
                        os.path.join(workdir, "purified")]),
            ("graft", [organ, "graft", "--base", first, "--donor", first, "--system", "organ", "--purify", "fft",
                       "-o", os.path.join(workdir, "grafted")])]
    for what, command in made:
        result = subprocess.run(command, capture_output=True, text=True)
        target = command[command.index("-o") + 1]
        if result.returncode != 0 or not os.path.exists(os.path.join(target, "manifest.json")):
            failures += 1
            print(f"FAIL organ {what} wrote no directory: {result.stderr.strip()}")
            continue
        with open(os.path.join(target, "manifest.json")) as f:
            manifest = json.load(f)
        errors = list(validator.iter_errors(manifest))
        if errors or manifest["source"].get("made_by") != what:
            failures += 1
            print(f"FAIL directory made by organ {what}: {[e.message for e in errors][:3]}")
        else:
            print(f"ok   directory made by organ {what}")
    bad = []
    m = copy.deepcopy(manifests[0]); m["tensors"][0]["file"] = "../escape.bin"; bad.append(("path out of the directory", m))
    m = copy.deepcopy(manifests[0]); m["tensors"][0]["sha256"] = "xyz"; bad.append(("bad digest", m))
    m = copy.deepcopy(manifests[0]); m["metadata"][0]["type"] = "u128"; bad.append(("unknown type", m))
    m = copy.deepcopy(manifests[0]); m["format"] = "other"; bad.append(("format", m))
    m = copy.deepcopy(manifests[0]); del m["tensors"][0]["shape"]; bad.append(("no shape", m))
    for what, manifest in bad:
        if list(validator.iter_errors(manifest)):
            print(f"ok   refused: {what}")
        else:
            failures += 1
            print(f"FAIL accepted: {what}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
