"""The Python SDK's client (mcp 2.x) against toolsvc's MCP front door.

Usage: front_client.py URL MODE TAG   (MODE: auto = 2026-07-28 stateless, legacy = 2025-11-25 session)

Lists every tool (paging), calls h__echo, calls s__progress with a progress callback, cancels
s__wait_cancel after 300 ms (id fd-py-TAG), asks h__add_tool to add py_TAG and waits for
tools/list_changed (legacy: on the session stream; auto: on a subscriptions/listen stream), lists
again, and prints one JSON object with what it saw. The Go test (tests/mcpfront_clients_test.go)
checks it against ListTools and the upstream's cancel record.
"""

import json
import sys

import anyio
import mcp_types as types
from mcp.client.client import Client


async def list_names(client):
    names, cursor = [], None
    while True:
        res = await client.list_tools(cursor=cursor, cache_mode="refresh")
        names += [t.name for t in res.tools]
        cursor = res.next_cursor
        if not cursor:
            return sorted(names)


async def main():
    url, mode, tag = sys.argv[1:4]
    out = {"mode": mode}
    changed = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with Client(url, mode=mode, message_handler=on_message, cache=None) as client:
        out["protocol"] = client.protocol_version
        out["names"] = await list_names(client)

        res = await client.call_tool("h__echo", {"text": "py " + tag})
        out["echo"] = "".join(c.text for c in res.content if getattr(c, "type", "") == "text")

        progress = []

        async def on_progress(p, total, message):
            progress.append(p)

        res = await client.call_tool("s__progress", {"steps": 3, "step_ms": 100}, progress_callback=on_progress)
        out["progress_result"] = "".join(c.text for c in res.content if getattr(c, "type", "") == "text")
        out["progress"] = progress

        res = await client.call_tool("h__echo", {"text": 5})
        out["bad_args_is_error"] = bool(res.is_error)
        out["bad_args_text"] = "".join(c.text for c in res.content if getattr(c, "type", "") == "text")

        with anyio.move_on_after(0.3) as scope:
            await client.call_tool("s__wait_cancel", {"id": "fd-py-" + tag, "ms": 30000})
        out["cancelled"] = scope.cancelled_caught

        added = "py_" + tag
        if mode == "legacy":
            await client.call_tool("h__add_tool", {"name": added})
            with anyio.move_on_after(15):
                await changed.wait()
            out["list_changed"] = changed.is_set()
        else:
            async with client.listen(tools_list_changed=True) as sub:
                await client.call_tool("h__add_tool", {"name": added})
                with anyio.move_on_after(15):
                    async for _event in sub:
                        out["list_changed"] = True
                        break
            out.setdefault("list_changed", False)
        out["names_after"] = await list_names(client)
    print(json.dumps(out))


anyio.run(main)
