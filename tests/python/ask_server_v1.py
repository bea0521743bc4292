"""A FastMCP server of the Python SDK 1.x (mcp 1.30.0, .venv/mcp1) over stdio
that asks its caller mid-call, for toolsvc's tests of parked requests
(tests/parked_test.go).

ask_name elicits a name (elicitation/create, parked by toolsvc: 1.x speaks
2025-11-25) and returns "hello NAME" or the action; every answer is recorded.
wait_answered waits until n ask_name calls have been answered and returns
"answered: " and their actions: a call of another principal in flight on the
same session while toolsvc ends a parked one.

mcp 1.x answers a request twice when the answer to its elicitation and the
cancellation of the call arrive together, and the server exits
(python-sdk#2416): toolsvc must not send them together.
"""

import anyio
from pydantic import BaseModel

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("ask-v1")
answers: list[str] = []


class Name(BaseModel):
    name: str


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the caller's name and greet them."""
    try:
        res = await ctx.elicit("What is your name?", schema=Name)
    except Exception:
        answers.append("error")
        raise
    answers.append(res.action)
    if res.action == "accept":
        return f"hello {res.data.name}"
    return res.action


@server.tool()
async def wait_answered(n: int) -> str:
    """Wait until n ask_name calls were answered; return their answers."""
    while len(answers) < n:
        await anyio.sleep(0.02)
    return "answered: " + ",".join(answers)


if __name__ == "__main__":
    server.run("stdio")
