#!/usr/bin/env python3
"""Regenerate tests/bench/testdata/search/corpus.json.gz from real MCP servers.

Not run in CI. Installs each pinned server from servers.json into a scratch folder (default /tmp/search-corpus),
starts it over stdio with the dummy arguments/env listed there, records initialize + tools/list (dump.py), then
assembles the corpus. Needs node/npm, python3 (venv), go.

  python3 scripts/search-corpus/generate.py [--work DIR] [--only a,b] [--jobs 3] [--skip-install] [--assemble-only]
"""
import argparse, concurrent.futures as cf, datetime, gzip, json, os, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(REPO, "tests", "bench", "testdata", "search", "corpus.json.gz")


def sh(cmd, log, cwd=None, env=None, timeout=900):
    with open(log, "a") as f:
        f.write("$ %s\n" % " ".join(cmd)); f.flush()
        return subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout).returncode


def subst(s, work):
    return s.replace("{WORK}", work)


def install(s, work):
    kind, name = s["kind"], s["name"]
    d = os.path.join(work, kind, name)
    log = os.path.join(work, "logs", name + ".install.log")
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, PUPPETEER_SKIP_DOWNLOAD="1", PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
    if kind == "npm":
        if not os.path.exists(os.path.join(d, "package.json")):
            open(os.path.join(d, "package.json"), "w").write('{"name":"x","version":"0.0.0","private":true}\n')
        cmd = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"]
        if not s.get("scripts"):
            cmd.append("--ignore-scripts")
        return sh(cmd + ["%s@%s" % (s["package"], s["version"])] + s.get("extra_packages", []), log, cwd=d, env=env)
    if kind == "pypi":  # uv (pip install uv) if found on PATH or in $UV, else pip
        venv = os.path.join(d, "venv")
        uv = os.environ.get("UV") or shutil.which("uv")
        spec = ["%s==%s" % (s["package"], s["version"])] + s.get("extra_packages", [])
        py = s.get("python", "")  # e.g. "3.13": a pyenv build if there is one, else whatever uv finds by that name
        if py:
            import glob
            hits = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/%s*/bin/python3" % py)))
            py = hits[-1] if hits else (shutil.which("python" + py) or py)
        if uv:
            if not os.path.exists(venv):
                sh([uv, "venv", "-q"] + (["--python", py] if py else []) + [venv], log)
            return sh([uv, "pip", "install", "-q", "--python", os.path.join(venv, "bin", "python")] + spec, log, env=env)
        if not os.path.exists(venv):
            sh([sys.executable, "-m", "venv", venv], log)
        return sh([os.path.join(venv, "bin", "pip"), "install", "-q"] + spec, log, env=env)
    if kind == "go":
        env = dict(env, GOBIN=os.path.join(d, "bin"), GOFLAGS="-mod=mod")
        return sh(["go", "install", "%s@%s" % (s.get("install_path", s["package"]), s["version"])], log, env=env, timeout=1800)
    raise ValueError(kind)


def command(s, work):
    kind, name = s["kind"], s["name"]
    d = os.path.join(work, kind, name)
    if kind == "npm":
        binname = s.get("bin")
        if not binname:
            pj = json.load(open(os.path.join(d, "node_modules", s["package"], "package.json")))
            b = pj.get("bin")
            base = pj["name"].split("/")[-1]
            if isinstance(b, str):
                binname = base
            else:  # prefer the bin named like the package, then one with "mcp" in it
                binname = base if base in b else next((k for k in sorted(b) if "mcp" in k), sorted(b)[0])
        exe = os.path.join(d, "node_modules", ".bin", binname)
    elif kind == "pypi":
        binname = s.get("bin")
        if not binname:  # the distribution's console script named like it, else the only / first one
            code = ("import importlib.metadata as m,sys;d=m.distribution(sys.argv[1]);"
                    "print('\\n'.join(sorted(e.name for e in d.entry_points if e.group=='console_scripts')))")
            names = subprocess.run([os.path.join(d, "venv", "bin", "python"), "-c", code, s["package"]],
                                   capture_output=True, text=True).stdout.split()
            norm = lambda x: x.lower().replace(".", "-").replace("_", "-")
            binname = next((n for n in names if norm(n) == norm(s["package"])), None) or \
                next((n for n in names if "mcp" in n.lower()), names[0] if names else s["package"])
        exe = os.path.join(d, "venv", "bin", binname)
    else:
        exe = os.path.join(d, "bin", s.get("bin") or s["package"].rstrip("/").split("/")[-1])
    return [exe] + [subst(a, work) for a in s.get("args", [])]


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: dummy
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: dummy
  user: {token: dummy-not-a-real-token}
contexts:
- name: dummy
  context: {cluster: dummy, user: dummy, namespace: default}
current-context: dummy
"""


def prepare(work):
    """Scratch inputs some servers insist on at start-up: a folder, a git repo, a kubeconfig, dummy OAuth files."""
    for d in ("fsroot", "gitrepo", "arxiv"):
        os.makedirs(os.path.join(work, d), exist_ok=True)
    g = os.path.join(work, "gitrepo")
    if not os.path.exists(os.path.join(g, ".git")):
        subprocess.run(["git", "init", "-q", g])
        open(os.path.join(g, "README.md"), "w").write("scratch\n")
        subprocess.run(["git", "-C", g, "add", "README.md"])
        subprocess.run(["git", "-C", g, "-c", "user.name=x", "-c", "user.email=x@example.com", "commit", "-qm", "init"])
    open(os.path.join(work, "kubeconfig"), "w").write(KUBECONFIG)
    oauth = {"installed": {"client_id": "dummy.apps.googleusercontent.com", "client_secret": "dummy-not-a-real-token",
                           "redirect_uris": ["http://localhost"], "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                           "token_uri": "https://oauth2.googleapis.com/token"}}
    json.dump(oauth, open(os.path.join(work, "gcp-oauth.keys.json"), "w"))
    json.dump({"access_token": "dummy", "refresh_token": "dummy", "token_type": "Bearer", "expiry_date": 4102444800000},
              open(os.path.join(work, "gdrive-creds.json"), "w"))


def run(s, work):
    name = s["name"]
    log = os.path.join(work, "logs", name + ".run.log")
    out = os.path.join(work, "out", name + ".json")
    os.makedirs(os.path.join(work, "fsroot"), exist_ok=True)
    cmd = [sys.executable, os.path.join(HERE, "dump.py"), out, "--cwd", os.path.join(work, "fsroot"),
           "--timeout", str(s.get("timeout", 120))]
    for k, v in s.get("env", {}).items():
        cmd += ["--env", "%s=%s" % (k, subst(v, work))]
    cmd += ["--"] + command(s, work)
    return sh(cmd, log, timeout=s.get("timeout", 120) + 30)


def source(s):
    return {"npm": "npm:%s@%s", "pypi": "pypi:%s==%s", "go": "go:%s@%s"}[s["kind"]] % (s["package"], s["version"])


def assemble(servers, work):
    out = {"generated": datetime.date.today().isoformat(), "servers": []}
    seen = set()
    for s in servers:
        f = os.path.join(work, "out", s["name"] + ".json")
        if not os.path.exists(f) or source(s) in seen:
            continue
        seen.add(source(s))
        d = json.load(open(f))
        if not d["tools"]:
            continue
        tools = []
        for t in d["tools"]:
            tt = {k: t[k] for k in ("name", "title", "description", "inputSchema", "outputSchema", "annotations") if k in t}
            tools.append(tt)
        out["servers"].append({"name": s["name"], "source": source(s), "serverInfo": d["serverInfo"],
                               "instructions": d["instructions"], "tools": tools})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with gzip.GzipFile(OUT, "wb", mtime=0) as g:
        g.write(json.dumps(out, indent=1, ensure_ascii=False, sort_keys=False).encode())
    n = sum(len(s["tools"]) for s in out["servers"])
    print("wrote %s: %d servers, %d tools" % (OUT, len(out["servers"]), n))
    write_sources(servers, out)


def write_sources(servers, out):
    """SOURCES.md: one row per recorded server (how it was run, which dummy env), then those left out and why."""
    got = {s["name"]: s for s in out["servers"]}
    rows = ["# Search eval corpus: sources", "",
            "Generated by `scripts/search-corpus/generate.py` on %s from `scripts/search-corpus/servers.json`. "
            "Each server was installed from its registry at the pinned version, started over stdio with the arguments "
            "below (`{WORK}` is the scratch folder), and its `initialize` and every page of `tools/list` were recorded "
            "verbatim. All tokens are dummies (`dummy-not-a-real-token` or a dummy in the vendor's format); no server "
            "was called beyond `initialize` and `tools/list`." % out["generated"], "",
            "%d servers, %d tools." % (len(got), sum(len(s["tools"]) for s in got.values())), "",
            "| server | source | tools | how it was run | dummy env |", "| --- | --- | ---: | --- | --- |"]
    for s in servers:
        if s["name"] not in got:
            continue
        how = {"npm": "npm install; node_modules/.bin/%s" % (s.get("bin") or "(package bin)"),
               "pypi": "venv (Python %s) + pip install; %s" % (s.get("python", "3.11"), s.get("bin") or "(console script)"),
               "go": "go install %s@%s" % (s.get("install_path", s["package"]), s["version"])}[s["kind"]]
        args = " ".join(s.get("args", []))
        if args:
            how += " `%s`" % args.replace("|", "\\|")
        if s.get("extra_packages"):
            how += " (+ %s)" % ", ".join(s["extra_packages"])
        env = ", ".join("`%s`" % k for k in s.get("env", {})) or "none"
        rows.append("| %s | `%s` | %d | %s | %s |" % (s["name"], got[s["name"]]["source"], len(got[s["name"]]["tools"]), how, env))
    left = [s for s in servers if s["name"] not in got]
    if left:
        rows += ["", "## Tried and left out", "", "| server | source | why |", "| --- | --- | --- |"]
        for s in left:
            rows.append("| %s | `%s` | %s |" % (s["name"], source(s), s.get("skipped", "did not list tools in this run")))
    open(os.path.join(os.path.dirname(OUT), "SOURCES.md"), "w").write("\n".join(rows) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/search-corpus")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--skip-install", action="store_true")
    ap.add_argument("--assemble-only", action="store_true")
    a = ap.parse_args()
    servers = json.load(open(os.path.join(HERE, "servers.json")))
    names = [n.strip() for n in a.only.split(",") if n.strip()]
    todo = [s for s in servers if not names or s["name"] in names]
    for sub in ("logs", "out"):
        os.makedirs(os.path.join(a.work, sub), exist_ok=True)
    prepare(a.work)
    if not a.assemble_only:
        def one(s):
            try:
                rc = 0 if a.skip_install else install(s, a.work)
                rc2 = run(s, a.work)
                return s["name"], rc, rc2
            except Exception as e:
                return s["name"], "exc", repr(e)
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            for name, rc, rc2 in ex.map(one, todo):
                print("%-28s install=%s run=%s" % (name, rc, rc2), flush=True)
    assemble(servers, a.work)


if __name__ == "__main__":
    main()
