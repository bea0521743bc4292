"""Tools that ask: call_tool's on_input loop (sync and asyncio) against a
live toolsvc in front of tests/testserver -interactive (go-sdk)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

import toolsvc
import toolsvc.aio
from conftest import Toolsvc, interactive_server

# What tests/testserver's ask_name asks for.
NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}


@pytest.fixture
def asking(start_toolsvc: Any, testserver_bin: str) -> Toolsvc:
    # One toolsvc per test: the upstream speaks stdio, where a mid-call
    # request goes to a call only when it is the upstream's only one in
    # flight, and a test whose handler failed leaves its call parked.
    t: Toolsvc = start_toolsvc({"mcpServers": {"ask": interactive_server(testserver_bin)}})
    return t


@pytest.fixture
def client(asking: Toolsvc) -> Iterator[toolsvc.Client]:
    with toolsvc.Client(asking.addr) as c:
        yield c


def answer_all(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
    if isinstance(q, toolsvc.ElicitationRequest):
        return toolsvc.ElicitationAnswer("accept", {"name": "Ada"})
    if isinstance(q, toolsvc.SamplingRequest):
        return toolsvc.SamplingAnswer(
            {"role": "assistant", "content": {"type": "text", "text": "hi there"}, "model": "m", "stopReason": "endTurn"}
        )
    if isinstance(q, toolsvc.RootsRequest):
        return toolsvc.RootsAnswer([("file:///work", "work")])
    raise AssertionError(f"unexpected {q}")


def test_ask_name_answered(client: toolsvc.Client) -> None:
    seen: list[toolsvc.InputRequest] = []

    def on_input(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
        seen.append(q)
        return toolsvc.ElicitationAnswer("accept", {"name": "Ada"})

    r = client.call_tool("ask__ask_name", {}, on_input=on_input, timeout=30)
    assert (r.text, r.is_error) == ("hello Ada", False)
    assert len(seen) == 1
    q = seen[0]
    assert isinstance(q, toolsvc.ElicitationRequest)
    assert (q.message, q.requested_schema) == ("What is your name?", NAME_SCHEMA)
    assert q.id


def test_ask_name_declined(client: toolsvc.Client) -> None:
    r = client.call_tool("ask__ask_name", {}, on_input=lambda q: toolsvc.ElicitationAnswer("decline"))
    assert r.text == "declined"


def test_without_on_input_the_policy_answers(client: toolsvc.Client) -> None:
    assert client.call_tool("ask__ask_name", {}).text == "declined"


def test_ask_all_three_kinds(client: toolsvc.Client) -> None:
    kinds: list[str] = []

    def on_input(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
        kinds.append(type(q).__name__)
        if isinstance(q, toolsvc.SamplingRequest):
            assert q.params["maxTokens"] == 20
            assert q.params["messages"][0]["content"]["text"] == "Say hi"
        return answer_all(q)

    r = client.call_tool("ask__ask_all", {}, on_input=on_input)
    assert r.text == "name=Ada model=hi there roots=file:///work"
    assert sorted(kinds) == ["ElicitationRequest", "RootsRequest", "SamplingRequest"]


def test_ask_url(client: toolsvc.Client) -> None:
    seen: list[toolsvc.InputRequest] = []

    def on_input(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
        seen.append(q)
        return toolsvc.ElicitationAnswer("accept")

    assert client.call_tool("ask__ask_url", {}, on_input=on_input).text == "url accept"
    q = seen[0]
    assert isinstance(q, toolsvc.ElicitationURLRequest)
    assert (q.message, q.url, q.elicitation_id) == ("Log in, please", "https://login.example/authorize?x=1", "el-1")


def test_ask_twice_two_rounds(client: toolsvc.Client) -> None:
    # Asked mid-call (the 2025 way): each question is a round of its own.
    asked: list[str] = []

    def on_input(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
        assert isinstance(q, toolsvc.ElicitationRequest)
        asked.append(q.message)
        return toolsvc.ElicitationAnswer("accept", {"name": q.message.rstrip("?").upper()})

    r = client.call_tool("ask__ask_twice", {}, on_input=on_input, timeout=30)
    assert r.text == "FIRST+SECOND" and asked == ["first?", "second?"]


def test_handler_error_propagates(client: toolsvc.Client) -> None:
    class Boom(Exception):
        pass

    def on_input(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
        raise Boom("no user here")

    with pytest.raises(Boom, match="no user here"):
        client.call_tool("ask__ask_name", {}, on_input=on_input)


def test_wrong_answer_kind(client: toolsvc.Client) -> None:
    with pytest.raises(TypeError, match="ElicitationRequest with RootsAnswer"):
        client.call_tool("ask__ask_name", {}, on_input=lambda q: toolsvc.RootsAnswer())


def test_rounds_are_bounded(client: toolsvc.Client) -> None:
    with pytest.raises(toolsvc.ToolsvcError) as ei:
        client.call_tool("ask__ask_twice", {}, on_input=lambda q: toolsvc.ElicitationAnswer("accept", {"name": "x"}),
                         max_input_rounds=1)
    assert ei.value.reason == "INPUT_ROUNDS_EXCEEDED" and ei.value.code == grpc.StatusCode.ABORTED
    assert "after 1 rounds" in str(ei.value)


def test_input_kinds(client: toolsvc.Client) -> None:
    # Elicitation not offered: the server's policy declines, on_input is not asked.
    seen: list[toolsvc.InputRequest] = []

    def on_input(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
        seen.append(q)
        return answer_all(q)

    r = client.call_tool("ask__ask_name", {}, on_input=on_input, input_kinds=["sampling", "roots"])
    assert r.text == "declined" and seen == []
    with pytest.raises(ValueError, match="unknown kind"):
        client.call_tool("ask__ask_name", {}, on_input=answer_all, input_kinds=["telepathy"])  # type: ignore[list-item]


def test_aio_on_input(asking: Toolsvc) -> None:
    async def main() -> None:
        async with toolsvc.aio.Client(asking.addr) as c:

            async def on_input(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
                await asyncio.sleep(0.01)
                return answer_all(q)

            r = await c.call_tool("ask__ask_all", {}, on_input=on_input)
            assert r.text == "name=Ada model=hi there roots=file:///work"
            # A plain function works too.
            r = await c.call_tool("ask__ask_name", {}, on_input=lambda q: toolsvc.ElicitationAnswer("decline"))
            assert r.text == "declined"
            r = await c.call_tool("ask__ask_name", {})
            assert r.text == "declined"

            async def boom(q: toolsvc.InputRequest) -> toolsvc.InputAnswer:
                raise RuntimeError("async handler failed")

            with pytest.raises(RuntimeError, match="async handler failed"):
                await c.call_tool("ask__ask_name", {}, on_input=boom)

    asyncio.run(asyncio.wait_for(main(), 60))
