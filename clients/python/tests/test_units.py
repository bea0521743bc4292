"""Unit tests without a server: Struct conversion, the watch state machine,
the service config, the retry wait. (Errors are tested against a live
server in test_client.py, never built by hand here.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2

import toolsvc
from conftest import REPO
from toolsvc._common import Backoff, CatalogState
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


def test_backoff_is_jittered_and_bounded() -> None:
    b = Backoff(0.1, 0.4)
    waits = [b.next(False) for _ in range(50)]
    assert all(0 <= w <= 0.4 for w in waits) and len(set(waits)) > 1
    assert b.next(True) <= 0.1  # a stream that delivered restarts from the minimum


def test_schema_format_is_requested_when_the_api_has_it() -> None:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from toolsvc._common import set_schema_format

    # A request as issue 14 specifies it (schema_format = SCHEMA_FORMAT_JSON).
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
