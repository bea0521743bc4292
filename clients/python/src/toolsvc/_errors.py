"""ToolsvcError: every failed RPC, with the server's google.rpc.Status details."""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

import grpc
from grpc_status import rpc_status

# googleapis-common-protos (a grpcio-status dependency) has .pyi files but no
# py.typed, and types-protobuf's google-stubs hides them from type checkers:
# import its modules untyped.
error_details_pb2: Any = importlib.import_module("google.rpc.error_details_pb2")
status_pb2: Any = importlib.import_module("google.rpc.status_pb2")

__all__ = ["FieldViolation", "ToolsvcError", "WatchProtocolError", "from_rpc_error", "named_as_given"]

# ErrorInfo reasons after which toolsvc guarantees the call never reached the
# tool (service/errors.go, mcpbridge): the replica is shutting down, the
# upstream's breaker is open, or there is no session to send it on (or the
# catalog is still being discovered).
_NOT_DISPATCHED_REASONS = frozenset({"SHUTTING_DOWN", "CIRCUIT_OPEN"})
_NOT_DISPATCHED_UNAVAILABLE = frozenset({"no_session", "starting"})


class FieldViolation(NamedTuple):
    """One google.rpc.BadRequest field violation: the request field (for
    arguments, the JSON path under them: "arguments.count" when the call
    was given a dict, "arguments_json.count" when it was given JSON text)
    and what is wrong with it."""

    field: str
    description: str


class ToolsvcError(Exception):
    """A failed toolsvc RPC.

    Attributes:
        code: the gRPC status code (``grpc.StatusCode``).
        message: the status message.
        reason: the ``google.rpc.ErrorInfo`` reason (``"TOOL_NOT_FOUND"``,
            ``"ARGUMENTS_INVALID"``, ...; docs/errors.md), or ``None`` when the
            status carries none (a deadline that passed in the client, a
            gRPC-level refusal, a connection that could not be made).
        domain: the ErrorInfo domain (``"toolsvc.dev"``), or ``None``.
        metadata: the ErrorInfo metadata (``tool``, ``server``,
            ``unavailable_reason``, ``deadline_source``, ...).
        field_violations: the ``google.rpc.BadRequest`` violations naming the
            offending fields.
        retry_delay: seconds from ``google.rpc.RetryInfo``, when the server
            knows when a retry may succeed.
    """

    code: grpc.StatusCode
    message: str
    reason: str | None
    domain: str | None
    metadata: dict[str, str]
    field_violations: list[FieldViolation]
    retry_delay: float | None

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        *,
        reason: str | None = None,
        domain: str | None = None,
        metadata: dict[str, str] | None = None,
        field_violations: list[FieldViolation] | None = None,
        retry_delay: float | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.reason = reason
        self.domain = domain
        self.metadata = dict(metadata or {})
        self.field_violations = list(field_violations or [])
        self.retry_delay = retry_delay
        super().__init__(str(self))

    def __str__(self) -> str:
        head = self.code.name
        if self.reason and self.reason != self.code.name:
            head += " " + self.reason
        text = f"{head}: {self.message}" if self.message else head
        for v in self.field_violations:
            if v.field and v.description and v.description not in self.message:
                text += f" [{v.field}: {v.description}]"
        return text

    def __repr__(self) -> str:
        return (
            f"ToolsvcError(code={self.code!r}, message={self.message!r}, reason={self.reason!r}, "
            f"metadata={self.metadata!r}, field_violations={self.field_violations!r}, "
            f"retry_delay={self.retry_delay!r})"
        )

    @property
    def not_dispatched(self) -> bool:
        """True when the server says the call never reached the tool and a
        retry may succeed, so it is safe to retry any tool, idempotent or not:
        ``UNAVAILABLE`` with reason ``SHUTTING_DOWN`` (retry on another
        replica), ``CIRCUIT_OPEN`` (after ``retry_delay``), or
        ``UPSTREAM_UNAVAILABLE`` with ``unavailable_reason`` ``no_session``
        or ``starting``; ``RESOURCE_EXHAUSTED`` with reason ``RATE_LIMITED``
        and a ``retry_delay`` (the caller's own rate limit). Any other
        ``UNAVAILABLE`` (``session_lost``, a broken connection) may mean the
        tool ran."""
        if self.domain != "toolsvc.dev":
            return False
        if self.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            return self.reason == "RATE_LIMITED" and self.retry_delay is not None
        if self.code != grpc.StatusCode.UNAVAILABLE:
            return False
        if self.reason in _NOT_DISPATCHED_REASONS:
            return True
        return (
            self.reason == "UPSTREAM_UNAVAILABLE"
            and self.metadata.get("unavailable_reason") in _NOT_DISPATCHED_UNAVAILABLE
        )


def named_as_given(e: ToolsvcError, arguments: object) -> ToolsvcError:
    """e with its paths into the arguments named as the caller gave them.
    The package sends a dict (or None) as ``arguments_json`` text, so the
    server names ``arguments_json.a``; a caller that passed a dict is told
    ``arguments.a``. JSON text given as a string keeps the server's name."""
    if isinstance(arguments, (str, bytes)):
        return e

    def rename(path: str) -> str:
        if path == "arguments_json" or path.startswith(("arguments_json.", "arguments_json[")):
            return "arguments" + path[len("arguments_json") :]
        return path

    vs = [FieldViolation(rename(v.field), v.description) for v in e.field_violations]
    if vs == e.field_violations:
        return e
    e.field_violations = vs
    if e.message.startswith("arguments_json"):
        e.message = "arguments" + e.message[len("arguments_json") :]
    e.args = (str(e),)
    return e


class WatchProtocolError(ToolsvcError):
    """The server sent a watch event the contract does not allow (changes
    before a snapshot, synced to another revision, an event without a
    revision). The watch stops; code is INTERNAL and reason None."""

    def __init__(self, message: str) -> None:
        super().__init__(grpc.StatusCode.INTERNAL, "watch protocol violation: " + message)


def _status_of(err: grpc.RpcError) -> Any:
    try:
        st: Any = rpc_status.from_call(err)
    except ValueError:  # details that disagree with the status: ignore them
        return None
    return st if isinstance(st, status_pb2.Status) else None


def past_deadline(e: ToolsvcError, deadline: float | None, now: float) -> ToolsvcError:
    """A call whose stream the server reset as the caller's deadline passed
    (grpc-go resets it with RST_STREAM CANCEL the moment the deadline it was
    sent passes) can reach grpcio before grpcio's own timer: grpcio then says
    CANCELLED. Past the caller's deadline that is DEADLINE_EXCEEDED."""
    if e.code == grpc.StatusCode.CANCELLED and deadline is not None and now >= deadline:
        return ToolsvcError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
    return e


def from_rpc_error(err: grpc.RpcError) -> ToolsvcError:
    """Converts a grpc.RpcError (sync or grpc.aio) into a ToolsvcError,
    reading ErrorInfo, BadRequest and RetryInfo from the status details."""
    code_fn = getattr(err, "code", None)
    details_fn = getattr(err, "details", None)
    code = code_fn() if callable(code_fn) else grpc.StatusCode.UNKNOWN
    message = details_fn() if callable(details_fn) else str(err)
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    e = ToolsvcError(code, message or "")
    st = _status_of(err)
    if st is not None:
        for d in st.details:
            if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                d.Unpack(info)
                e.reason, e.domain, e.metadata = info.reason, info.domain, dict(info.metadata)
            elif d.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                br = error_details_pb2.BadRequest()
                d.Unpack(br)
                e.field_violations.extend(FieldViolation(v.field, v.description) for v in br.field_violations)
            elif d.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                ri = error_details_pb2.RetryInfo()
                d.Unpack(ri)
                e.retry_delay = ri.retry_delay.seconds + ri.retry_delay.nanos / 1e9
    e.args = (str(e),)
    return e
