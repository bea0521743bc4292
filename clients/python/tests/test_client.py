"""The blocking client against a live toolsvc (real upstreams, real gRPC)."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

import toolsvc
from conftest import Toolsvc, demo_server, runtime_server

# What tests/node/runtime_server.mjs declares, verbatim.
ADD_TOOL_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "via": {"type": "string", "enum": ["session", "request", "none"]}},
    "required": ["name"],
}
SLEEP_SCHEMA = {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}


@pytest.fixture
def client(server: Toolsvc) -> Any:
    with toolsvc.Client(server.addr) as c:
        yield c


def test_installed_package_is_tested() -> None:
    # The CI hook runs these tests against `pip install ./clients/python`.
    if os.environ.get("TOOLSVC_EXPECT_INSTALLED"):
        assert "site-packages" in toolsvc.__file__, toolsvc.__file__
    assert Path(toolsvc.__file__).with_name("py.typed").is_file()


def test_list_tools_every_page(client: toolsvc.Client) -> None:
    tools = client.list_tools(page_size=2)
    names = [t.name for t in tools]
    assert names == sorted(names)
    for want in ("demo__add", "demo__echo", "demo__sleep", "rt__add_tool", "rt__echo", "rt__sleep", "rt__stats"):
        assert want in names
    assert len(names) == len(set(names)) and len(names) >= 8
    assert re.fullmatch(r"[0-9a-f]{32}", tools.revision)
    assert tools == client.list_tools()  # one page or many: the same catalog


def test_call_tool(client: toolsvc.Client) -> None:
    r = client.call_tool("demo__add", {"a": 2, "b": 40})
    assert not r.is_error
    assert r.structured_content == {"sum": 42}
    assert isinstance(r.structured_content["sum"], int)
    r = client.call_tool("demo__echo", '{"text": "hi"}', timeout=10)
    assert (r.text, r.is_error, r.structured_content) == ("hi", False, None)
    assert [c.WhichOneof("content") for c in r.content] == ["text"]


def test_tool_failure_is_a_result(client: toolsvc.Client) -> None:
    r = client.call_tool("rt__remove_tool", {"name": "never_added"})
    assert r.is_error and r.text == "no tool never_added"


def test_errors_carry_the_server_details(client: toolsvc.Client) -> None:
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.call_tool("demo__nope", {})
    e = ei.value
    assert (e.code, e.reason, e.domain) == (grpc.StatusCode.NOT_FOUND, "TOOL_NOT_FOUND", "toolsvc.dev")
    assert e.metadata["tool"] == "demo__nope" and not e.not_dispatched

    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.call_tool("demo__add", {"a": "two", "b": 40})
    e = ei.value
    assert (e.code, e.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "ARGUMENTS_INVALID")
    assert e.metadata == {"tool": "demo__add", "server": "demo"}
    # Named as the caller gave them: a dict's paths are under "arguments",
    # JSON text's under "arguments_json" (the field the package sends).
    assert [v.field for v in e.field_violations] == ["arguments.a"], e.field_violations
    assert "arguments.a" in str(e) and "arguments_json" not in str(e)
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.call_tool("demo__add", '{"a": "two", "b": 40}')
    assert [v.field for v in ei.value.field_violations] == ["arguments_json.a"], ei.value.field_violations
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        list(client.call_tool_stream("demo__add", {"a": "two", "b": 40}))
    assert [v.field for v in ei.value.field_violations] == ["arguments.a"], ei.value.field_violations

    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.call_tool("", {})
    assert (ei.value.reason, [v.field for v in ei.value.field_violations]) == ("REQUEST_INVALID", ["name"])

    t0 = time.monotonic()
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.call_tool("demo__sleep", {"ms": 5000}, timeout=0.3)
    assert ei.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - t0 < 3


def test_big_integers_are_sent_exactly(client: toolsvc.Client) -> None:
    # 2^53 + 1 is not a double: sent as JSON text it reaches the schema
    # check (a string is expected) as an exact integer.
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.call_tool("rt__echo", {"text": 2**53 + 1})
    assert ei.value.reason == "ARGUMENTS_INVALID"
    assert "9007199254740993" in str(ei.value), str(ei.value)


def test_call_tool_stream(client: toolsvc.Client) -> None:
    msgs = list(client.call_tool_stream("rt__sleep", {"ms": 400}, timeout=20))
    progress = [m for m in msgs if isinstance(m, toolsvc.Progress)]
    assert isinstance(msgs[-1], toolsvc.CallResult) and not msgs[-1].is_error
    assert msgs[-1].text.startswith("slept ")
    assert all(isinstance(m, toolsvc.Progress) for m in msgs[:-1])
    # Quarters 1..4, in order; the 4th is sent 1 ms before the result and
    # may lose that race (progress after the result is dropped).
    steps = [p.progress for p in progress]
    assert steps[:3] == [1, 2, 3] and steps in ([1, 2, 3], [1, 2, 3, 4]), steps
    assert all(p.total == 4 and p.message == f"quarter {p.progress:g}" for p in progress)


def test_list_servers(client: toolsvc.Client, server: Toolsvc) -> None:
    servers = client.list_servers()
    assert [s.name for s in servers] == ["demo", "rt"]
    assert all(s.state == toolsvc.v1.toolsvc_pb2.SERVER_STATE_READY for s in servers)
    assert servers.config is not None and servers.config.path == str(server.config_path)


def test_llm_formats_keep_the_exact_schema(client: toolsvc.Client) -> None:
    tools = client.list_tools()
    oa = {t["function"]["name"]: t for t in toolsvc.to_openai_tools(tools)}
    assert oa["rt__add_tool"] == {
        "type": "function",
        "function": {"name": "rt__add_tool", "description": "Register a tool and announce it.", "parameters": ADD_TOOL_SCHEMA},
    }
    assert oa["rt__sleep"]["function"]["parameters"] == SLEEP_SCHEMA
    resp = {t["name"]: t for t in toolsvc.to_openai_tools(tools, api="responses")}
    assert resp["rt__sleep"] == {"type": "function", **oa["rt__sleep"]["function"]}
    an = {t["name"]: t for t in toolsvc.to_anthropic_tools(tools)}
    assert an["rt__sleep"] == {
        "name": "rt__sleep",
        "description": "Sleep ms milliseconds; stops when the call is cancelled.",
        "input_schema": SLEEP_SCHEMA,
    }
    assert set(an) == set(oa) == {t.name for t in tools}
    # go-sdk's inferred schema for the demo's int field is an integer too.
    assert an["demo__sleep"]["input_schema"]["properties"]["ms"]["type"] == "integer"


def test_watch_keeps_the_catalog(client: toolsvc.Client) -> None:
    with client.watch() as w:
        assert w.wait_ready(30)
        first = w.get(5)
        assert first is not None and first.kind == toolsvc.EventKind.SNAPSHOT and not first.resumed
        listed = client.list_tools()
        cat, rev = w.view
        assert set(cat) == {t.name for t in listed} and rev == listed.revision == w.revision

        client.call_tool("rt__add_tool", {"name": "py_sync"})
        ev = _next_change(w)
        assert [t.name for t in ev.upserted] == ["rt__py_sync"] and ev.removed == ()
        assert "rt__py_sync" in w.catalog and w.revision == ev.revision

        client.call_tool("rt__remove_tool", {"name": "py_sync"})
        ev = _next_change(w)
        assert ev.removed == ("rt__py_sync",)
        assert "rt__py_sync" not in w.catalog
        assert set(w.catalog) == {t.name for t in client.list_tools()}
    assert w.get(1) is None  # closed: iteration ends


def _next_change(w: toolsvc.CatalogWatcher) -> toolsvc.WatchEvent:
    end = time.monotonic() + 30
    while time.monotonic() < end:
        ev = w.get(end - time.monotonic())
        if ev is not None and ev.kind == toolsvc.EventKind.CHANGES:
            return ev
    raise AssertionError("no changes event within 30 s")


def test_watch_resumes_on_another_replica(start_toolsvc: Any, toolsvc_bin: str) -> None:
    cfg = {"mcpServers": {"demo": demo_server(toolsvc_bin)}}
    a, b = start_toolsvc(cfg), start_toolsvc(cfg)
    retries: list[toolsvc.ToolsvcError] = []
    # pick_first over both addresses: the watch is on a until a stops.
    with toolsvc.Client(f"ipv4:{a.addr},{b.addr}") as c:
        with c.watch(min_backoff=0.05, on_retry=lambda e, d: retries.append(e)) as w:
            snap = w.get(30)
            assert snap is not None and snap.kind == toolsvc.EventKind.SNAPSHOT
            a.stop()
            ev = w.get(30)
            assert ev is not None, retries
            # Equal catalogs have equal revisions: the resume is "synced".
            assert (ev.kind, ev.resumed, ev.revision) == (toolsvc.EventKind.SYNCED, True, snap.revision)
            assert w.streams >= 2 and retries and all(e.code == grpc.StatusCode.UNAVAILABLE for e in retries)
            assert set(w.catalog) == {"demo__add", "demo__echo", "demo__sleep"}


def test_watch_stops_on_a_rejected_request(client: toolsvc.Client) -> None:
    w = client.watch(servers=["nope"])
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        w.wait_ready(30)
    assert (ei.value.code, ei.value.reason) == (grpc.StatusCode.NOT_FOUND, "SERVER_NOT_FOUND")
    with pytest.raises(toolsvc.ToolsvcError):
        next(iter(w))
    assert w.streams == 1
    w.close()


def test_retries_only_what_was_not_dispatched(start_toolsvc: Any, toolsvc_bin: str) -> None:
    # An upstream that takes 3 s to start: until toolsvc's first discovery
    # round ends, a call is UNAVAILABLE "starting" and never dispatched.
    slow = {"command": "sh", "args": ["-c", f'sleep 3; exec "{toolsvc_bin}" demo-server']}
    t = start_toolsvc({"mcpServers": {"demo": slow}}, wait_ready=False)
    with toolsvc.Client(t.addr, retry=toolsvc.RetryPolicy(max_attempts=1)) as c:
        with pytest.raises(toolsvc.ToolsvcError) as ei:
            c.call_tool("demo__echo", {"text": "hi"})
    e = ei.value
    assert (e.code, e.reason, e.metadata.get("unavailable_reason")) == (
        grpc.StatusCode.UNAVAILABLE, "UPSTREAM_UNAVAILABLE", "starting")
    assert e.not_dispatched and e.retry_delay == 1.0
    with toolsvc.Client(t.addr, retry=toolsvc.RetryPolicy(max_attempts=20)) as c:
        assert c.call_tool("demo__echo", {"text": "hi"}, timeout=60).text == "hi"


def test_session_lost_is_not_retried(start_toolsvc: Any) -> None:
    t = start_toolsvc({"mcpServers": {"rt": runtime_server()}})
    kids = [pid for pid, cmd in t.children() if "runtime_server.mjs" in cmd]
    assert len(kids) == 1, t.children()
    with toolsvc.Client(t.addr) as c:
        stream = c.call_tool_stream("rt__sleep", {"ms": 4000}, timeout=30)
        assert isinstance(next(stream), toolsvc.Progress)  # the call is running upstream
        os.kill(kids[0], signal.SIGKILL)
        with pytest.raises(toolsvc.ToolsvcError) as ei:
            list(stream)
    e = ei.value
    assert (e.code, e.reason, e.metadata.get("unavailable_reason")) == (
        grpc.StatusCode.UNAVAILABLE, "UPSTREAM_UNAVAILABLE", "session_lost")
    assert not e.not_dispatched


def test_bearer_token(start_toolsvc: Any, toolsvc_bin: str) -> None:
    t = start_toolsvc({"auth": {"tokens": {"agent": "s3cret-token-for-the-agent"}}, "mcpServers": {"demo": demo_server(toolsvc_bin)}})
    with toolsvc.Client(t.addr) as c, pytest.raises(toolsvc.ToolsvcError) as ei:
        c.list_tools()
    assert (ei.value.code, ei.value.reason) == (grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED")
    assert "s3cret" not in str(ei.value)
    with toolsvc.Client(t.addr, token="s3cret-token-for-the-agent") as c:
        assert c.call_tool("demo__add", {"a": 1, "b": 2}).structured_content == {"sum": 3}
        with c.watch() as w:
            assert w.wait_ready(30) and "demo__add" in w.catalog


def test_closing_the_client_stops_its_watch(server: Toolsvc) -> None:
    c = toolsvc.Client(server.addr)
    w = c.watch(min_backoff=0.01, max_backoff=0.05)
    assert w.wait_ready(30)
    c.close()
    end = time.monotonic() + 10
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        while time.monotonic() < end:  # the snapshot, then the end
            w.get(0.5)
    assert ei.value.code == grpc.StatusCode.CANCELLED and w.error is ei.value
    w.close()


def test_rate_limited_calls_wait_for_their_token(start_toolsvc: Any, toolsvc_bin: str) -> None:
    token = "agent-token-0123456789abcdef"
    t = start_toolsvc({
        "auth": {"tokens": {"agent": token}, "rateLimits": [{"principal": "agent", "callsPerSecond": 2, "burst": 1}]},
        "mcpServers": {"demo": demo_server(toolsvc_bin)},
    })
    with toolsvc.Client(t.addr, token=token, retry=toolsvc.RetryPolicy(max_attempts=1)) as c:
        c.call_tool("demo__echo", {"text": "1"})
        with pytest.raises(toolsvc.ToolsvcError) as ei:
            c.call_tool("demo__echo", {"text": "2"})
    e = ei.value
    assert (e.code, e.reason, e.metadata.get("limit")) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED", "calls_per_second")
    assert e.not_dispatched and e.retry_delay is not None and 0 < e.retry_delay <= 0.5
    with toolsvc.Client(t.addr, token=token) as c:
        t0 = time.monotonic()
        assert [c.call_tool("demo__echo", {"text": str(i)}).text for i in range(3)] == ["0", "1", "2"]
        assert time.monotonic() - t0 >= 0.5  # waited for tokens instead of failing


def test_search_tools(client: toolsvc.Client) -> None:
    found = client.search_tools("sleep for some milliseconds", limit=3)
    assert found and found[0].name in ("demo__sleep", "rt__sleep"), [t.name for t in found]
    assert found.revision and set(found.scores) == {t.name for t in found}
    assert toolsvc.input_schema(found[0])["properties"]["ms"]["type"] == "integer"
    only = client.search_tools("sleep", servers=["rt"], name_glob="rt__*")
    assert only[0].name == "rt__sleep" and all(t.server == "rt" for t in only), [t.name for t in only]
    # A searched subset in the LLM formats.
    assert {t["function"]["name"] for t in toolsvc.to_openai_tools(only)} == {t.name for t in only}
    deferred = toolsvc.to_anthropic_tools(client.list_tools(), defer_loading=True, always_loaded=["rt__sleep"])
    assert all(t.get("defer_loading") is (None if t["name"] == "rt__sleep" else True) for t in deferred)
    assert len(deferred) > len(only) and "rt__sleep" in {t["name"] for t in deferred}
    subset = toolsvc.to_anthropic_tools(only, defer_loading=True, always_loaded=["rt__sleep"])
    assert {t["name"]: t.get("defer_loading") for t in subset} == {
        t.name: (None if t.name == "rt__sleep" else True) for t in only
    }
    # Hint filters: demo__sleep is read-only but not idempotent.
    not_idempotent = client.search_tools("sleep", servers=["demo"], idempotent=False, read_only=True)
    assert "demo__sleep" in {t.name for t in not_idempotent}
    assert "demo__sleep" not in {t.name for t in client.search_tools("sleep", servers=["demo"], idempotent=True)}
    with pytest.raises(toolsvc.ToolsvcError) as e:
        client.search_tools("")
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in e.value.field_violations] == ["query"]
