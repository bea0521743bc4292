"""Streamable-http MCP server that grows a tool at runtime (#839 repro)."""
import sys

from mcp.server.fastmcp import Context, FastMCP

port = int(sys.argv[1])
mcp = FastMCP("push-victim", host="127.0.0.1", port=port)


@mcp.tool()
def ping_me(x: int) -> int:
    """Return x + 1."""
    return x + 1


def extra_tool(y: int) -> int:
    """Return y * 2."""
    return y * 2


@mcp.tool()
async def register_extra(ctx: Context) -> str:
    """Register extra_tool, then push tools/list_changed on this session."""
    mcp.add_tool(extra_tool)
    await ctx.session.send_tool_list_changed()
    return "registered"


if __name__ == "__main__":
    mcp.run(transport="streamable-http")
