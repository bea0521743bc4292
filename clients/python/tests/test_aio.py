"""toolsvc.aio against a live toolsvc: the same API on grpc.aio."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

import toolsvc
import toolsvc.aio
from conftest import Toolsvc, demo_server


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_aio_calls(server: Toolsvc) -> None:
    async def main() -> None:
        async with toolsvc.aio.Client(server.addr) as c:
            tools = await c.list_tools(page_size=3)
            assert {"demo__add", "rt__sleep"} <= {t.name for t in tools} and len(tools.revision) == 32
            r = await c.call_tool("demo__add", {"a": 2, "b": 40})
            assert r.structured_content == {"sum": 42} and not r.is_error
            # 32 concurrent calls on one channel.
            rs = await asyncio.gather(*(c.call_tool("demo__echo", {"text": f"m{i}"}) for i in range(32)))
            assert [x.text for x in rs] == [f"m{i}" for i in range(32)]
            msgs = [m async for m in c.call_tool_stream("rt__sleep", {"ms": 400}, timeout=20)]
            steps = [m.progress for m in msgs if isinstance(m, toolsvc.Progress)]
            assert steps in ([1, 2, 3], [1, 2, 3, 4]), steps  # the 4th races the result
            assert isinstance(msgs[-1], toolsvc.CallResult) and msgs[-1].text.startswith("slept ")
            servers = await c.list_servers()
            assert [s.name for s in servers] == ["demo", "rt"]
            with pytest.raises(toolsvc.ToolsvcError) as ei:
                await c.call_tool("demo__add", {"a": "x"})
            assert ei.value.reason == "ARGUMENTS_INVALID"
            assert [v.field for v in ei.value.field_violations] == ["arguments.a"]  # as given: a dict
            with pytest.raises(toolsvc.ToolsvcError) as ei:
                await c.call_tool("demo__sleep", {"ms": 5000}, timeout=0.2)
            assert ei.value.code == grpc.StatusCode.DEADLINE_EXCEEDED

    run(main())


def test_aio_search_tools(server: Toolsvc) -> None:
    async def main() -> None:
        async with toolsvc.aio.Client(server.addr) as c:
            found = await c.search_tools("sleep", servers=["rt"])
            assert found[0].name == "rt__sleep" and all(t.server == "rt" for t in found) and found.revision

    run(main())


def test_aio_watch(server: Toolsvc) -> None:
    async def main() -> None:
        async with toolsvc.aio.Client(server.addr) as c:
            async with c.watch() as w:
                assert await w.wait_ready(30)
                first = await w.get(5)
                assert first is not None and first.kind == toolsvc.EventKind.SNAPSHOT
                assert set(w.catalog) == {t.name for t in await c.list_tools()}
                await c.call_tool("rt__add_tool", {"name": "py_aio"})
                async for ev in w:
                    if ev.kind == toolsvc.EventKind.CHANGES:
                        assert [t.name for t in ev.upserted] == ["rt__py_aio"]
                        break
                assert "rt__py_aio" in w.catalog
                await c.call_tool("rt__remove_tool", {"name": "py_aio"})
                async for ev in w:
                    if ev.kind == toolsvc.EventKind.CHANGES:
                        assert ev.removed == ("rt__py_aio",)
                        break
                assert "rt__py_aio" not in w.catalog
            assert await w.get(1) is None

    run(main())


def test_aio_watch_resumes_on_another_replica(start_toolsvc: Any, toolsvc_bin: str) -> None:
    cfg = {"mcpServers": {"demo": demo_server(toolsvc_bin)}}
    a, b = start_toolsvc(cfg), start_toolsvc(cfg)

    async def main() -> None:
        async with toolsvc.aio.Client(f"ipv4:{a.addr},{b.addr}") as c:
            async with c.watch(min_backoff=0.05) as w:
                snap = await w.get(30)
                assert snap is not None and snap.kind == toolsvc.EventKind.SNAPSHOT
                await asyncio.to_thread(a.stop)
                ev = await w.get(30)
                assert ev is not None
                assert (ev.kind, ev.resumed, ev.revision) == (toolsvc.EventKind.SYNCED, True, snap.revision)
                assert w.streams >= 2

    run(main())


def test_aio_watch_rejected(server: Toolsvc) -> None:
    async def main() -> None:
        async with toolsvc.aio.Client(server.addr) as c:
            w = c.watch(servers=["a__b"])
            with pytest.raises(toolsvc.ToolsvcError) as ei:
                await w.wait_ready(30)
            assert (ei.value.code, ei.value.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_INVALID")
            assert [v.field for v in ei.value.field_violations] == ["servers[0]"]
            await w.close()

    run(main())


def test_aio_closing_the_client_stops_its_watch(server: Toolsvc) -> None:
    async def main() -> None:
        c = toolsvc.aio.Client(server.addr)
        w = c.watch(min_backoff=0.01, max_backoff=0.05)
        assert await w.wait_ready(30)
        await c.close()
        with pytest.raises(toolsvc.ToolsvcError) as ei:
            for _ in range(100):
                await w.get(0.5)
        assert ei.value.code == grpc.StatusCode.CANCELLED
        await w.close()

    run(main())
