#!/usr/bin/env python3
"""Run one stdio MCP server, record initialize + all pages of tools/list as JSON.

Usage: dump.py OUT.json [--env K=V ...] [--cwd DIR] [--timeout S] -- COMMAND ARGS...
Standard library only: speaks newline-delimited JSON-RPC over the child's stdio.
Lines on stdout that are not JSON-RPC (some servers log there) are ignored.
"""
import json, os, select, subprocess, sys, time

def main():
    argv = sys.argv[1:]
    out = argv.pop(0)
    env = dict(os.environ)
    cwd = None
    timeout = 90.0
    while argv and argv[0] != "--":
        a = argv.pop(0)
        if a == "--env":
            k, v = argv.pop(0).split("=", 1); env[k] = v
        elif a == "--cwd":
            cwd = argv.pop(0)
        elif a == "--timeout":
            timeout = float(argv.pop(0))
        else:
            sys.exit("unknown flag " + a)
    argv.pop(0)
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr,
                         env=env, cwd=cwd, start_new_session=True)
    deadline = time.time() + timeout
    buf = b""

    def send(obj):
        p.stdin.write((json.dumps(obj) + "\n").encode()); p.stdin.flush()

    def recv(want_id):
        nonlocal buf
        while True:
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                line = line.strip()
                if not line.startswith(b"{"):
                    continue
                try:
                    msg = json.loads(line)
                except Exception:
                    continue
                if msg.get("id") == want_id and ("result" in msg or "error" in msg):
                    return msg
                if "method" in msg and "id" in msg:  # a server->client request: answer it empty
                    if msg["method"] == "roots/list":
                        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}})
                    else:
                        send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("timed out waiting for id %s" % want_id)
            r, _, _ = select.select([p.stdout], [], [], min(left, 1.0))
            if r:
                chunk = os.read(p.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise EOFError("server closed stdout (exit %s)" % p.poll())
                buf += chunk

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": False}},
            "clientInfo": {"name": "toolsvc-search-corpus", "version": "1"}}})
        init = recv(1)
        if "error" in init:
            raise RuntimeError("initialize error: %s" % init["error"])
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools, cursor, rid = [], None, 2
        while True:
            params = {"cursor": cursor} if cursor else {}
            send({"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": params})
            r = recv(rid); rid += 1
            if "error" in r:
                raise RuntimeError("tools/list error: %s" % r["error"])
            tools += r["result"].get("tools", [])
            cursor = r["result"].get("nextCursor")
            if not cursor or rid > 200:
                break
        res = init["result"]
        json.dump({"protocolVersion": res.get("protocolVersion"), "serverInfo": res.get("serverInfo", {}),
                   "instructions": res.get("instructions") or "", "tools": tools}, open(out, "w"), indent=1)
        print("%s: %d tools" % (out, len(tools)), file=sys.stderr)
    finally:
        try:
            os.killpg(p.pid, 15)
        except Exception:
            pass
        try:
            p.wait(5)
        except Exception:
            os.killpg(p.pid, 9)

if __name__ == "__main__":
    main()
