"""The client matrix's cell runner for the Python SDK 1.x client (mcp 1.30.0's
`ClientSession` over `streamable_http_client`): 2025-11-25 only, the last era it
speaks.

Usage: matrix_client_v1.py URL ERA PREFIX [DISCOVERY_URL TASKS_URL TASKS_PREFIX]   (ERA: 2025-11-25)

The same operations, answers and report as matrix_client.py (tests/matrix_clients_test.go
judges them; DISCOVERY_URL, TASKS_URL, TASKS_PREFIX: as there). The task call uses
mcp 1.x's experimental tasks API (2025-11-25 tasks; deprecated, gone in 2.x).
"""

import json
import sys
import traceback

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def text_of(content):
    return "".join(c.text for c in content if getattr(c, "type", "") == "text")


async def main():
    url, era, prefix = sys.argv[1:4]
    discovery_url = sys.argv[4] if len(sys.argv) > 4 else ""
    tasks_url, tasks_prefix = (sys.argv[5:7] + ["", ""])[:2]
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

    async with streamable_http_client(url) as (read, write, _):
        async with ClientSession(
            read,
            write,
            sampling_callback=on_sample,
            elicitation_callback=on_elicit,
            list_roots_callback=on_roots,
            logging_callback=on_log,
        ) as session:
            init = await session.initialize()

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
                    res = await session.list_tools(cursor=cursor)
                    names += [t.name for t in res.tools]
                    cursor = res.nextCursor
                    if not cursor:
                        return sorted(names)

            async def call(name, args=None, **kw):
                res = await session.call_tool(prefix + name, args or {}, **kw)
                return ("error: " if res.isError else "") + text_of(res.content)

            async def as_task():
                async with streamable_http_client(tasks_url) as (tr, tw, _):
                    async with ClientSession(tr, tw) as tc:
                        await tc.initialize()
                        created = await tc.experimental.call_tool_as_task(tasks_prefix + "slow", {"ms": 50})
                        async for _status in tc.experimental.poll_task(created.task.taskId):
                            pass
                        res = await tc.experimental.get_task_result(created.task.taskId, types.CallToolResult)
                        return "task:" + ("error: " if res.isError else "") + text_of(res.content)

            async def discover():
                if not discovery_url:
                    return prefix + "echo:" + await call("echo", {"text": "matrix"})
                async with streamable_http_client(discovery_url) as (dr, dw, _):
                    async with ClientSession(dr, dw) as dc:
                        await dc.initialize()
                        res = await dc.call_tool("search_tools", {"query": "echo", "limit": 1})
                        found = json.loads(text_of(res.content))["tools"][0]["name"]
                        res = await dc.call_tool("call_tool", {"name": found, "arguments": {"text": "matrix"}})
                        return found + ":" + ("error: " if res.isError else "") + text_of(res.content)

            async def with_progress():
                async def on_progress(p, total, message):
                    progress.append(p)

                await call("progress", {"steps": 2, "step_ms": 100}, progress_callback=on_progress)
                return len(progress)

            async def logging():
                await session.set_logging_level("debug")
                await call("log_levels", {"tag": "matrix"})
                return [d.get("tag") for d in logs if isinstance(d, dict)]

            async def subscribe():
                await session.subscribe_resource("test://hello")
                await session.unsubscribe_resource("test://hello")
                return "subscribed"

            async def read_one():
                res = await session.read_resource("test://hello")
                return "".join(getattr(c, "text", "") for c in res.contents)

            async def prompt_get():
                res = await session.get_prompt(prefix + "hi")
                return "".join(getattr(m.content, "text", "") for m in res.messages)

            async def complete():
                res = await session.complete(
                    types.PromptReference(type="ref/prompt", name=prefix + "trip"), {"name": "city", "value": "Ber"}
                )
                return sorted(res.completion.values)

            async def names(aw, field, key):
                res = await aw
                return sorted(str(getattr(x, key)) for x in getattr(res, field))

            await run("list", list_tools)
            await run("call", lambda: call("echo", {"text": "matrix"}))
            await run("progress", with_progress)
            await run("elicitation", lambda: call("ask_name"))
            await run("elicitation/url", lambda: call("ask_url"))
            await run("sampling", lambda: call("ask_model"))
            await run("roots", lambda: call("ask_roots"))
            await run("logging", logging)
            await run("resources/list", lambda: names(session.list_resources(), "resources", "uri"))
            await run("resources/read", read_one)
            await run("resources/templates", lambda: names(session.list_resource_templates(), "resourceTemplates", "uriTemplate"))
            await run("resources/subscribe", subscribe)
            await run("prompts/list", lambda: names(session.list_prompts(), "prompts", "name"))
            await run("prompts/get", prompt_get)
            await run("completion", complete)
            await run("discovery", discover)
            await run("tasks", as_task)
    print(json.dumps({"protocol": init.protocolVersion, "ops": ops}), flush=True)


anyio.run(main)
