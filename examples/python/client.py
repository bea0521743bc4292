#!/usr/bin/python3
"""A toolsvc client in Python: list the catalog, watch it, call a tool, call
one with progress streaming, and resume the watch from the last revision seen.

    client.py ADDR TOOL [ARGS_JSON [STREAM_TOOL STREAM_ARGS_JSON]]

Needs Debian's python3-grpcio (use /usr/bin/python3) and stubs generated from
proto/ by protoc (see examples/README.md).
"""
import sys

import grpc

from toolsvc.v1 import toolsvc_pb2 as pb
from toolsvc.v1 import toolsvc_pb2_grpc as rpc


def main(addr, tool, args_json="{}", stream_tool=None, stream_args="{}"):
    stream_tool = stream_tool or tool
    with grpc.insecure_channel(addr) as channel:
        stub = rpc.ToolServiceStub(channel)

        # List: page until next_page_token is empty.
        token = ""
        while True:
            page = stub.ListTools(pb.ListToolsRequest(page_token=token), timeout=10)
            for t in page.tools:
                print("tool", t.name)
            token = page.next_page_token
            if not token:
                break

        # Watch: the first message is a snapshot; keep its revision.
        watch = stub.WatchCatalog(pb.WatchCatalogRequest())
        first = next(watch)
        revision = first.revision
        print("snapshot", revision, len(first.snapshot.tools), "tools")
        watch.cancel()  # as if the connection dropped

        # Call. A tool's own failure is is_error, not an RPC error.
        res = stub.CallTool(pb.CallToolRequest(name=tool, arguments_json=args_json), timeout=30)
        text = "".join(c.text.text for c in res.content if c.HasField("text"))
        print("call", tool, "is_error" if res.is_error else "ok", text)

        # Streaming call: progress as it comes, the result last.
        for msg in stub.CallToolStream(pb.CallToolStreamRequest(name=stream_tool, arguments_json=stream_args), timeout=30):
            if msg.HasField("progress"):
                print("progress %g/%g %s" % (msg.progress.progress, msg.progress.total, msg.progress.message))
            else:
                print("stream result", "is_error" if msg.result.is_error else "ok",
                      "".join(c.text.text for c in msg.result.content if c.HasField("text")))

        # Resume from the last revision: only what changed since arrives.
        print("resumed from", revision)
        for ev in stub.WatchCatalog(pb.WatchCatalogRequest(resume_token=revision), timeout=30):
            revision = ev.revision  # always keep the latest as the resume token
            kind = ev.WhichOneof("event")
            if kind == "changes":
                names = ["+" + t.name for t in ev.changes.upserted] + ["-" + n for n in ev.changes.removed]
                print("changes", revision, " ".join(names))
                break
            print(kind, revision)  # synced, progress, or a snapshot (reset: replace all state)

        resources_and_prompts(stub)


def resources_and_prompts(stub):
    """Read the first resource listed and get the first prompt listed
    (required arguments set to "world")."""
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
