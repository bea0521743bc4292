"""What the sync and asyncio clients share: channel options, the call retry
rule, and the catalog watch state machine."""

from __future__ import annotations

import enum
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import grpc

from toolsvc._errors import ToolsvcError, WatchProtocolError
from toolsvc.v1 import toolsvc_pb2 as pb

__all__ = [
    "LOAD_BALANCING_SERVICE_CONFIG",
    "EventKind",
    "RetryPolicy",
    "WatchEvent",
]

#: The service config of docs/kubernetes.md (the same as
#: examples/lb/service_config.json): round_robin over every address the
#: target resolves to (use the headless Service, ``dns:///toolsvc-headless.
#: NAMESPACE.svc.cluster.local:50051``), health-checked subchannels (a
#: draining replica stops getting new calls), and channel-level retries of
#: UNAVAILABLE for ListTools, ListServers and the opening of WatchCatalog.
#: CallTool is deliberately not in it: see RetryPolicy. Pass it as
#: ``Client(target, service_config=toolsvc.LOAD_BALANCING_SERVICE_CONFIG)``.
LOAD_BALANCING_SERVICE_CONFIG: Mapping[str, Any] = {
    "loadBalancingConfig": [{"round_robin": {}}],
    "healthCheckConfig": {"serviceName": "toolsvc.v1.ToolService"},
    "methodConfig": [
        {
            "name": [
                {"service": "toolsvc.v1.ToolService", "method": "ListTools"},
                {"service": "toolsvc.v1.ToolService", "method": "ListServers"},
                {"service": "toolsvc.v1.ToolService", "method": "WatchCatalog"},
            ],
            "retryPolicy": {
                "maxAttempts": 4,
                "initialBackoff": "0.1s",
                "maxBackoff": "1s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
            },
        }
    ],
}

#: Largest message the client accepts by default (toolsvc's default
#: --max-response-bytes is 4 MiB; clients must accept results that large).
DEFAULT_MAX_RECEIVE_BYTES = 64 << 20

ChannelTLS = bool | grpc.ChannelCredentials | None


def channel_args(
    service_config: Mapping[str, Any] | str | None,
    options: Sequence[tuple[str, Any]] | None,
) -> list[tuple[str, Any]]:
    opts: list[tuple[str, Any]] = [("grpc.max_receive_message_length", DEFAULT_MAX_RECEIVE_BYTES)]
    if service_config is not None:
        text = service_config if isinstance(service_config, str) else json.dumps(service_config)
        opts += [("grpc.service_config", text), ("grpc.enable_retries", 1)]
    opts += list(options or ())
    return opts


def channel_credentials(tls: ChannelTLS) -> grpc.ChannelCredentials | None:
    """None: plaintext. True: TLS with the system's roots. Credentials: as given
    (``grpc.ssl_channel_credentials(root_certificates=..., private_key=...,
    certificate_chain=...)`` for a private CA or mTLS)."""
    if tls is None or tls is False:
        return None
    if tls is True:
        return grpc.ssl_channel_credentials()
    return tls


SchemaFormat = Literal["json", "struct"]


def set_schema_format(
    req: pb.ListToolsRequest | pb.WatchCatalogRequest | pb.SearchToolsRequest, fmt: SchemaFormat
) -> None:
    """Asks for schemas in ``fmt`` when this version of the API has the
    ``schema_format`` field (SCHEMA_FORMAT_JSON: exact JSON text in
    ``input_schema_json`` / ``output_schema_json``); a server without it
    ignores the field and sends Structs. ``toolsvc.input_schema(tool)`` reads
    either."""
    field = req.DESCRIPTOR.fields_by_name.get("schema_format")
    if field is None or field.enum_type is None:
        return
    value = field.enum_type.values_by_name.get("SCHEMA_FORMAT_" + fmt.upper())
    if value is not None:
        setattr(req, "schema_format", value.number)


def auth_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", "Bearer " + token),) if token else ()


@dataclass(frozen=True)
class RetryPolicy:
    """When ``call_tool`` and ``call_tool_stream`` retry by themselves.

    A call is retried only when the server says it was never dispatched to
    the tool (``ToolsvcError.not_dispatched``): ``UNAVAILABLE`` with reason
    ``SHUTTING_DOWN``, ``CIRCUIT_OPEN``, or ``UPSTREAM_UNAVAILABLE`` with
    ``unavailable_reason`` ``no_session`` / ``starting``; ``RATE_LIMITED``
    with its ``RetryInfo``. So a tool never runs
    twice because of the client: ``session_lost``, a broken connection, a
    deadline, ``OVERLOADED`` (not dispatched, but retrying adds load to a full
    upstream) and every other error are raised at once. A streaming call is
    retried only before its first message.

    The wait before attempt n+1 is the server's ``RetryInfo`` delay when it
    sent one (a delay over ``max_delay`` is not waited for: the error is
    raised), else a jittered exponential backoff from ``initial_backoff`` to
    ``max_backoff``. Retries stay within the call's ``timeout``.
    ``max_attempts=1`` turns retries off.
    """

    max_attempts: int = 4
    initial_backoff: float = 0.05
    max_backoff: float = 1.0
    max_delay: float = 5.0

    def delay(self, err: ToolsvcError, attempt: int, remaining: float | None) -> float | None:
        """Seconds to wait before retrying after ``attempt`` failed, or None
        to raise ``err``."""
        if attempt >= self.max_attempts or not err.not_dispatched:
            return None
        if err.retry_delay is not None and err.retry_delay > 0:
            if err.retry_delay > self.max_delay:
                return None
            d = err.retry_delay
        else:
            cap = min(self.max_backoff, self.initial_backoff * 2 ** (attempt - 1))
            d = cap / 2 + random.random() * cap / 2
        if remaining is not None and d >= remaining:
            return None
        return d


NO_RETRY = RetryPolicy(max_attempts=1)


class EventKind(str, enum.Enum):
    """What a watch event did to the local catalog."""

    SNAPSHOT = "snapshot"  #: replaced the catalog (the first event of a watch)
    RESET = "reset"  #: replaced it because the resume token could not be served
    CHANGES = "changes"  #: upserted and removed tools
    SYNCED = "synced"  #: the local catalog is current (after a resume)
    PROGRESS = "progress"  #: keep-alive carrying the current revision

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class WatchEvent:
    """One applied watch event. ``revision`` is the catalog revision after it
    (the resume token). ``tools`` is the whole catalog for SNAPSHOT and
    RESET; ``upserted`` and ``removed`` are set for CHANGES. ``resumed`` is
    True for the first event of a stream that resumed from a revision.
    ``raw`` is the message as received (None for the RESET the watcher
    makes itself when its reader fell ``max_pending`` events behind)."""

    kind: EventKind
    revision: str
    tools: tuple[pb.Tool, ...] = ()
    upserted: tuple[pb.Tool, ...] = ()
    removed: tuple[str, ...] = ()
    resumed: bool = False
    raw: pb.WatchCatalogResponse | None = field(default=None, repr=False)


# Codes after which a watch is not resumed: the request itself is wrong or
# not allowed (the same set as the Go catalogwatch package).
_FINAL_WATCH_CODES = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.ALREADY_EXISTS,
    }
)


def watch_retryable(err: ToolsvcError) -> bool:
    if err.code == grpc.StatusCode.CANCELLED and err.message.startswith("watch stopped:"):
        return False  # the client itself was closed
    if err.code == grpc.StatusCode.RESOURCE_EXHAUSTED and err.retry_delay is None:
        # A size limit, not a rate (which says when to retry): the server's
        # RESPONSE_TOO_LARGE for an event too large for any message, or a
        # message over this client's receive limit. A resume meets it again.
        return False
    return not isinstance(err, WatchProtocolError) and err.code not in _FINAL_WATCH_CODES


# The bound on the parts of one split event a watcher holds before applying
# it (WatchCatalogResponse.fragment): 256 MiB of encoded parts or 10,000
# parts, whichever comes first, counting every part of the event (the last one
# too). toolsvc sends parts of about 1 MiB, so the byte bound is the one a real
# catalog meets (a catalog of a quarter of a gigabyte); the part count stops a
# server that sends endless tiny parts. Going over is a WatchProtocolError:
# the watch ends, not resumed (a resume would meet it again).
MAX_EVENT_BYTES = 256 << 20
MAX_EVENT_PARTS = 10_000


class CatalogState:
    """The local catalog and its revision, as docs/watching.md
    describes. Not thread-safe by itself; ``catalog`` is a new dict
    after every event that changes it (copy on write), never mutated once
    published, so readers may use it without a lock."""

    def __init__(self, resume_token: str | None, initial: Iterable[pb.Tool] | None) -> None:
        # (catalog, revision), replaced together so that readers in other
        # threads never see one without the other.
        self.view: tuple[dict[str, pb.Tool], str] = ({}, "")
        self.have = False
        # The parts received so far of an event the server split
        # (WatchCatalogResponse.fragment); applied once the last arrives.
        self.parts: list[pb.WatchCatalogResponse] = []
        self.parts_bytes = 0  # their encoded size
        # The bounds of an event's parts (instance attributes so that a test
        # can lower them).
        self.max_event_parts = MAX_EVENT_PARTS
        self.max_event_bytes = MAX_EVENT_BYTES
        if resume_token and initial is not None:
            self.view = ({t.name: t for t in initial}, resume_token)
            self.have = True

    @property
    def catalog(self) -> dict[str, pb.Tool]:
        return self.view[0]

    @property
    def revision(self) -> str:
        return self.view[1]

    def resume_token(self) -> str:
        return self.revision if self.have else ""

    def receive(self, m: pb.WatchCatalogResponse, resumed: bool) -> WatchEvent | None:
        """Applies one message of the stream: a whole event, or a part of a
        split one (``fragment``), in which case nothing is applied (None)
        until its last part arrived, so the catalog never holds part of a
        snapshot. Parts of one event share its revision and kind; an event
        over ``max_event_parts`` parts or ``max_event_bytes`` encoded bytes is
        a protocol violation."""
        if self.parts:
            first = self.parts[0]
            if m.revision != first.revision or m.WhichOneof("event") != first.WhichOneof("event"):
                raise WatchProtocolError(
                    f"{m.WhichOneof('event')} at {m.revision} while a {first.WhichOneof('event')} at {first.revision} was in parts"
                )
        if m.fragment and m.WhichOneof("event") not in ("snapshot", "changes"):
            raise WatchProtocolError(f"{m.WhichOneof('event')} in parts")
        if not self.parts and not m.fragment:
            return self.apply(m, resumed)  # a whole event in one message
        size = self.parts_bytes + m.ByteSize()
        if len(self.parts) + 1 > self.max_event_parts or size > self.max_event_bytes:
            raise WatchProtocolError(
                f"an event in more than {self.max_event_parts} parts or {self.max_event_bytes} bytes"
                f" (part {len(self.parts) + 1}, {size} bytes so far)"
            )
        if m.fragment:
            self.parts.append(m)
            self.parts_bytes = size
            return None
        whole = pb.WatchCatalogResponse()
        for p in self.parts:
            whole.MergeFrom(p)  # appends every repeated field
        whole.MergeFrom(m)
        whole.fragment = False
        self.drop_parts()
        return self.apply(whole, resumed)

    def drop_parts(self) -> None:
        """Forgets the parts of an unfinished event (the stream ended)."""
        self.parts = []
        self.parts_bytes = 0

    def apply(self, m: pb.WatchCatalogResponse, resumed: bool) -> WatchEvent:
        rev = m.revision
        if not rev:
            raise WatchProtocolError("event without a revision")
        kind = m.WhichOneof("event")
        if kind == "snapshot":
            tools = tuple(m.snapshot.tools)
            ev = WatchEvent(EventKind.RESET if m.snapshot.reset else EventKind.SNAPSHOT, rev, tools=tools, resumed=resumed, raw=m)
            cat = {t.name: t for t in tools}
        elif kind == "changes":
            if not self.have:
                raise WatchProtocolError("changes before a snapshot")
            ups, rem = tuple(m.changes.upserted), tuple(m.changes.removed)
            cat = dict(self.catalog)
            for name in rem:
                cat.pop(name, None)
            for t in ups:
                cat[t.name] = t
            ev = WatchEvent(EventKind.CHANGES, rev, upserted=ups, removed=rem, resumed=resumed, raw=m)
        elif kind in ("synced", "progress"):
            if not self.have or rev != self.revision:
                raise WatchProtocolError(f"{kind} at {rev} while holding {self.revision!r}")
            ev = WatchEvent(EventKind.SYNCED if kind == "synced" else EventKind.PROGRESS, rev, resumed=resumed, raw=m)
            cat = self.catalog
        else:
            raise WatchProtocolError(f"unknown event {kind!r}")
        self.view, self.have = (cat, rev), True
        return ev

    def reset_event(self) -> WatchEvent:
        """A RESET event carrying the whole current catalog (for a reader that
        fell behind: it replaces the events it missed)."""
        cat, rev = self.view
        return WatchEvent(EventKind.RESET, rev, tools=tuple(sorted(cat.values(), key=lambda t: t.name)))


@dataclass
class Backoff:
    """Full-jitter exponential backoff for watch resumes (as catalogwatch)."""

    min: float = 0.1
    max: float = 10.0
    _wait: float = 0.0

    def __post_init__(self) -> None:
        self.min = max(self.min, 0.001)
        self.max = max(self.max, self.min)
        self._wait = self.min

    def next(self, delivered: bool) -> float:
        if delivered:
            self._wait = self.min
        d = random.uniform(0, self._wait)
        self._wait = min(2 * self._wait, self.max)
        return d


def stream_ended() -> ToolsvcError:
    return ToolsvcError(grpc.StatusCode.UNAVAILABLE, "watch stream ended without a status")
