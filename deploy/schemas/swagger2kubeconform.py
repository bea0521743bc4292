#!/usr/bin/env python3
"""Turn Kubernetes' OpenAPI v2 swagger.json into standalone JSON schemas that
kubeconform can read offline (-schema-location 'DIR/{{ .ResourceKind }}{{ .KindSuffix }}.json').

    swagger2kubeconform.py SWAGGER_JSON OUT_DIR [--strict]

One file per definition that carries x-kubernetes-group-version-kind, named as
kubeconform expects (deployment-apps-v1.json, service-v1.json, ...), with every
$ref inlined (a recursive reference becomes {}, i.e. anything). --strict
forbids properties a definition does not declare (additionalProperties: false),
so a misspelt field fails validation. Optional fields also accept null, as the
API server does. Standard library only.
"""
import json
import os
import sys

INT_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
# Quantity is a string in the spec but the API server accepts numbers too.
QUANTITY = {"oneOf": [{"type": "string"}, {"type": "number"}]}
SPECIAL = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": INT_OR_STRING,
    "io.k8s.apimachinery.pkg.api.resource.Quantity": QUANTITY,
}


def nullable(schema):
    t = schema.get("type")
    if isinstance(t, str):
        schema = dict(schema)
        schema["type"] = [t, "null"]
    return schema


def convert(node, defs, strict, stack):
    """Returns node with refs inlined and the strict / nullable rules applied."""
    if isinstance(node, list):
        return [convert(n, defs, strict, stack) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in SPECIAL:
            return dict(SPECIAL[name])
        if name in stack:
            return {}  # recursive (e.g. JSONSchemaProps): accept anything
        return convert(defs[name], defs, strict, stack | {name})
    if node.get("format") == "int-or-string":
        return dict(INT_OR_STRING)
    out = {}
    for k, v in node.items():
        if k.startswith("x-") and k != "x-kubernetes-group-version-kind":
            continue
        if k == "properties":
            required = set(node.get("required", []))
            out[k] = {
                p: (s if p in required else nullable(s))
                for p, s in ((p, convert(s, defs, strict, stack)) for p, s in v.items())
            }
        elif k in ("items", "additionalProperties", "allOf", "anyOf", "oneOf", "not"):
            out[k] = convert(v, defs, strict, stack)
        else:
            out[k] = v
    if strict and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def file_name(gvk):
    group, version, kind = gvk.get("group", ""), gvk["version"], gvk["kind"]
    suffix = "-" + group.split(".")[0].lower() if group else ""
    return f"{kind.lower()}{suffix}-{version.lower()}.json"


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    strict = "--strict" in argv[1:]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[0]) as f:
        defs = json.load(f)["definitions"]
    os.makedirs(args[1], exist_ok=True)
    written = 0
    for name, d in sorted(defs.items()):
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            schema = convert(d, defs, strict, frozenset([name]))
            schema.pop("x-kubernetes-group-version-kind", None)
            schema["$schema"] = "http://json-schema.org/schema#"
            props = schema.get("properties", {})
            api_version = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk["version"]
            if "apiVersion" in props:
                props["apiVersion"] = {"type": "string", "enum": [api_version]}
            if "kind" in props:
                props["kind"] = {"type": "string", "enum": [gvk["kind"]]}
            path = os.path.join(args[1], file_name(gvk))
            if os.path.exists(path):
                continue  # the same GVK listed by several definitions: keep the first
            with open(path, "w") as f:
                json.dump(schema, f, separators=(",", ":"), sort_keys=True)
            written += 1
    print(f"{written} schemas in {args[1]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
