"""An MCP server written with the official Python SDK (`mcp` 2.x, MCPServer)
whose tools ask their caller mid-call, for toolsvc's interactive-call cells
(tests/interactive_sdks_test.go).

    python ask_server.py stdio
    python ask_server.py streamable-http PORT      (stateful, 127.0.0.1:PORT/mcp)
    python ask_server.py stateless-http PORT       (stateless_http=True)

Tools, the same contract as tests/node/ask_server.mjs:
    ask_name     ctx.elicit(form {name})             -> "hello <name>" | "declined" | "cancelled"
    ask_url      ctx.elicit_url(https://login.example/authorize?sdk=python)
                                                     -> "url <action>"
    ask_sample   ctx.session.create_message("Say hi") -> "model=<text>"
    ask_roots    ctx.session.list_roots()             -> "roots=<uri>,<uri>"
    ask_resolved the SDK's era-portable form (Resolve + Elicit): a
                 server-to-client request on 2025-era sessions, an
                 InputRequiredResult on 2026-07-28 ones -> "hello <name>" | "declined"
    ask_resolved_sample  likewise with Sample("Say hi")  -> "model=<text>"
    ask_resolved_roots   likewise with ListRoots()       -> "roots=<uri>,<uri>"

A failure of the SDK call (the client lacks the capability, the session has no
back channel) is the tool's error result, with the exception's text.
"""

import sys
from typing import Annotated

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp_types import CreateMessageResult, ListRootsResult, SamplingMessage, TextContent
from pydantic import BaseModel, Field


class Name(BaseModel):
    name: str = Field(description="Your name")


mcp = MCPServer("ask-python")


def outcome(res) -> str:
    if isinstance(res, AcceptedElicitation):
        return "hello " + res.data.name
    return res.action + "d"  # "declined", "cancelled"


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the caller's name (form elicitation) and greet them."""
    return outcome(await ctx.elicit("What is your name?", Name))


@mcp.tool()
async def ask_url(ctx: Context) -> str:
    """Send the caller to a URL (URL elicitation)."""
    res = await ctx.elicit_url("Log in, please", "https://login.example/authorize?sdk=python", "el-py-1")
    return "url " + res.action


@mcp.tool()
async def ask_sample(ctx: Context) -> str:
    """Ask the caller's model to say hi (sampling)."""
    res = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text="Say hi"))],
        max_tokens=20,
        related_request_id=ctx.request_id,
    )
    content = res.content[0] if isinstance(res.content, list) else res.content
    return "model=" + getattr(content, "text", repr(content))


@mcp.tool()
async def ask_roots(ctx: Context) -> str:
    """List the caller's roots."""
    # list_roots takes no related request id: over streamable HTTP it goes
    # out on the standalone GET stream, not on the call's response stream.
    res = await ctx.session.list_roots()
    return "roots=" + ",".join(str(r.uri) for r in res.roots)


def ask_for_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@mcp.tool()
async def ask_resolved(answer: Annotated[ElicitationResult[Name], Resolve(ask_for_name)]) -> str:
    """Ask the caller's name through the SDK's resolver (either era)."""
    return outcome(answer)


def sample_hi() -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="Say hi"))], max_tokens=20)


@mcp.tool()
async def ask_resolved_sample(res: Annotated[CreateMessageResult, Resolve(sample_hi)]) -> str:
    """Ask the caller's model to say hi through the SDK's resolver (either era)."""
    content = res.content[0] if isinstance(res.content, list) else res.content
    return "model=" + getattr(content, "text", repr(content))


def roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def ask_resolved_roots(res: Annotated[ListRootsResult, Resolve(roots)]) -> str:
    """List the caller's roots through the SDK's resolver (either era)."""
    return "roots=" + ",".join(str(r.uri) for r in res.roots)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        mcp.run()
        return
    port = int(sys.argv[2])
    if mode == "streamable-http":
        mcp.run(transport="streamable-http", host="127.0.0.1", port=port)
    elif mode == "stateless-http":
        mcp.run(transport="streamable-http", host="127.0.0.1", port=port, stateless_http=True)
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
