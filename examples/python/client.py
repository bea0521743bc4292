"""A toolsvc client in Python with the toolsvc package (clients/python): list
the catalog, watch it, call a tool, call one with progress streaming, and
resume the watch from the last revision seen.

    client.py ADDR TOOL [ARGS_JSON [STREAM_TOOL STREAM_ARGS_JSON [WAIT_S]]]

Without STREAM_TOOL the streaming call calls TOOL with ARGS_JSON again. The
resumed watch stops at the first change, or at "synced" (nothing changed
yet) unless WAIT_S (default 0) asks to watch that many seconds more for one.

Needs the package: pip install ./clients/python (see examples/README.md).
"""
import sys
import time

import toolsvc


def main(addr, tool, args_json="{}", stream_tool=None, stream_args=None, wait_s="0"):
    if not stream_tool:  # the same call, streamed
        stream_tool, stream_args = tool, args_json
    stream_args = stream_args or "{}"
    wait_s = float(wait_s)
    with toolsvc.Client(addr) as client:
        # List: every page, one revision.
        for t in client.list_tools():
            print("tool", t.name)

        # Watch: the first event is a snapshot; keep its revision and tools.
        with client.watch() as watch:
            first = next(iter(watch))
            revision, tools = first.revision, list(watch.catalog.values())
            print("snapshot", revision, len(first.tools), "tools")
        # (closed, as if this process stopped)

        # Call. A tool's own failure is is_error, not an exception
        # (toolsvc.ToolsvcError: .code, .reason, .field_violations).
        res = client.call_tool(tool, args_json, timeout=30)
        print("call", tool, "is_error" if res.is_error else "ok", res.text)

        # Streaming call: progress as it comes, the result last.
        for msg in client.call_tool_stream(stream_tool, stream_args, timeout=30):
            if isinstance(msg, toolsvc.Progress):
                print("progress %g/%s %s" % (msg.progress, "%g" % msg.total if msg.total is not None else "?", msg.message))
            else:
                print("stream result", "is_error" if msg.is_error else "ok", msg.text)

        # Resume from the last revision: only what changed since arrives.
        # (A running watcher does this by itself after a disconnect.)
        print("resumed from", revision)
        with client.watch(resume_token=revision, initial=tools) as watch:
            deadline = None  # set at synced when WAIT_S asks to watch on
            while True:
                left = None if deadline is None else deadline - time.monotonic()
                ev = watch.get(timeout=left)
                if ev is None:
                    print("no change within %gs" % wait_s)
                    break
                if ev.kind == toolsvc.EventKind.CHANGES:
                    names = ["+" + t.name for t in ev.upserted] + ["-" + n for n in ev.removed]
                    print("changes", ev.revision, " ".join(names))
                    break
                print(ev.kind.value, ev.revision)  # synced, progress, or a reset snapshot
                if ev.kind != toolsvc.EventKind.PROGRESS:  # the catalog held is current
                    if wait_s <= 0:
                        break
                    deadline = deadline or time.monotonic() + wait_s

        resources_and_prompts(client.stub)


def resources_and_prompts(stub):
    """Read the first resource listed and get the first prompt listed
    (required arguments set to "world"), with the generated stub
    (client.stub) and messages (toolsvc.v1.toolsvc_pb2)."""
    from toolsvc.v1 import toolsvc_pb2 as pb

    resources = stub.ListResources(pb.ListResourcesRequest(), timeout=10).resources
    for r in resources:
        print("resource", r.server, r.uri)
    if resources:
        r = resources[0]
        # server + uri; a resource_link from a tool result reads the same
        # way, with the called tool's server.
        res = stub.ReadResource(pb.ReadResourceRequest(server=r.server, uri=r.uri), timeout=30)
        for c in res.contents:
            body = c.text if c.WhichOneof("contents") == "text" else "%d bytes" % len(c.blob)
            print("read", c.uri, body.splitlines()[0] if body else "")
    prompts = stub.ListPrompts(pb.ListPromptsRequest(), timeout=10).prompts
    for p in prompts:
        print("prompt", p.name)
    if prompts:
        p = prompts[0]
        args = {a.name: "world" for a in p.arguments if a.required}
        got = stub.GetPrompt(pb.GetPromptRequest(name=p.name, arguments=args), timeout=30)
        for m in got.messages:
            print("got prompt", p.name, m.role + ":", m.content.text.text)


if __name__ == "__main__":
    main(*sys.argv[1:])
