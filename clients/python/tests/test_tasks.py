"""Tasks (docs/tasks.md): call_tool(task=...), wait_task, get_task,
cancel_task, list_tasks and update_task, sync and asyncio, against live
toolsvc processes in front of the real task servers: the TypeScript SDK's
2025-11-25 tasks and fastmcp-tasks' 2026-07-28 extension."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import toolsvc
import toolsvc.aio
from conftest import Toolsvc, free_port

SERVERS = ("ts", "py")
ERA = {"ts": "2025-11-25", "py": "2026-07-28"}


@pytest.fixture(scope="module")
def tasks_toolsvc(toolsvc_bin: str, task_servers: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toolsvc]:
    t = Toolsvc(toolsvc_bin, {"mcpServers": task_servers}, tmp_path_factory.mktemp("tasks"))
    yield t
    t.stop()


@pytest.fixture
def client(tasks_toolsvc: Toolsvc) -> Iterator[toolsvc.Client]:
    with toolsvc.Client(tasks_toolsvc.addr) as c:
        yield c


def start(c: toolsvc.Client, tool: str, args: dict[str, Any], ttl: float | None = 60) -> toolsvc.Task:
    t = c.call_tool(tool, args, task=toolsvc.TaskOptions(ttl=ttl))
    assert isinstance(t, toolsvc.Task), t
    return t


@pytest.mark.parametrize("server", SERVERS)
def test_task_waited_to_its_result(client: toolsvc.Client, server: str) -> None:
    t = start(client, f"{server}__slow", {"ms": 300})
    assert (t.tool, t.server, t.protocol_version) == (f"{server}__slow", server, ERA[server])
    assert t.status == toolsvc.TaskStatus.WORKING and t.handle.startswith("t1.") and t.task_id
    seen: list[toolsvc.Task] = []
    r = client.wait_task(t, on_status=seen.append, timeout=30)
    assert (r.text, r.is_error) == ("slept 300", False)
    assert seen[0].status == toolsvc.TaskStatus.WORKING and seen[-1].status == toolsvc.TaskStatus.COMPLETED
    assert seen[-1].result is not None and seen[-1].result.text == "slept 300"
    got = client.get_task(t.handle)
    assert got.ended and got.result is not None and got.result.text == "slept 300" and got.error is None
    assert [x.task_id for x in client.list_tasks(server=server)][0] == t.task_id


@pytest.mark.parametrize("server", SERVERS)
def test_failing_task_is_an_error_result(client: toolsvc.Client, server: str) -> None:
    t = start(client, f"{server}__slow", {"ms": 50, "fail": True}, ttl=None)
    r = client.wait_task(t.handle, timeout=30)
    assert r.is_error and "boom" in r.text


@pytest.mark.parametrize("server", SERVERS)
def test_cancelled_task(client: toolsvc.Client, server: str) -> None:
    t = start(client, f"{server}__slow", {"ms": 30000})
    assert client.cancel_task(t).status == toolsvc.TaskStatus.CANCELLED
    assert client.cancel_task(t).status == toolsvc.TaskStatus.CANCELLED  # no error
    with pytest.raises(toolsvc.TaskCancelledError) as ei:
        client.wait_task(t, timeout=30)
    assert ei.value.code == grpc.StatusCode.CANCELLED and ei.value.task.task_id == t.task_id
    assert isinstance(ei.value, toolsvc.ToolsvcError)


@pytest.mark.parametrize("server", SERVERS)
def test_a_tool_without_tasks_runs_normally(client: toolsvc.Client, server: str) -> None:
    r = client.call_tool(f"{server}__echo", {"text": "plain"}, task=True)
    assert isinstance(r, toolsvc.CallResult) and r.text == "plain"


def test_bad_handles_and_ttl(client: toolsvc.Client) -> None:
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.get_task("t1." + "A" * 60)
    assert (ei.value.code, ei.value.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "TASK_HANDLE_INVALID")
    assert [v.field for v in ei.value.field_violations] == ["handle"]
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.wait_task("t1.nope", timeout=10)
    assert ei.value.reason == "TASK_HANDLE_INVALID"
    with pytest.raises(ValueError):
        client.call_tool("py__slow", {}, task=toolsvc.TaskOptions(ttl=0))
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.list_tasks(server="nope")
    assert ei.value.reason == "SERVER_NOT_FOUND"


def test_input_required_answered_by_on_input(client: toolsvc.Client) -> None:
    t = start(client, "py__ask", {})
    asked: list[toolsvc.InputRequest] = []
    statuses: list[toolsvc.TaskStatus] = []

    def on_input(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
        asked.append(q)
        return toolsvc.ElicitationAnswer("accept", {"name": "Ada"})

    r = client.wait_task(t, on_input=on_input, on_status=lambda x: statuses.append(x.status), timeout=30)
    assert r.text == "hello Ada"
    assert len(asked) == 1 and isinstance(asked[0], toolsvc.ElicitationRequest) and asked[0].message == "Your name?"
    assert toolsvc.TaskStatus.INPUT_REQUIRED in statuses and statuses[-1] == toolsvc.TaskStatus.COMPLETED
    # The task no longer waits.
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.update_task(t, [(asked[0], toolsvc.ElicitationAnswer("decline"))])
    assert (ei.value.code, ei.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "TASK_NOT_WAITING")


def test_input_required_answered_with_update_task(client: toolsvc.Client) -> None:
    t = start(client, "py__ask", {})
    waiting: list[toolsvc.Task] = []
    ready = threading.Event()

    def on_status(x: toolsvc.Task) -> None:
        if x.status == toolsvc.TaskStatus.INPUT_REQUIRED:
            waiting.append(x)
            ready.set()

    out: list[Any] = []
    th = threading.Thread(target=lambda: out.append(client.wait_task(t, on_status=on_status, timeout=30)))
    th.start()
    assert ready.wait(30)
    got = client.get_task(t)
    assert got.status == toolsvc.TaskStatus.INPUT_REQUIRED and len(got.input_requests) == 1
    after = client.update_task(t, [(got.input_requests[0], toolsvc.ElicitationAnswer("accept", {"name": "Bob"}))])
    assert after.handle == t.handle
    th.join(30)
    assert out and out[0].text == "hello Bob"


def test_aio_tasks(tasks_toolsvc: Toolsvc) -> None:
    async def main() -> None:
        async with toolsvc.aio.Client(tasks_toolsvc.addr) as c:
            t = await c.call_tool("py__slow", {"ms": 200}, task=True)
            assert isinstance(t, toolsvc.Task)
            seen: list[toolsvc.TaskStatus] = []

            async def on_status(x: toolsvc.Task) -> None:
                seen.append(x.status)

            r = await c.wait_task(t, on_status=on_status, timeout=30)
            assert r.text == "slept 200" and seen[-1] == toolsvc.TaskStatus.COMPLETED
            assert (await c.get_task(t)).result is not None
            assert t.task_id in [x.task_id for x in await c.list_tasks()]

            a = await c.call_tool("py__ask", {}, task=True)
            assert isinstance(a, toolsvc.Task)

            async def on_input(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
                return toolsvc.ElicitationAnswer("accept", {"name": "Cy"})

            assert (await c.wait_task(a, on_input=on_input, timeout=30)).text == "hello Cy"

            long = await c.call_tool("ts__slow", {"ms": 30000}, task=toolsvc.TaskOptions(ttl=60))
            assert isinstance(long, toolsvc.Task)
            assert (await c.cancel_task(long)).status == toolsvc.TaskStatus.CANCELLED
            with pytest.raises(toolsvc.TaskCancelledError):
                await c.wait_task(long, timeout=30)
            r2 = await c.call_tool("ts__echo", {"text": "x"}, task=True)
            assert isinstance(r2, toolsvc.CallResult) and r2.text == "x"

    asyncio.run(asyncio.wait_for(main(), 90))


def _two_replicas(start_toolsvc: Any, task_servers: dict[str, dict[str, Any]], tmp: Path) -> tuple[Toolsvc, Toolsvc]:
    key = tmp / "state.key"
    key.write_bytes(b"0123456789abcdef0123456789abcdef")
    os.chmod(key, 0o600)
    conf = {"mcpServers": {"py": task_servers["py"]}}
    args = ("--state-key-file", str(key))
    a = start_toolsvc(conf, extra_args=(*args, "--listen", f"127.0.0.1:{free_port()}"))
    b = start_toolsvc(conf, extra_args=(*args, "--listen", f"127.0.0.1:{free_port()}"))
    return a, b


def test_wait_task_resumes_on_another_replica(
    start_toolsvc: Any, task_servers: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    # One channel over two replicas (pick_first: the first while it serves);
    # the first stops mid-watch and the watch resumes on the second.
    a, b = _two_replicas(start_toolsvc, task_servers, tmp_path)
    with toolsvc.Client(f"ipv4:{a.addr},{b.addr}") as c:
        t = c.call_tool("py__slow", {"ms": 4000}, task=True)
        assert isinstance(t, toolsvc.Task)
        retries: list[toolsvc.ToolsvcError] = []
        working = threading.Event()

        def on_status(x: toolsvc.Task) -> None:
            if x.status == toolsvc.TaskStatus.WORKING:
                working.set()

        out: list[Any] = []
        th = threading.Thread(
            target=lambda: out.append(
                c.wait_task(t, on_status=on_status, on_retry=lambda e, d: retries.append(e), timeout=60)
            )
        )
        th.start()
        assert working.wait(30)
        a.stop()
        th.join(60)
        assert out and out[0].text == "slept 4000", out
        assert retries and all(e.code == grpc.StatusCode.UNAVAILABLE for e in retries)


def test_aio_wait_task_resumes_on_another_replica(
    start_toolsvc: Any, task_servers: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    a, b = _two_replicas(start_toolsvc, task_servers, tmp_path)

    async def main() -> None:
        async with toolsvc.aio.Client(f"ipv4:{a.addr},{b.addr}") as c:
            t = await c.call_tool("py__slow", {"ms": 4000}, task=True)
            assert isinstance(t, toolsvc.Task)
            retries: list[toolsvc.ToolsvcError] = []
            working = asyncio.Event()
            w = asyncio.ensure_future(
                c.wait_task(
                    t,
                    on_status=lambda x: working.set() if x.status == toolsvc.TaskStatus.WORKING else None,
                    on_retry=lambda e, d: retries.append(e),
                    timeout=60,
                )
            )
            await asyncio.wait_for(working.wait(), 30)
            await asyncio.get_running_loop().run_in_executor(None, a.stop)
            r = await asyncio.wait_for(w, 60)
            assert r.text == "slept 4000" and retries

    asyncio.run(asyncio.wait_for(main(), 120))
