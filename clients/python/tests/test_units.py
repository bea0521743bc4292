"""Unit tests without a server: Struct conversion, the watch state machine,
the sync watcher against an in-memory WatchCatalog stream, the service
config, the retry wait. (Errors are tested against a live server in
test_client.py, never built by hand here: the fake stream only ends with a
bare status code.)"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any, cast

import grpc
import pytest
from google.protobuf import json_format, struct_pb2

import toolsvc
from conftest import REPO
from toolsvc._client import CatalogWatcher
from toolsvc._common import MAX_EVENT_BYTES, MAX_EVENT_PARTS, Backoff, CatalogState
from toolsvc.v1 import toolsvc_pb2 as pb

R1, R2 = "1" * 32, "2" * 32


def struct(d: dict[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(d)
    return s


def test_integers_stay_integers() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 100, "default": 0, "multipleOf": 0.5}},
        "required": ["n"],
        "x-big": 2.0**60,
    }
    got = toolsvc.from_struct(struct(schema))
    n = got["properties"]["n"]
    assert n == {"type": "integer", "minimum": 1, "maximum": 100, "default": 0, "multipleOf": 0.5}
    assert all(type(n[k]) is int for k in ("minimum", "maximum", "default")) and type(n["multipleOf"]) is float
    assert type(got["x-big"]) is float  # beyond 2^53 a double is not an exact integer
    assert json.dumps(n, sort_keys=True) == '{"default": 0, "maximum": 100, "minimum": 1, "multipleOf": 0.5, "type": "integer"}'


def test_schema_json_is_preferred_when_the_server_sends_it() -> None:
    t = pb.Tool(name="s__t", description="d", available=True, input_schema=struct({"type": "object"}))
    assert toolsvc.input_schema(t) == {"type": "object"}
    if "input_schema_json" in pb.Tool.DESCRIPTOR.fields_by_name:  # newer API
        json_format.ParseDict({"inputSchemaJson": '{"type":"object","properties":{"id":{"type":"integer","maximum":18446744073709551615}}}'}, t)
        assert toolsvc.input_schema(t)["properties"]["id"]["maximum"] == 18446744073709551615
    assert toolsvc.input_schema(pb.Tool(name="x")) == {"type": "object", "properties": {}}


def test_llm_formats_from_a_catalog_dict() -> None:
    a = pb.Tool(name="s__a", title="A title", available=True, input_schema=struct({"type": "object"}))
    b = pb.Tool(name="s__b", description="B", available=False)
    cat = {"s__b": b, "s__a": a}
    assert toolsvc.to_anthropic_tools(cat) == [{"name": "s__a", "description": "A title", "input_schema": {"type": "object"}}]
    assert [t["function"]["name"] for t in toolsvc.to_openai_tools(cat, include_unavailable=True)] == ["s__a", "s__b"]


def test_service_config_is_the_documented_one() -> None:
    with open(REPO / "examples" / "lb" / "service_config.json") as f:
        assert toolsvc.LOAD_BALANCING_SERVICE_CONFIG == json.load(f)


def snapshot(rev: str, reset: bool, *names: str) -> pb.WatchCatalogResponse:
    return pb.WatchCatalogResponse(revision=rev, snapshot=pb.CatalogSnapshot(tools=[pb.Tool(name=n) for n in names], reset=reset))


def changes(rev: str, removed: list[str], *upserted: pb.Tool) -> pb.WatchCatalogResponse:
    return pb.WatchCatalogResponse(revision=rev, changes=pb.CatalogChanges(upserted=list(upserted), removed=removed))


def test_watch_state_machine() -> None:
    s = CatalogState(None, None)
    with pytest.raises(toolsvc.WatchProtocolError):
        s.apply(changes(R1, [], pb.Tool(name="a")), False)
    ev = s.apply(snapshot(R1, False, "b", "a"), False)
    assert ev.kind == toolsvc.EventKind.SNAPSHOT and sorted(s.catalog) == ["a", "b"]
    before = s.catalog
    ev = s.apply(changes(R2, ["a"], pb.Tool(name="c"), pb.Tool(name="b", description="new")), False)
    assert ev.kind == toolsvc.EventKind.CHANGES and sorted(s.catalog) == ["b", "c"]
    assert s.catalog["b"].description == "new" and s.revision == R2
    assert sorted(before) == ["a", "b"]  # a published catalog is never modified
    with pytest.raises(toolsvc.WatchProtocolError):
        s.apply(pb.WatchCatalogResponse(revision=R1, synced=pb.CatalogSynced()), True)
    ev = s.apply(snapshot(R1, True, "z"), True)
    assert (ev.kind, ev.resumed, list(s.catalog)) == (toolsvc.EventKind.RESET, True, ["z"])
    with pytest.raises(toolsvc.WatchProtocolError):
        s.apply(pb.WatchCatalogResponse(progress=pb.CatalogProgress()), False)
    assert s.reset_event().tools == (s.catalog["z"],)


def test_watch_resumes_from_initial() -> None:
    s = CatalogState(R1, [pb.Tool(name="a")])
    assert s.resume_token() == R1
    ev = s.apply(pb.WatchCatalogResponse(revision=R1, synced=pb.CatalogSynced()), True)
    assert ev.kind == toolsvc.EventKind.SYNCED and list(s.catalog) == ["a"]
    assert CatalogState(R1, None).resume_token() == ""  # a token without its tools is not used


def test_watch_applies_a_split_event_whole() -> None:
    s = CatalogState(None, None)
    first, second, last = snapshot(R1, False, "a", "b"), snapshot(R1, False, "c"), snapshot(R1, False, "d")
    first.fragment = second.fragment = True
    assert s.receive(first, False) is None and s.receive(second, False) is None
    assert s.catalog == {} and s.revision == ""  # never part of a snapshot
    ev = s.receive(last, False)
    assert ev is not None and ev.kind == toolsvc.EventKind.SNAPSHOT and sorted(s.catalog) == ["a", "b", "c", "d"]
    part = changes(R2, ["a"])
    part.fragment = True
    assert s.receive(part, False) is None
    with pytest.raises(toolsvc.WatchProtocolError):
        s.receive(snapshot(R1, False, "x"), False)  # not a part of the changes at R2
    s.drop_parts()
    ev = s.receive(changes(R2, ["a"], pb.Tool(name="e")), False)
    assert ev is not None and sorted(s.catalog) == ["b", "c", "d", "e"]


def part(m: pb.WatchCatalogResponse) -> pb.WatchCatalogResponse:
    """m as a part of a split event (fragment: every part but the last)."""
    p = pb.WatchCatalogResponse()
    p.CopyFrom(m)
    p.fragment = True
    return p


def test_watch_event_parts_are_bounded() -> None:
    # The documented bound: 10,000 parts or 256 MiB, whichever first.
    assert (MAX_EVENT_PARTS, MAX_EVENT_BYTES) == (10_000, 256 << 20)
    s = CatalogState(None, None)
    for i in range(MAX_EVENT_PARTS - 1):
        assert s.receive(part(snapshot(R1, False, f"t{i}")), False) is None
    ev = s.receive(snapshot(R1, False, "last"), False)  # the 10,000th part
    assert ev is not None and len(s.catalog) == MAX_EVENT_PARTS and s.parts == []
    for i in range(MAX_EVENT_PARTS):
        assert s.receive(part(changes(R2, [], pb.Tool(name=f"u{i}"))), False) is None
    with pytest.raises(toolsvc.WatchProtocolError, match="more than 10000 parts"):
        s.receive(part(changes(R2, [], pb.Tool(name="over"))), False)
    assert s.revision == R1 and "u0" not in s.catalog

    # The byte bound counts the encoded parts, the last one too.
    s = CatalogState(None, None)
    s.max_event_bytes = 1000
    big = snapshot(R1, False, "x" * 400)
    assert s.receive(part(big), False) is None and s.receive(part(big), False) is None
    with pytest.raises(toolsvc.WatchProtocolError, match=r"1000 bytes \(part 3, "):
        s.receive(big, False)
    assert s.catalog == {} and s.revision == ""
    s.drop_parts()
    assert s.receive(part(big), False) is None and s.parts_bytes == big.ByteSize() + 2  # + fragment


class _StreamEnd(grpc.RpcError):
    """A bare status that ends a fake stream."""

    def __init__(self, code: grpc.StatusCode) -> None:
        super().__init__()
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "fake stream ended"

    def trailing_metadata(self) -> tuple[()]:
        return ()  # no google.rpc.Status details


class _FakeCall:
    """One WatchCatalog stream: its messages, then end (or open until cancelled)."""

    def __init__(self, messages: list[pb.WatchCatalogResponse], end: grpc.StatusCode | None) -> None:
        self.messages, self.end = messages, end
        self.cancelled = threading.Event()

    def __iter__(self) -> Iterator[pb.WatchCatalogResponse]:
        for m in self.messages:
            if self.cancelled.is_set():
                break
            yield m
        if self.end is None:
            self.cancelled.wait()
        raise _StreamEnd(self.end or grpc.StatusCode.CANCELLED)

    def cancel(self) -> None:
        self.cancelled.set()


class _FakeClient:
    """Stands in for toolsvc.Client: stream i plays scripts[i] (the last one
    again after that). Records each request's resume token and how many parts
    the watcher still held when it was opened."""

    def __init__(self, state: CatalogState, *scripts: tuple[list[pb.WatchCatalogResponse], grpc.StatusCode | None]) -> None:
        self.scripts, self.state = scripts, state
        self.opened: list[tuple[str, int]] = []
        self.stub = self
        self._md: list[tuple[str, str]] = []

    def WatchCatalog(self, req: pb.WatchCatalogRequest, metadata: Any = None) -> _FakeCall:  # noqa: N802 (the stub's name)
        self.opened.append((req.resume_token, len(self.state.parts)))
        messages, end = self.scripts[min(len(self.opened), len(self.scripts)) - 1]
        return _FakeCall(messages, end)


def _watcher(state: CatalogState, fake: _FakeClient, retries: list[int] | None = None) -> CatalogWatcher:
    def on_retry(_e: toolsvc.ToolsvcError, _d: float) -> None:
        if retries is not None:
            retries.append(len(state.parts))  # the stream has ended: its parts are gone

    return CatalogWatcher(cast(Any, fake), pb.WatchCatalogRequest(fragment=True), state, Backoff(0.001, 0.002), 64, on_retry)


def test_sync_watcher_drops_the_parts_of_a_stream_that_ended() -> None:
    state = CatalogState(None, None)
    fake = _FakeClient(
        state,
        ([snapshot(R1, False, "a"), part(changes(R2, [], pb.Tool(name="b"))), part(changes(R2, [], pb.Tool(name="c")))],
         grpc.StatusCode.UNAVAILABLE),
        ([changes(R2, [], pb.Tool(name="d"))], None),
    )
    retries: list[int] = []
    with _watcher(state, fake, retries) as w:
        first, second = w.get(5), w.get(5)
        assert first is not None and first.kind == toolsvc.EventKind.SNAPSHOT
        assert second is not None and second.kind == toolsvc.EventKind.CHANGES and second.resumed
        assert [t.name for t in second.upserted] == ["d"]  # b and c were dropped, never applied
        assert sorted(w.catalog) == ["a", "d"] and w.revision == R2
        # Resumed with the old token, the parts dropped when the stream ended
        # (before the retry wait), not when the next one opened.
        assert fake.opened == [("", 0), (R1, 0)] and retries == [0]
    assert state.parts == []


@pytest.mark.parametrize("bound", [False, True], ids=["a part of another revision", "over the part bound"])
def test_sync_watcher_ends_on_a_bad_part_without_resuming(bound: bool) -> None:
    state = CatalogState(None, None)
    if bound:
        state.max_event_parts = 3
        messages = [snapshot(R1, False, "a")] + [part(changes(R2, [], pb.Tool(name=f"u{i}"))) for i in range(4)]
    else:
        messages = [snapshot(R1, False, "a"), part(changes(R2, [], pb.Tool(name="b"))), changes(R1, [], pb.Tool(name="c"))]
    fake = _FakeClient(state, (messages, None))
    with _watcher(state, fake) as w:
        ev = w.get(5)
        assert ev is not None and ev.kind == toolsvc.EventKind.SNAPSHOT
        with pytest.raises(toolsvc.WatchProtocolError, match="more than 3 parts" if bound else "was in parts"):
            w.get(5)
        assert isinstance(w.error, toolsvc.WatchProtocolError)
        assert len(fake.opened) == 1 and w.revision == R1 and sorted(w.catalog) == ["a"]
        assert state.parts == []


def test_backoff_is_jittered_and_bounded() -> None:
    b = Backoff(0.1, 0.4)
    waits = [b.next(False) for _ in range(50)]
    assert all(0 <= w <= 0.4 for w in waits) and len(set(waits)) > 1
    assert b.next(True) <= 0.1  # a stream that delivered restarts from the minimum


def test_schema_format_is_requested_when_the_api_has_it() -> None:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from toolsvc._common import set_schema_format

    # A request as the API specifies it (schema_format = SCHEMA_FORMAT_JSON).
    f = descriptor_pb2.FileDescriptorProto(name="t/schema_format_test.proto", package="t", syntax="proto3")
    e = f.enum_type.add(name="SchemaFormat")
    for i, n in enumerate(["SCHEMA_FORMAT_UNSPECIFIED", "SCHEMA_FORMAT_STRUCT", "SCHEMA_FORMAT_JSON"]):
        e.value.add(name=n, number=i)
    m = f.message_type.add(name="Req")
    m.field.add(name="schema_format", number=3, type=descriptor_pb2.FieldDescriptorProto.TYPE_ENUM,
                type_name=".t.SchemaFormat", label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    req: Any = message_factory.GetMessageClass(pool.FindMessageTypeByName("t.Req"))()
    set_schema_format(req, "json")
    assert req.schema_format == 2
    set_schema_format(req, "struct")
    assert req.schema_format == 1
    real = pb.ListToolsRequest()
    set_schema_format(real, "json")  # the API has the field now
    assert real.schema_format == pb.SCHEMA_FORMAT_JSON


def test_input_conversions() -> None:
    from toolsvc._input import capabilities, from_proto, to_proto

    caps = capabilities(None)
    assert (caps.elicitation, caps.elicitation_url, caps.sampling, caps.roots) == (True, True, True, True)
    caps = capabilities(["roots"])
    assert (caps.elicitation, caps.elicitation_url, caps.sampling, caps.roots) == (False, False, False, True)
    with pytest.raises(ValueError, match="empty"):
        capabilities([])

    q = from_proto(pb.InputRequest(id="a", elicitation=pb.ElicitationRequest(message="m", requested_schema_json='{"type":"object"}')))
    assert q == toolsvc.ElicitationRequest("m", {"type": "object"}, "a")
    r = to_proto(q, toolsvc.ElicitationAnswer("accept", {"n": 2**60}))
    assert (r.id, r.elicitation.action, json.loads(r.elicitation.content_json)) == ("a", "accept", {"n": 2**60})
    r = to_proto(q, toolsvc.ElicitationAnswer("decline"))
    assert (r.elicitation.action, r.elicitation.content_json) == ("decline", "")

    q = from_proto(pb.InputRequest(id="u", elicitation_url=pb.ElicitationURLRequest(message="m", url="https://x", elicitation_id="e")))
    assert q == toolsvc.ElicitationURLRequest("m", "https://x", "e", "u")

    q = from_proto(pb.InputRequest(id="s", sampling=pb.SamplingRequest(params_json='{"maxTokens":5}')))
    assert q == toolsvc.SamplingRequest({"maxTokens": 5}, "s")
    r = to_proto(q, toolsvc.SamplingAnswer({"role": "assistant"}))
    assert json.loads(r.sampling.result_json) == {"role": "assistant"}

    q = from_proto(pb.InputRequest(id="r", roots=pb.RootsRequest()))
    assert q == toolsvc.RootsRequest("r")
    r = to_proto(q, toolsvc.RootsAnswer([("file:///a", "a"), "file:///b"]))
    assert [(x.uri, x.name) for x in r.roots.roots] == [("file:///a", "a"), ("file:///b", "")]
    with pytest.raises(TypeError, match="RootsRequest with SamplingAnswer; want RootsAnswer"):
        to_proto(q, toolsvc.SamplingAnswer({}))
    with pytest.raises(toolsvc.ToolsvcError, match="unknown kind"):
        from_proto(pb.InputRequest(id="x"))


def test_task_outcome_errors_are_typed() -> None:
    from toolsvc._tasks import TaskFollow, outcome

    task = pb.Task(handle="t1.x", task_id="id1", server="s", status=pb.TASK_STATUS_FAILED)
    err = pb.TaskError(code=grpc.StatusCode.UNAVAILABLE.value[0], reason="UPSTREAM_UNAVAILABLE", message="gone",
                       metadata={"server": "s"})
    with pytest.raises(toolsvc.TaskFailedError) as ei:
        outcome(pb.WatchTaskResponse(task=task, error=err))
    e = ei.value
    assert (e.code, e.reason, e.message, e.metadata, e.task.task_id) == (
        grpc.StatusCode.UNAVAILABLE, "UPSTREAM_UNAVAILABLE", "gone", {"server": "s"}, "id1")
    assert not e.not_dispatched or e.domain == "toolsvc.dev"
    done = pb.WatchTaskResponse(task=pb.Task(status=pb.TASK_STATUS_COMPLETED),
                                result=pb.CallToolResponse(content=[pb.Content(text=pb.TextContent(text="ok"))]))
    assert outcome(done).text == "ok"
    cancelled = pb.Task(status=pb.TASK_STATUS_CANCELLED, task_id="id2", server="s")
    with pytest.raises(toolsvc.TaskCancelledError):
        outcome(pb.WatchTaskResponse(task=cancelled))
    # A resumed watch repeats the current state: reported once; an input
    # round is answered once.
    f = TaskFollow(0.1, 1)
    working = pb.WatchTaskResponse(task=pb.Task(status=pb.TASK_STATUS_WORKING))
    assert f.changed(working) is not None and f.changed(working) is None
    ask = pb.WatchTaskResponse(task=pb.Task(status=pb.TASK_STATUS_INPUT_REQUIRED, input_required=pb.InputRequired(
        requests=[pb.InputRequest(id="n", roots=pb.RootsRequest())])))
    assert f.to_answer(ask) == [toolsvc.RootsRequest("n")] and f.to_answer(ask) is None


def test_past_deadline() -> None:
    # grpcio reports the server's RST_STREAM CANCEL at the deadline as
    # CANCELLED when it beats grpcio's own timer: past the caller's deadline
    # that is DEADLINE_EXCEEDED; before it, or without one, it stays.
    from toolsvc._errors import ToolsvcError, past_deadline

    cancelled = ToolsvcError(grpc.StatusCode.CANCELLED, "Stream removed")
    assert past_deadline(cancelled, 10.0, 10.5).code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert past_deadline(cancelled, 10.0, 9.5) is cancelled
    assert past_deadline(cancelled, None, 9.5) is cancelled
    unavailable = ToolsvcError(grpc.StatusCode.UNAVAILABLE, "x")
    assert past_deadline(unavailable, 10.0, 10.5) is unavailable
