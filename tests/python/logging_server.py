"""An MCP server written with the official Python SDK (`mcp` 2.x, MCPServer)
whose tool logs during the call, for toolsvc's log relay tests
(tests/call_logs_test.go).

    python logging_server.py stdio
    python logging_server.py streamable-http PORT   (127.0.0.1:PORT/mcp)

Tools:
    chatty{tag}   logs "<tag> debug", "<tag> info", "<tag> warning" and
                  "<tag> error" (ctx.debug/info/warning/error, logger
                  "chatty"), then returns "chatty <tag>"
"""

import sys

from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("logging-python")


@mcp.tool()
async def chatty(tag: str, ctx: Context) -> str:
    """Log one message at debug, info, warning and error, then return."""
    await ctx.debug(f"{tag} debug", logger_name="chatty")
    await ctx.info(f"{tag} info", logger_name="chatty")
    await ctx.warning(f"{tag} warning", logger_name="chatty")
    await ctx.error(f"{tag} error", logger_name="chatty")
    return f"chatty {tag}"


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        mcp.run()
        return
    port = int(sys.argv[2])
    if mode == "streamable-http":
        mcp.run(transport="streamable-http", host="127.0.0.1", port=port)
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
