"""Tools that ask: the typed requests an upstream sends its caller mid-call,
the answers a caller gives, and their conversion to and from the API's
messages (docs/interactive.md)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

import grpc

from toolsvc._errors import ToolsvcError
from toolsvc.v1 import toolsvc_pb2 as pb

__all__ = [
    "DEFAULT_MAX_INPUT_ROUNDS",
    "INPUT_KINDS",
    "AsyncInputHandler",
    "ElicitationAnswer",
    "ElicitationRequest",
    "ElicitationURLRequest",
    "InputAnswer",
    "InputHandler",
    "InputKind",
    "InputRequest",
    "RootsAnswer",
    "RootsRequest",
    "SamplingAnswer",
    "SamplingRequest",
]

InputKind = Literal["elicitation", "elicitation_url", "sampling", "roots"]
INPUT_KINDS: tuple[InputKind, ...] = ("elicitation", "elicitation_url", "sampling", "roots")

#: The rounds of input ``call_tool`` answers before it gives up.
DEFAULT_MAX_INPUT_ROUNDS = 16


@dataclass(frozen=True)
class ElicitationRequest:
    """Fill in a form: show ``message`` and ask for the fields of
    ``requested_schema`` (a JSON Schema object of flat, primitive
    properties). Answer with ``ElicitationAnswer``."""

    message: str
    requested_schema: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class ElicitationURLRequest:
    """Send the user to ``url`` (to log in, to pay); answer
    ``ElicitationAnswer("accept")`` once they went (or decline/cancel)."""

    message: str
    url: str
    elicitation_id: str
    id: str = ""


@dataclass(frozen=True)
class SamplingRequest:
    """Run the caller's model: ``params`` are the MCP ``sampling/createMessage``
    params (messages, maxTokens, systemPrompt, ...). Answer with
    ``SamplingAnswer``."""

    params: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class RootsRequest:
    """List the caller's roots. Answer with ``RootsAnswer``."""

    id: str = ""


@dataclass(frozen=True)
class ElicitationAnswer:
    """The user's answer to an elicitation: ``action`` is ``"accept"``,
    ``"decline"`` or ``"cancel"``; ``content`` the form's values (accept of a
    form only)."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


@dataclass(frozen=True)
class SamplingAnswer:
    """The model's answer: the MCP ``sampling/createMessage`` result, e.g.
    ``{"role": "assistant", "content": {"type": "text", "text": "..."},
    "model": "m", "stopReason": "endTurn"}``."""

    result: dict[str, Any]


@dataclass(frozen=True)
class RootsAnswer:
    """The caller's roots: ``(uri, name)`` pairs (name may be ``""``), or
    bare URIs."""

    roots: Sequence[tuple[str, str] | str] = field(default_factory=list)


InputRequest = Union[ElicitationRequest, ElicitationURLRequest, SamplingRequest, RootsRequest]
InputAnswer = Union[ElicitationAnswer, SamplingAnswer, RootsAnswer]
#: Called once per request of a round, in order; returns its answer.
InputHandler = Callable[[InputRequest], InputAnswer]
#: The asyncio client's handler: a coroutine function, or a plain one.
AsyncInputHandler = Callable[[InputRequest], Union[Awaitable[InputAnswer], InputAnswer]]


def capabilities(kinds: Iterable[str] | None) -> pb.InputCapabilities:
    """The InputCapabilities for ``kinds`` (None: all of them)."""
    ks = list(INPUT_KINDS if kinds is None else kinds)
    bad = [k for k in ks if k not in INPUT_KINDS]
    if bad:
        raise ValueError(f"input_kinds: unknown kind(s) {bad}; known: {list(INPUT_KINDS)}")
    if not ks:
        raise ValueError("input_kinds: empty (leave on_input unset to let the server's policy answer)")
    caps = pb.InputCapabilities()
    for k in ks:
        setattr(caps, k, True)
    return caps


def _json_object(text: str, what: str) -> dict[str, Any]:
    if not text:
        return {}
    v = json.loads(text)
    if not isinstance(v, dict):
        raise ToolsvcError(grpc.StatusCode.INTERNAL, f"{what} is not a JSON object")
    return v


def from_proto(r: pb.InputRequest) -> InputRequest:
    """The typed request of an InputRequest."""
    kind = r.WhichOneof("request")
    if kind == "elicitation":
        e = r.elicitation
        return ElicitationRequest(e.message, _json_object(e.requested_schema_json, "requested_schema_json"), r.id)
    if kind == "elicitation_url":
        u = r.elicitation_url
        return ElicitationURLRequest(u.message, u.url, u.elicitation_id, r.id)
    if kind == "sampling":
        return SamplingRequest(_json_object(r.sampling.params_json, "params_json"), r.id)
    if kind == "roots":
        return RootsRequest(r.id)
    raise ToolsvcError(grpc.StatusCode.UNIMPLEMENTED, f"input request {r.id!r}: unknown kind (a newer server?)")


def to_proto(req: InputRequest, answer: object) -> pb.InputResponse:
    """The InputResponse answering ``req``; TypeError when ``answer`` is not
    of the request's kind."""
    if isinstance(req, (ElicitationRequest, ElicitationURLRequest)) and isinstance(answer, ElicitationAnswer):
        content = "" if answer.content is None else json.dumps(answer.content, separators=(",", ":"), ensure_ascii=False)
        return pb.InputResponse(
            id=req.id, elicitation=pb.ElicitationResponse(action=answer.action, content_json=content)
        )
    if isinstance(req, SamplingRequest) and isinstance(answer, SamplingAnswer):
        result = json.dumps(answer.result, separators=(",", ":"), ensure_ascii=False)
        return pb.InputResponse(id=req.id, sampling=pb.SamplingResponse(result_json=result))
    if isinstance(req, RootsRequest) and isinstance(answer, RootsAnswer):
        roots = [pb.Root(uri=r) if isinstance(r, str) else pb.Root(uri=r[0], name=r[1]) for r in answer.roots]
        return pb.InputResponse(id=req.id, roots=pb.RootsResponse(roots=roots))
    want = {
        ElicitationRequest: "ElicitationAnswer",
        ElicitationURLRequest: "ElicitationAnswer",
        SamplingRequest: "SamplingAnswer",
        RootsRequest: "RootsAnswer",
    }[type(req)]
    raise TypeError(f"on_input answered {type(req).__name__} with {type(answer).__name__}; want {want}")


def rounds_exceeded(name: str, rounds: int) -> ToolsvcError:
    return ToolsvcError(
        grpc.StatusCode.ABORTED,
        f"call_tool {name}: the tool still asks for input after {rounds} rounds (max_input_rounds)",
        reason="INPUT_ROUNDS_EXCEEDED",
    )
