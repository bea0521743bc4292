"""The client matrix's cell runner for the Python SDK 2.x client (mcp 2.3.0's
`Client`, over its `ClientSession`), with its defaults (response cache on).

Usage: matrix_client.py URL ERA PREFIX [DISCOVERY_URL TASKS_URL TASKS_PREFIX]   (ERA: 2026-07-28 = mode auto, 2025-11-25 = mode legacy)

DISCOVERY_URL (optional): toolsvc's front door in progressive discovery; the
"discovery" operation searches there (search_tools) and calls what it found
through call_tool. Without it (the direct run: the upstream has no search) the
operation calls the tool by name, the same answer a client gets without discovery.
TASKS_URL, TASKS_PREFIX: the task server (tests/node/tasks_server.mjs) and its
tool slow's prefix, for the "tasks" operation.

Runs every operation of the client matrix (tests/matrix_clients_test.go) against
URL, the go-sdk test server directly (PREFIX "") or through toolsvc's front door
(PREFIX "t__": its tools and prompts are named "t__<name>"), each on its own so
that one failure does not hide the others, and prints one JSON object
{"protocol": ..., "ops": {op: {"value": ...} or {"error": "..."}}}. The Go test
judges the values.
"""

import json
import sys
import traceback

import anyio
import mcp_types as types
from mcp.client.client import Client


def text_of(content):
    return "".join(c.text for c in content if getattr(c, "type", "") == "text")


async def main():
    url, era, prefix = sys.argv[1:4]
    discovery_url = sys.argv[4] if len(sys.argv) > 4 else ""
    tasks_url, tasks_prefix = (sys.argv[5:7] + ["", ""])[:2]
    mode = era if era == "2026-07-28" else "legacy"
    ops, logs, progress = {}, [], []

    async def on_elicit(context, params):
        if getattr(params, "mode", None) == "url":  # ask_url: the user "visits" the URL
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_sample(context, params):
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hi there"), model="matrix-model"
        )

    async def on_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///matrix", name="matrix")])

    async def on_log(params):
        logs.append(params.data)

    async with Client(
        url,
        mode=mode,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        list_roots_callback=on_roots,
        logging_callback=on_log,
        log_level="debug",
    ) as client:

        async def run(op, fn):
            try:
                ops[op] = {"value": await fn()}
            except BaseException as exc:  # one operation's failure is its cell's
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                ops[op] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
                traceback.print_exc(file=sys.stderr)

        async def list_tools():
            names, cursor = [], None
            while True:
                res = await client.list_tools(cursor=cursor)
                names += [t.name for t in res.tools]
                cursor = res.next_cursor
                if not cursor:
                    return sorted(names)

        async def call(name, args=None, **kw):
            res = await client.call_tool(prefix + name, args or {}, **kw)
            return ("error: " if res.is_error else "") + text_of(res.content)

        async def with_progress():
            async def on_progress(p, total, message):
                progress.append(p)

            await call("progress", {"steps": 2, "step_ms": 100}, progress_callback=on_progress)
            return len(progress)

        async def discover():
            if not discovery_url:
                return prefix + "echo:" + await call("echo", {"text": "matrix"})
            async with Client(discovery_url, mode=mode) as dc:
                res = await dc.call_tool("search_tools", {"query": "echo", "limit": 1})
                found = json.loads(text_of(res.content))["tools"][0]["name"]
                res = await dc.call_tool("call_tool", {"name": found, "arguments": {"text": "matrix"}})
                return found + ":" + ("error: " if res.is_error else "") + text_of(res.content)

        async def as_task():
            # The task call of the client matrix: mcp 2.3.0's Client has no task
            # API (tasks left the SDK's core in 2.x; the 2026-07-28 extension is
            # fastmcp-tasks', not in this venv), so this raises AttributeError
            # both directly and through toolsvc: a client limit.
            created = await client.session.experimental.call_tool_as_task(tasks_prefix + "slow", {"ms": 50})
            return f"task:{created}"

        async def logging():
            if client.protocol_version != "2026-07-28":  # 2026-07-28: the per-request log level
                await client.set_logging_level("debug")
            await call("log_levels", {"tag": "matrix"})
            return [d.get("tag") for d in logs if isinstance(d, dict)]

        async def subscribe():
            if client.protocol_version != "2026-07-28":
                await client.subscribe_resource("test://hello")
                await client.unsubscribe_resource("test://hello")
                return "subscribed"
            async with client.listen(resource_subscriptions=["test://hello"]) as sub:
                return "listening" if "test://hello" in str(sub.honored) else f"not honored: {sub.honored}"

        async def read():
            res = await client.read_resource("test://hello")
            return "".join(getattr(c, "text", "") for c in res.contents)

        async def prompt_get():
            res = await client.get_prompt(prefix + "hi")
            return "".join(getattr(m.content, "text", "") for m in res.messages)

        async def complete():
            res = await client.complete(
                types.PromptReference(type="ref/prompt", name=prefix + "trip"),
                {"name": "city", "value": "Ber"},
            )
            return sorted(res.completion.values)

        await run("list", list_tools)
        await run("call", lambda: call("echo", {"text": "matrix"}))
        await run("progress", with_progress)
        await run("elicitation", lambda: call("ask_name"))
        await run("elicitation/url", lambda: call("ask_url"))
        await run("sampling", lambda: call("ask_model"))
        await run("roots", lambda: call("ask_roots"))
        await run("logging", logging)
        await run("resources/list", lambda: _uris(client.list_resources(), "resources", "uri"))
        await run("resources/read", read)
        await run("resources/templates", lambda: _uris(client.list_resource_templates(), "resource_templates", "uri_template"))
        await run("resources/subscribe", subscribe)
        await run("prompts/list", lambda: _uris(client.list_prompts(), "prompts", "name"))
        await run("prompts/get", prompt_get)
        await run("completion", complete)
        await run("discovery", discover)
        await run("tasks", as_task)
        protocol = client.protocol_version
    print(json.dumps({"protocol": protocol, "ops": ops}), flush=True)


async def _uris(aw, field, key):
    res = await aw
    return sorted(getattr(x, key) for x in getattr(res, field))


anyio.run(main)
