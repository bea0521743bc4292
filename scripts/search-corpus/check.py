#!/usr/bin/env python3
"""Validate tests/bench/testdata/search/queries.json against corpus.json.gz.

Checks: ids unique and well formed, kinds known, every expected (server, tool) exists in the corpus, no duplicate
query text, no duplicate expected entries. Prints counts per kind and per server. Exit 1 on any error.
"""
import collections, gzip, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "tests", "bench", "testdata", "search")
KINDS = {"paraphrase", "task", "keyword", "named"}
NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def main():
    corpus = json.load(gzip.open(os.path.join(DATA, "corpus.json.gz")))
    queries = json.load(open(os.path.join(DATA, "queries.json")))
    errors = []
    tools = set()
    servers = collections.Counter()
    total_tools = 0
    for s in corpus["servers"]:
        if not NAME.match(s["name"]):
            errors.append("bad server name %r" % s["name"])
        if s["name"] in servers:
            errors.append("duplicate server %r" % s["name"])
        servers[s["name"]] = len(s["tools"])
        names = [t["name"] for t in s["tools"]]
        if len(names) != len(set(names)):
            errors.append("server %s lists a tool name twice" % s["name"])
        tools.update((s["name"], n) for n in names)
        total_tools += len(names)
    sources = collections.Counter(s["source"] for s in corpus["servers"])
    errors += ["source listed twice: %s" % k for k, v in sources.items() if v > 1]
    ids, texts = set(), set()
    by_kind = collections.Counter()
    by_server = collections.Counter()
    for q in queries:
        qid = q.get("id")
        if qid in ids:
            errors.append("duplicate id %s" % qid)
        ids.add(qid)
        if q.get("kind") not in KINDS:
            errors.append("%s: bad kind %r" % (qid, q.get("kind")))
        text = q.get("query", "").strip().lower()
        if not text:
            errors.append("%s: empty query" % qid)
        if text in texts:
            errors.append("%s: duplicate query text" % qid)
        texts.add(text)
        exp = [(e["server"], e["tool"]) for e in q.get("expected", [])]
        if not exp:
            errors.append("%s: no expected tools" % qid)
        if len(exp) != len(set(exp)):
            errors.append("%s: an expected tool is listed twice" % qid)
        for e in exp:
            if e not in tools:
                errors.append("%s: expected %s/%s is not in the corpus" % (qid, e[0], e[1]))
        by_kind[q.get("kind")] += 1
        for srv in {e[0] for e in exp}:
            by_server[srv] += 1
    print("corpus: %d servers, %d tools" % (len(servers), total_tools))
    print("queries: %d, expected tools per query: mean %.2f, max %d" % (
        len(queries), sum(len(q["expected"]) for q in queries) / max(1, len(queries)),
        max((len(q["expected"]) for q in queries), default=0)))
    print("by kind: " + ", ".join("%s %d (%.0f%%)" % (k, v, 100.0 * v / len(queries)) for k, v in sorted(by_kind.items())))
    print("servers with at least one expected tool: %d of %d" % (len(by_server), len(servers)))
    for srv, n in by_server.most_common():
        print("  %-36s %3d queries" % (srv, n))
    if errors:
        print("\n%d error(s):" % len(errors))
        for e in errors:
            print("  " + e)
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
