"""Validates graft plans against docs/graft-plan.schema.json.

Usage: check_plan_schema.py SCHEMA ORGAN WORKDIR PLAN...
Every PLAN (the documented examples) must validate; a plan written by `organ graft
--save-plan` must validate; plans our parser refuses must be refused by the schema too.
"""
import json
import subprocess
import sys

import jsonschema


def main():
    schema_path, organ, workdir, *plans = sys.argv[1:]
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    failures = 0

    def expect(plan, valid, what):
        nonlocal failures
        errors = list(validator.iter_errors(plan))
        if bool(errors) == valid:
            failures += 1
            print(f"FAIL {what}: expected {'valid' if valid else 'invalid'}: {[e.message for e in errors]}")
        else:
            print(f"ok   {what}")

    for path in plans:
        with open(path) as f:
            expect(json.load(f), True, path)

    saved = f"{workdir}/saved-plan.json"
    result = subprocess.run([organ, "graft", "--base", "a.gguf", "--donor", "b.gguf", "--layers", "1-3",
                             "--system", "organ", "--role", "ffn_up", "-o", f"{workdir}/never.gguf",
                             "--save-plan", saved], capture_output=True, text=True)
    with open(saved) as f:
        expect(json.load(f), True, "plan saved by organ graft")

    good = {"format": "organ-graft-plan", "version": 1, "base": "a.gguf", "donors": {"b": "b.gguf"},
            "operations": [{"op": "map_layer", "donor": "b", "from": 2, "to": 5, "roles": ["ffn_up"]},
                           {"op": "duplicate_layer", "layer": 3},
                           {"op": "remove_metadata", "key": "general.url"},
                           {"op": "purify", "system": "organ", "method": "haar", "threshold": 0.5,
                            "attenuation": 0.25},
                           {"op": "quantize", "type": "q4_k_m", "imatrix": "m.imatrix.gguf",
                            "tensor_types": ["ffn_down=q6_k"], "output_tensor_type": "Q8_0",
                            "token_embedding_type": "q4_k", "pure": False, "leave_output_tensor": True},
                           {"op": "merge", "method": "dare_ties", "base": "base", "seed": 3, "system": "organ",
                            "models": [{"model": "b", "parameters": {
                                "weight": [{"filter": "mlp", "value": [0.2, 0.8]}, {"value": 0.5}],
                                "density": [0.3, 0.7]}}],
                            "parameters": {"normalize": True, "rescale": False}}]}
    expect(good, True, "hand-written plan")
    bad = [
        ({**good, "version": 2}, "version 2"),
        ({**good, "extra": 1}, "unknown field"),
        ({**good, "operations": [{"op": "transplant"}]}, "unknown op"),
        ({**good, "operations": [{"op": "replace", "donor": "b", "layers": "x"}]}, "bad range"),
        ({**good, "operations": [{"op": "replace", "donor": "b", "system": "liver"}]}, "bad system"),
        ({**good, "operations": [{"op": "remove_layer", "layer": -1}]}, "negative layer"),
        ({**good, "operations": [{"op": "remove_metadata", "key": "organ.graft.version"}]}, "provenance key"),
        ({k: v for k, v in good.items() if k != "base"}, "no base"),
        ({**good, "operations": [{"op": "purify", "method": "fft"}]}, "purify without a selection"),
        ({**good, "operations": [{"op": "purify", "layers": "1", "method": "fft", "keep": 0}]}, "keep 0"),
        ({**good, "operations": [{"op": "purify", "layers": "1", "method": "dct"}]}, "unknown method"),
        ({**good, "operations": [{"op": "quantize"}]}, "quantize without a type"),
        ({**good, "operations": [{"op": "quantize", "type": "Q4_K_X"}]}, "unknown file type"),
        ({**good, "operations": [{"op": "quantize", "type": "Q4_K_M", "output_tensor_type": "iq2_xxs"}]},
         "a tensor type the engine does not write"),
        ({**good, "operations": [{"op": "quantize", "type": "Q4_K_M", "tensor_types": ["ffn_down"]}]},
         "a tensor type without its type"),
        ({**good, "operations": [{"op": "quantize", "type": "Q4_K_M", "pure": 1}]}, "pure not a boolean"),
        ({**good, "operations": [{"op": "quantize", "type": "Q4_K_M", "imatrx": "m"}]}, "a misspelt field"),
        ({**good, "operations": [{"op": "merge", "method": "franken", "models": [{"model": "b"}]}]},
         "an unknown merge method"),
        ({**good, "operations": [{"op": "merge", "method": "ties", "base": "base"}]}, "a merge without models"),
        ({**good, "operations": [{"op": "merge", "method": "ties", "base": "base",
                                  "models": [{"model": "b", "parameters": {"density": 1.5}}]}]}, "density above 1"),
        ({**good, "operations": [{"op": "merge", "method": "ties", "base": "base",
                                  "models": [{"model": "b", "parameters": {"lambda": 2}}]}]}, "an unknown parameter"),
        ({**good, "operations": [{"op": "merge", "method": "dare_ties", "base": "base", "seed": -1,
                                  "models": [{"model": "b"}]}]}, "a negative seed"),
        ({**good, "operations": [{"op": "merge", "method": "linear",
                                  "models": [{"model": "b", "parameters": {"weight": [{"filter": "mlp"}]}}]}]},
         "a filtered value without its value"),
    ]
    for plan, what in bad:
        expect(plan, False, what)
        with open(f"{workdir}/bad.json", "w") as f:
            json.dump(plan, f)
        refused = subprocess.run([organ, "plan", "check", f"{workdir}/bad.json"], capture_output=True, text=True)
        if refused.returncode == 0:
            failures += 1
            print(f"FAIL {what}: organ plan check accepted it")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
