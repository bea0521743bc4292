"""An MCP server written with the official Python SDK (`mcp` 2.x, MCPServer)
offering resources, a resource template and prompts, for toolsvc's resource
and prompt tests (tests/resources_test.go).

    python resources_server.py stdio
    python resources_server.py streamable-http PORT   (127.0.0.1:PORT/mcp)

Resources:
    py://note            text/plain; set_note changes it and announces
                         resources/updated for it
    py://blob            application/octet-stream: every byte value 0..255,
                         then b"\\x00\\xff" (a byte-exactness check)
    py://items/{id}      template: "item <id>"
Prompts:
    greet{name (required), style}   "Hello, <name>! (<style>)"
Completions:
    greet's style        plain, warm, formal (by prefix)
    py://items/{id}'s id 1, 2, 3 (by prefix; total 3)
Tools:
    set_note{text}       as above
    add_prompt{name}     registers prompt `name` ("<name> prompt") and
                         announces prompts/list_changed on every channel
    add_resource{name}   registers py://extra/<name> ("<name> resource") and
                         announces resources/list_changed on every channel
"""

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.resources.types import TextResource
from mcp.types import Completion, PromptReference, ResourceTemplateReference

BLOB = bytes(range(256)) + b"\x00\xff"
state = {"note": "first note"}

mcp = MCPServer("resources-python")


@mcp.resource("py://note", name="note", mime_type="text/plain", description="A note set_note changes.")
def note() -> str:
    return state["note"]


@mcp.resource("py://blob", name="blob", mime_type="application/octet-stream")
def blob() -> bytes:
    return BLOB


@mcp.resource("py://items/{id}", name="item", mime_type="text/plain")
def item(id: str) -> str:
    return f"item {id}"


@mcp.prompt()
def greet(name: str, style: str = "plain") -> str:
    """Greet someone."""
    return f"Hello, {name}! ({style})"


@mcp.completion()
async def complete(ref, argument, context) -> Completion | None:
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "style":
        return Completion(values=[s for s in ("plain", "warm", "formal") if s.startswith(argument.value)])
    if isinstance(ref, ResourceTemplateReference) and ref.uri == "py://items/{id}" and argument.name == "id":
        return Completion(values=[i for i in ("1", "2", "3") if i.startswith(argument.value)], total=3)
    return None


async def announce(ctx: Context, modern, legacy) -> None:
    # 2026-07-28 sessions hear it on subscriptions/listen; older sessions on
    # the session itself. Each is a no-op (or fails) where it does not apply.
    await modern()
    try:
        await legacy()
    except Exception as exc:
        print(f"legacy notification: {exc!r}", file=sys.stderr)


@mcp.tool()
async def set_note(text: str, ctx: Context) -> str:
    """Change py://note and announce it."""
    state["note"] = text
    await announce(ctx, lambda: ctx.notify_resource_updated("py://note"),
                   lambda: ctx.session.send_resource_updated("py://note"))
    return "ok"


@mcp.tool()
async def add_prompt(name: str, ctx: Context) -> str:
    """Register a prompt named name and announce it."""

    def added() -> str:
        return f"{name} prompt"

    mcp.add_prompt(Prompt.from_function(added, name=name, description="Added at runtime."))
    await announce(ctx, ctx.notify_prompts_changed, ctx.session.send_prompt_list_changed)
    return f"added {name}"


@mcp.tool()
async def add_resource(name: str, ctx: Context) -> str:
    """Register the resource py://extra/<name> and announce it."""
    mcp.add_resource(TextResource(uri=f"py://extra/{name}", name=name, text=f"{name} resource"))
    await announce(ctx, ctx.notify_resources_changed, ctx.session.send_resource_list_changed)
    return f"added py://extra/{name}"


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        mcp.run()
    elif mode == "streamable-http":
        mcp.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
