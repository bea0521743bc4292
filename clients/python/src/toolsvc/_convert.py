"""Conversions between toolsvc messages and plain Python / LLM tool formats."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from google.protobuf import struct_pb2

from toolsvc.v1 import toolsvc_pb2 as pb

__all__ = [
    "CallResult",
    "Progress",
    "from_struct",
    "input_schema",
    "output_schema",
    "to_anthropic_tools",
    "to_openai_tools",
]

# Integers up to 2^53 survive a double exactly; larger integral doubles stay
# floats (they were already rounded when they became a Struct number).
_MAX_EXACT = 2**53


def _value(v: struct_pb2.Value) -> Any:
    kind = v.WhichOneof("kind")
    if kind == "number_value":
        n = v.number_value
        if n.is_integer() and -_MAX_EXACT <= n <= _MAX_EXACT:
            return int(n)
        return n
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "struct_value":
        return from_struct(v.struct_value)
    if kind == "list_value":
        return [_value(x) for x in v.list_value.values]
    return None


def from_struct(s: struct_pb2.Struct) -> dict[str, Any]:
    """A google.protobuf.Struct as a plain dict. Struct numbers are doubles;
    integral ones (up to 2^53) come back as ``int``, so ``{"type":
    "integer", "minimum": 1}`` stays exactly that."""
    return {k: _value(v) for k, v in s.fields.items()}


def _json_field(msg: Any, name: str) -> Any:
    """A ``*_json`` text field, if this version of the API has it and it is
    set (servers that know ``schema_format`` send schemas as JSON text,
    which keeps every number exactly as the upstream wrote it)."""
    text = getattr(msg, name, "")
    if isinstance(text, str) and text:
        return json.loads(text)
    return None


def input_schema(tool: pb.Tool) -> dict[str, Any]:
    """The tool's input JSON Schema as a dict: ``input_schema_json`` when the
    server sent it, else the ``input_schema`` Struct with integers restored.
    An absent schema is ``{"type": "object", "properties": {}}``."""
    schema = _json_field(tool, "input_schema_json")
    if schema is None:
        schema = from_struct(tool.input_schema) if tool.HasField("input_schema") else {}
    if not schema:
        schema = {"type": "object", "properties": {}}
    return dict(schema)


def output_schema(tool: pb.Tool) -> dict[str, Any] | None:
    """The tool's output JSON Schema as a dict, or None if it declares none."""
    schema = _json_field(tool, "output_schema_json")
    if schema is None and tool.HasField("output_schema"):
        schema = from_struct(tool.output_schema)
    return dict(schema) if schema else None


def _tools(tools: Iterable[pb.Tool] | Mapping[str, pb.Tool], include_unavailable: bool) -> list[pb.Tool]:
    items = list(tools.values()) if isinstance(tools, Mapping) else list(tools)
    items.sort(key=lambda t: t.name)
    return [t for t in items if include_unavailable or t.available]


def _description(t: pb.Tool) -> str:
    return t.description or t.title or t.annotations.title


def to_openai_tools(
    tools: Iterable[pb.Tool] | Mapping[str, pb.Tool],
    *,
    api: Literal["chat", "responses"] = "chat",
    include_unavailable: bool = False,
) -> list[dict[str, Any]]:
    """OpenAI function-calling tool definitions, sorted by name.

    ``api="chat"`` (Chat Completions): ``{"type": "function", "function":
    {"name", "description", "parameters"}}``; ``api="responses"`` (Responses
    API): ``{"type": "function", "name", "description", "parameters"}``.
    ``parameters`` is the tool's exact input JSON Schema (integers kept as
    integers). ``tools`` is a list of Tool, a catalog dict (such as
    ``watcher.catalog``) or the result of ``search_tools`` (a searched
    subset; sorted by name here like any other input); unavailable tools are left out unless
    ``include_unavailable``. The name is the exposed name to pass back to
    ``call_tool``.
    """
    out: list[dict[str, Any]] = []
    for t in _tools(tools, include_unavailable):
        fn: dict[str, Any] = {"name": t.name}
        desc = _description(t)
        if desc:
            fn["description"] = desc
        fn["parameters"] = input_schema(t)
        out.append({"type": "function", "function": fn} if api == "chat" else {"type": "function", **fn})
    return out


def to_anthropic_tools(
    tools: Iterable[pb.Tool] | Mapping[str, pb.Tool],
    *,
    include_unavailable: bool = False,
    defer_loading: bool = False,
    always_loaded: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Anthropic Messages API tool definitions, sorted by name:
    ``{"name", "description", "input_schema"}`` with the tool's exact input
    JSON Schema. Arguments as for ``to_openai_tools``; ``tools`` may be the
    result of ``search_tools`` (a searched subset).

    With ``defer_loading``, every tool except those named in
    ``always_loaded`` carries ``"defer_loading": true``: for Anthropic's
    tool search, which loads a deferred tool's definition only once a search
    finds it (the request must then also carry a tool-search tool)."""
    keep = set(always_loaded)
    out: list[dict[str, Any]] = []
    for t in _tools(tools, include_unavailable):
        d: dict[str, Any] = {"name": t.name}
        desc = _description(t)
        if desc:
            d["description"] = desc
        d["input_schema"] = input_schema(t)
        if defer_loading and t.name not in keep:
            d["defer_loading"] = True
        out.append(d)
    return out


@dataclass(frozen=True)
class CallResult:
    """A tool's result.

    ``is_error`` is the tool's own failure (data for the model, not an RPC
    error). ``content`` is the list of ``toolsvc.v1.Content`` messages in
    upstream order; ``text`` joins their text parts. ``structured_content``
    and ``meta`` are plain dicts (integers kept as integers) or None.
    """

    content: list[pb.Content]
    structured_content: dict[str, Any] | None
    is_error: bool
    meta: dict[str, Any] | None
    raw: pb.CallToolResponse = field(repr=False)

    @property
    def text(self) -> str:
        """The text of every text content item, joined by newlines."""
        return "\n".join(c.text.text for c in self.content if c.WhichOneof("content") == "text")

    @classmethod
    def from_proto(cls, r: pb.CallToolResponse) -> CallResult:
        return cls(
            content=list(r.content),
            structured_content=from_struct(r.structured_content) if r.HasField("structured_content") else None,
            is_error=r.is_error,
            meta=from_struct(r.meta) if r.HasField("meta") else None,
            raw=r,
        )


@dataclass(frozen=True)
class Progress:
    """A progress notification of a streaming call."""

    progress: float
    total: float | None
    message: str

    @classmethod
    def from_proto(cls, p: pb.CallToolProgress) -> Progress:
        return cls(progress=p.progress, total=p.total if p.HasField("total") else None, message=p.message)


# One encoder for every call: json.dumps with any non-default option builds
# a new JSONEncoder each time (a few µs a call, clients/python/bench).
_encode_arguments = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def arguments_json(arguments: Mapping[str, Any] | str | bytes | None) -> str:
    """The request's arguments_json: a mapping is encoded as JSON (integers
    exact, whatever their size); str/bytes are JSON text sent as is."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, bytes):
        return arguments.decode("utf-8")
    if isinstance(arguments, str):
        return arguments
    return _encode_arguments(arguments)
