"""The Python SDK's client (mcp 2.x), declaring elicitation (form and URL),
sampling and roots with callbacks, calling tools that ask through toolsvc's
MCP front door (tests/interactive_sdks_test.go).

Usage: ask_front_client.py URL MODE TOOL...   (MODE: legacy = 2025-11-25 session, auto = 2026-07-28)

Answers: a form with {name: "Front"}, a URL with accept, sampling with "hi
there", roots with file:///front. Prints one JSON object: the protocol, what it
was asked ("elicitation", "elicitation_url", "sampling", "roots", in order),
and each tool's result text (an error as "error: ...").
"""

import json
import sys

import anyio
import mcp_types as types
from mcp.client.client import Client


async def main():
    url, mode, *tools = sys.argv[1:]
    out = {"mode": mode, "asked": [], "results": {}}

    async def on_elicit(context, params):
        if getattr(params, "mode", None) == "url":
            out["asked"].append("elicitation_url")
            return types.ElicitResult(action="accept")
        out["asked"].append("elicitation")
        return types.ElicitResult(action="accept", content={"name": "Front"})

    async def on_sample(context, params):
        out["asked"].append("sampling")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hi there"), model="front-model"
        )

    async def on_roots(context):
        out["asked"].append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///front", name="front")])

    async with Client(
        url,
        mode=mode,
        cache=None,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        list_roots_callback=on_roots,
    ) as client:
        out["protocol"] = client.protocol_version
        for name in tools:
            try:
                res = await client.call_tool(name, {})
                text = "".join(c.text for c in res.content if getattr(c, "type", "") == "text")
                out["results"][name] = ("error: " + text) if res.is_error else text
            except Exception as exc:  # an MCP error: reported, not fatal
                out["results"][name] = f"error: {exc}"
    print(json.dumps(out), flush=True)


anyio.run(main)
