"""Validates the Dapr resources (dapr.io kinds) of rendered manifests against
the CRD schemas Dapr ships (charts/dapr/crds in the dapr Go module, the same
1.18.3 that dapr/build.sh builds), offline. kubernetes-validate knows only
Kubernetes' own kinds and merely warns about these.

Strict like `kubectl apply --validate=strict`: a field the CRD does not declare
is an error (every object schema with properties gets additionalProperties:
false unless it preserves unknown fields).

Usage: python validate_dapr_resources.py CRD_DIR MANIFEST...
Prints one line per resource; exits 1 when any is invalid or has no CRD.
"""
import pathlib
import sys

import jsonschema
import yaml


def strict(schema):
    if isinstance(schema, dict):
        if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields") and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for value in schema.values():
            strict(value)
    elif isinstance(schema, list):
        for value in schema:
            strict(value)
    return schema


def load_crds(crd_dir):
    schemas = {}
    for path in sorted(pathlib.Path(crd_dir).glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = doc["spec"]["group"], doc["spec"]["names"]["kind"]
            for version in doc["spec"]["versions"]:
                schemas[(f"{group}/{version['name']}", kind)] = strict(version["schema"]["openAPIV3Schema"])
    return schemas


def main():
    crd_dir, manifests = sys.argv[1], sys.argv[2:]
    schemas = load_crds(crd_dir)
    failed = checked = 0
    for manifest in manifests:
        for doc in yaml.safe_load_all(pathlib.Path(manifest).read_text()):
            if not doc or not str(doc.get("apiVersion", "")).startswith("dapr.io/"):
                continue
            key = (doc["apiVersion"], doc["kind"])
            name = f"{manifest}: {doc['kind']}/{doc.get('metadata', {}).get('name')}"
            checked += 1
            if key not in schemas:
                print(f"FAIL {name}: no CRD for {key[0]} {key[1]} in {crd_dir}")
                failed += 1
                continue
            errors = sorted(jsonschema.Draft7Validator(schemas[key]).iter_errors(doc), key=lambda e: list(e.path))
            for error in errors:
                print(f"FAIL {name}: {'.'.join(map(str, error.path)) or '(root)'}: {error.message}")
            failed += bool(errors)
            if not errors:
                print(f"ok   {name} against the Dapr {key[0]} {key[1]} CRD")
    if checked == 0:
        print("FAIL no dapr.io resources found: the chart must render its components and configuration")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
