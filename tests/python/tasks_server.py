"""An MCP server whose tools run as 2026-07-28 tasks (the
io.modelcontextprotocol/tasks extension, served by fastmcp-tasks on the
official Python SDK 2.3), for the bridge's task tests
(mcpbridge/tasks_test.go). Its venv is .venv/tasks (scripts/python/tasks.txt).

    python tasks_server.py PORT     streamable HTTP at 127.0.0.1:PORT/mcp

The extension is offered at 2026-07-28 only (server/discover advertises
capabilities.extensions["io.modelcontextprotocol/tasks"]); tasks live in an
in-memory Docket (memory://), scoped by the caller's principal, not by a
session, so any connection can poll them.

Tools:
    slow{ms, fail}   mode "optional": a task when the request opts in
                     (poll interval 100 ms), else a plain result; completes
                     with "slept <ms>"; fail raises ValueError("boom")
    ask{}            mode "required": input_required with one elicitation
                     (tasks/get shows inputRequests; tasks/update answers),
                     then "hello <name>"
    echo{text}       no task configuration: a plain tool
"""

import asyncio
import sys
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("tasks-py")
mcp.add_extension(TasksExtension(url="memory://"))

POLL = timedelta(milliseconds=100)


@mcp.tool(task=TaskConfig(mode="optional", poll_interval=POLL))
async def slow(ms: int = 500, fail: bool = False) -> str:
    await asyncio.sleep(ms / 1000)
    if fail:
        raise ValueError("boom")
    return f"slept {ms}"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def ask(ctx: Context) -> str:
    # ctx.elicit() is refused inside a task: the tool answers input_required
    # and is run again with the caller's answers.
    answers = ctx.input_responses or {}
    if "name" not in answers:
        return mcp_types.InputRequiredResult(input_requests={"name": mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message="Your name?", requested_schema={
                "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))})
    return f"hello {answers['name'].content['name']}"


@mcp.tool
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)
