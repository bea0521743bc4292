#!/usr/bin/env python3
"""Regex search over the corpus (name, title, description), to help a query writer list EVERY tool that serves a query.

  grep_corpus.py REGEX [REGEX ...]      tools matching all regexes (case-insensitive)
  grep_corpus.py --server NAME          one server's tools, one line each
  grep_corpus.py --servers              server names and tool counts
"""
import gzip, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "tests", "bench", "testdata", "search", "corpus.json.gz")


def main():
    c = json.load(gzip.open(CORPUS))
    a = sys.argv[1:]
    if a and a[0] == "--servers":
        for s in c["servers"]:
            print("%-30s %4d  %s" % (s["name"], len(s["tools"]), s["source"]))
        return
    if a and a[0] == "--server":
        width = int(a[2]) if len(a) > 2 else 160
        for s in c["servers"]:
            if s["name"] == a[1]:
                for t in s["tools"]:
                    d = " ".join((t.get("description") or "").split())
                    print(("%s | %s" % (t["name"], d))[:width])
        return
    rx = [re.compile(x, re.I) for x in a]
    for s in c["servers"]:
        for t in s["tools"]:
            text = " ".join([t["name"], t.get("title") or "", (t.get("annotations") or {}).get("title") or "", t.get("description") or ""])
            if all(r.search(text) for r in rx):
                d = " ".join((t.get("description") or "").split())
                print("%s/%s | %s" % (s["name"], t["name"], d[:130]))


if __name__ == "__main__":
    main()
