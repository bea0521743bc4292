"""A toolsvc client in Python with the toolsvc package (clients/python): list
the catalog, watch it, call a tool, call one with progress streaming, and
resume the watch from the last revision seen.

    client.py ADDR TOOL [ARGS_JSON [STREAM_TOOL STREAM_ARGS_JSON]]

Needs the package: pip install ./clients/python (see examples/README.md).
"""
import sys

import toolsvc


def main(addr, tool, args_json="{}", stream_tool=None, stream_args="{}"):
    stream_tool = stream_tool or tool
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
            for ev in watch:
                if ev.kind == toolsvc.EventKind.CHANGES:
                    names = ["+" + t.name for t in ev.upserted] + ["-" + n for n in ev.removed]
                    print("changes", ev.revision, " ".join(names))
                    break
                print(ev.kind.value, ev.revision)  # synced, progress, or a reset snapshot


if __name__ == "__main__":
    main(*sys.argv[1:])
