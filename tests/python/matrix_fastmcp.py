"""The client matrix's cell runner for fastmcp's `Client` (fastmcp 4.1.6, on the
Python SDK 2.x), with its defaults.

Usage: matrix_fastmcp.py URL ERA PREFIX [DISCOVERY_URL TASKS_URL TASKS_PREFIX]   (ERA: 2026-07-28 = mode "auto", fastmcp's
default; 2025-11-25 = mode "legacy")

The same operations, answers and report as matrix_client.py (tests/matrix_clients_test.go
judges them; DISCOVERY_URL, TASKS_URL, TASKS_PREFIX: as there). fastmcp's Client has no resource subscription of its own: that cell uses
the Python SDK session under it (client.session), as a fastmcp user would.
"""

import json
import sys
import traceback

import anyio
import mcp_types as types
from fastmcp import Client
from mcp.client.subscriptions import listen


def text_of(content):
    return "".join(c.text for c in content if getattr(c, "type", "") == "text")


async def main():
    url, era, prefix = sys.argv[1:4]
    discovery_url = sys.argv[4] if len(sys.argv) > 4 else ""
    tasks_url, tasks_prefix = (sys.argv[5:7] + ["", ""])[:2]
    mode = "auto" if era == "2026-07-28" else "legacy"
    ops, logs, progress = {}, [], []

    async def on_elicit(message, response_type, params, context):
        if getattr(params, "mode", None) == "url":  # ask_url: the user "visits" the URL
            return types.ElicitResult(action="accept")
        return {"name": "Ada"}

    async def on_sample(messages, params, context):
        return "hi there"

    async def on_log(message):
        logs.append(message.data)

    async with Client(
        url,
        mode=mode,
        elicitation_handler=on_elicit,
        sampling_handler=on_sample,
        roots=["file:///matrix"],
        log_handler=on_log,
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
            return sorted(t.name for t in await client.list_tools())

        async def call(name, args=None, **kw):
            res = await client.call_tool(prefix + name, args or {}, raise_on_error=False, **kw)
            return ("error: " if res.is_error else "") + text_of(res.content)

        async def as_task():
            # The task call of the client matrix. With fastmcp-tasks installed (.venv/tasks: the
            # fastmcp-tasks cell), its client extension runs the 2026-07-28 task. Without it
            # (.venv/fastmcp), fastmcp's Client (on mcp 2.3.0) has no task API (tasks left the
            # SDK's core in 2.x), so this raises AttributeError both directly and through
            # toolsvc: a client limit.
            try:
                from fastmcp_tasks.client import call_tool_task
            except ImportError:
                created = await client.session.experimental.call_tool_as_task(tasks_prefix + "slow", {"ms": 50})
                return f"task:{created}"
            async with Client(tasks_url, mode=mode) as tc:
                task = await call_tool_task(tc, tasks_prefix + "slow", {"ms": 50})
                res = await task.result()
                return "task:" + ("error: " if res.is_error else "") + text_of(res.content)

        async def discover():
            if not discovery_url:
                return prefix + "echo:" + await call("echo", {"text": "matrix"})
            async with Client(discovery_url, mode=mode) as dc:
                res = await dc.call_tool("search_tools", {"query": "echo", "limit": 1}, raise_on_error=False)
                found = json.loads(text_of(res.content))["tools"][0]["name"]
                res = await dc.call_tool("call_tool", {"name": found, "arguments": {"text": "matrix"}}, raise_on_error=False)
                return found + ":" + ("error: " if res.is_error else "") + text_of(res.content)

        async def with_progress():
            async def on_progress(p, total, message):
                progress.append(p)

            await call("progress", {"steps": 2, "step_ms": 100}, progress_handler=on_progress)
            return len(progress)

        async def logging():
            if client.protocol_version != "2026-07-28":  # 2026-07-28: the per-request log level
                await client.set_logging_level("debug")
            await call("log_levels", {"tag": "matrix"})
            return [d.get("tag") for d in logs if isinstance(d, dict)]

        async def subscribe():
            if client.protocol_version != "2026-07-28":
                await client.session.subscribe_resource("test://hello")
                await client.session.unsubscribe_resource("test://hello")
                return "subscribed"
            async with listen(client.session, resource_subscriptions=["test://hello"]) as sub:
                return "listening" if "test://hello" in str(sub.honored) else f"not honored: {sub.honored}"

        async def read():
            return "".join(getattr(c, "text", "") for c in await client.read_resource("test://hello"))

        async def prompt_get():
            res = await client.get_prompt(prefix + "hi")
            return "".join(getattr(m.content, "text", "") for m in res.messages)

        async def complete():
            res = await client.complete(
                types.PromptReference(type="ref/prompt", name=prefix + "trip"), {"name": "city", "value": "Ber"}
            )
            return sorted(res.values)

        await run("list", list_tools)
        await run("call", lambda: call("echo", {"text": "matrix"}))
        await run("progress", with_progress)
        await run("elicitation", lambda: call("ask_name"))
        await run("elicitation/url", lambda: call("ask_url"))
        await run("sampling", lambda: call("ask_model"))
        await run("roots", lambda: call("ask_roots"))
        await run("logging", logging)
        await run("resources/list", lambda: _names(client.list_resources(), "uri"))
        await run("resources/read", read)
        await run("resources/templates", lambda: _names(client.list_resource_templates(), "uri_template"))
        await run("resources/subscribe", subscribe)
        await run("prompts/list", lambda: _names(client.list_prompts(), "name"))
        await run("prompts/get", prompt_get)
        await run("completion", complete)
        await run("discovery", discover)
        await run("tasks", as_task)
        protocol = client.protocol_version
    print(json.dumps({"protocol": protocol, "ops": ops}), flush=True)


async def _names(aw, key):
    return sorted(str(getattr(x, key)) for x in await aw)


anyio.run(main)
