"""The Python agent of the benchmark (go run ./tests/bench, phase "python").

One asyncio agent that calls the upstream's echo tool, either through toolsvc
with the toolsvc package (toolsvc.aio) or directly with the official Python
MCP SDK client (mcp 2.x, the initialize handshake, as toolsvc speaks to its
upstreams). The Go driver starts one agent per path and sends it commands on
stdin, one per line, and reads one JSON line per command on stdout:

    seq N        N calls one after another       -> {"lat_ns": [...], "elapsed_ns": T, "cpu_ns": C}
    conc N C     N calls from C concurrent tasks -> the same
    quit

cpu_ns is this process's CPU time over the command (the agent's own cost of
the calls). Every answer is checked; a wrong one ends the agent with an error.

    pyagent.py toolsvc ADDR TOOL
    pyagent.py mcp-http URL TOOL
    pyagent.py mcp-stdio TOOL COMMAND [ARG...]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

Call = Callable[[], Awaitable[None]]


async def toolsvc_path(stack: contextlib.AsyncExitStack, addr: str, tool: str) -> Call:
    import toolsvc.aio

    client = await stack.enter_async_context(toolsvc.aio.Client(addr))
    args = {"text": "hello"}

    async def call() -> None:
        r = await client.call_tool(tool, args)
        if r.is_error or r.text != "hello":
            raise RuntimeError(f"{tool}: unexpected result {r}")

    return call


async def mcp_path(stack: contextlib.AsyncExitStack, server: Any, tool: str) -> Call:
    from mcp import Client

    client = await stack.enter_async_context(Client(server, mode="legacy", cache=None))
    args = {"text": "hello"}

    async def call() -> None:
        r = await client.call_tool(tool, args)
        if r.is_error or len(r.content) != 1 or getattr(r.content[0], "text", None) != "hello":
            raise RuntimeError(f"{tool}: unexpected result {r}")

    return call


async def run_calls(call: Call, n: int, workers: int) -> dict[str, Any]:
    lat: list[int] = []
    left = n

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            t0 = time.perf_counter_ns()
            await call()
            lat.append(time.perf_counter_ns() - t0)

    c0, t0 = time.process_time_ns(), time.perf_counter_ns()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return {"lat_ns": lat, "elapsed_ns": time.perf_counter_ns() - t0, "cpu_ns": time.process_time_ns() - c0}


async def main(argv: list[str]) -> None:
    mode = argv[0]
    async with contextlib.AsyncExitStack() as stack:
        if mode == "toolsvc":
            call = await toolsvc_path(stack, argv[1], argv[2])
        elif mode == "mcp-http":
            call = await mcp_path(stack, argv[1], argv[2])
        elif mode == "mcp-stdio":
            from mcp import StdioServerParameters

            call = await mcp_path(stack, StdioServerParameters(command=argv[2], args=argv[3:]), argv[1])
        else:
            raise SystemExit(f"unknown mode {mode!r}")
        await call()
        print("READY", flush=True)
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            words = line.split()
            if not words or words[0] == "quit":
                return
            if words[0] == "seq":
                out = await run_calls(call, int(words[1]), 1)
            elif words[0] == "conc":
                out = await run_calls(call, int(words[1]), int(words[2]))
            else:
                raise SystemExit(f"unknown command {line!r}")
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
