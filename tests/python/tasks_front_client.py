"""The FastMCP client with fastmcp-tasks' client extension (the 2026-07-28
io.modelcontextprotocol/tasks extension) against toolsvc's MCP front door
(tests/mcpfront_tasks_test.go).

Usage: tasks_front_client.py URL TOKEN TOOL...   (each TOOL takes {ms, fail})

For each TOOL: call_tool_task (the explicit handle: its taskId, status, then
result), call_tool (the client polls the task transparently), a failing call,
and a long task cancelled through the handle. A TOOL written ask:NAME asks for
a name: one call_tool, the client's elicitation handler answering "Py" (sent
back with tasks/update). Prints one JSON object.
"""

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp_tasks.client import call_tool_task


def text(res):
    return "".join(getattr(c, "text", "") for c in (res.content or []))


async def main():
    url, token, *tools = sys.argv[1:]
    out = {"calls": {}, "asked": []}

    async def on_elicit(message, response_type, params, context):
        out["asked"].append(message)
        return {"name": "Py"}

    transport = StreamableHttpTransport(url, headers={"Authorization": f"Bearer {token}"})
    async with Client(transport, elicitation_handler=on_elicit) as client:
        for name in tools:
            c = {}
            if name.startswith("ask:"):
                try:
                    c["result"] = text(await client.call_tool(name[4:], {}))
                except Exception as e:  # noqa: BLE001
                    c["error"] = f"{type(e).__name__}: {e}"
                out["calls"][name] = c
                continue
            try:
                task = await call_tool_task(client, name, {"ms": 300})
                c["taskId"] = task.task_id
                c["created"] = task.create_result.status
                res = await task.result()
                c["result"] = text(res)
                c["status"] = (await task.status()).status
                c["transparent"] = text(await client.call_tool(name, {"ms": 100}))
                try:
                    failed = await client.call_tool(name, {"ms": 50, "fail": True})
                    c["fail"] = "no error: " + text(failed)
                except Exception as e:  # noqa: BLE001 - the report carries it
                    c["fail"] = f"{type(e).__name__}: {e}"
                long = await call_tool_task(client, name, {"ms": 30000})
                await long.cancel()
                c["cancelled"] = (await long.status()).status
            except Exception as e:  # noqa: BLE001
                c["error"] = f"{type(e).__name__}: {e}"
            out["calls"][name] = c
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
