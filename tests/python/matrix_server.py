"""An MCP server written with the official Python SDK (`mcp` 2.x, MCPServer),
for toolsvc's upstream interop matrix (tests/matrix_test.go).

    python matrix_server.py stdio
    python matrix_server.py streamable-http PORT      (stateful, 127.0.0.1:PORT/mcp)
    python matrix_server.py stateless-http PORT       (stateless_http=True)
    python matrix_server.py sse PORT                  (legacy HTTP+SSE, 127.0.0.1:PORT/sse)

Tools, the same contract as the Go and TypeScript matrix servers:
    echo{text}             returns text
    add_tool{name}         registers `name` (answers "<name> ok") and announces
                           tools/list_changed on every channel this SDK has
    wait_cancel{id, ms}    waits ms milliseconds or until the call is cancelled

With $MATRIX_DIR set, wait_cancel records each call in side files there:
<id>.started, then <id>.cancelled or <id>.finished, each holding
"<pid> <unix nanos>", written atomically. The test reads them directly, so
they also tell it which process to kill and survive that process.
"""

import os
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer


def record(call_id: str, event: str) -> None:
    directory = os.environ.get("MATRIX_DIR")
    if not directory or not call_id or "/" in call_id:
        return
    final = os.path.join(directory, f"{call_id}.{event}")
    with open(final + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {time.time_ns()}\n")
    os.replace(final + ".tmp", final)


mcp = MCPServer("matrix-python")


@mcp.tool()
def echo(text: str) -> str:
    """Return text."""
    return text


@mcp.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Register a tool named name that answers "<name> ok", and announce it."""

    def added() -> str:
        return f"{name} ok"

    mcp.add_tool(added, name=name, description="Added at runtime.")
    # 2026-07-28 sessions hear it on subscriptions/listen; older sessions on
    # the session itself. Each call is a no-op where it does not apply.
    await ctx.notify_tools_changed()
    try:
        await ctx.session.send_tool_list_changed()
    except Exception as exc:  # a modern (2026-07-28) exchange has no session channel
        print(f"send_tool_list_changed: {exc!r}", file=sys.stderr)
    return f"added {name}"


@mcp.tool()
async def wait_cancel(id: str, ms: int) -> str:
    """Wait ms milliseconds or until cancelled; record which (see $MATRIX_DIR)."""
    record(id, "started")
    try:
        await anyio.sleep(ms / 1000)
    except anyio.get_cancelled_exc_class():
        record(id, "cancelled")
        raise
    record(id, "finished")
    return "finished"


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
    elif mode == "sse":
        mcp.run(transport="sse", host="127.0.0.1", port=port)
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
