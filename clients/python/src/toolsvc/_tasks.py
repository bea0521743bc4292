"""Tasks (docs/tasks.md): what the sync and asyncio clients share. A call
that asks for a task gets a ``Task`` back when the upstream runs it as one;
``wait_task`` follows it with WatchTask, calling WatchTask again with the
same handle (on any replica) whenever the stream breaks, until the task
ends."""

from __future__ import annotations

import datetime
import enum
import random
from dataclasses import dataclass, field

import grpc

from toolsvc._convert import CallResult
from toolsvc._errors import ToolsvcError
from toolsvc._input import InputRequest
from toolsvc._input import from_proto as input_from_proto
from toolsvc.v1 import toolsvc_pb2 as pb

__all__ = [
    "Task",
    "TaskCancelledError",
    "TaskFailedError",
    "TaskOptions",
    "TaskStatus",
]

_CODES = {s.value[0]: s for s in grpc.StatusCode}


class TaskStatus(str, enum.Enum):
    """Where a task is in its life."""

    UNSPECIFIED = "unspecified"
    WORKING = "working"  #: running
    INPUT_REQUIRED = "input_required"  #: waits for input (``Task.input_requests``; answer with ``update_task``)
    COMPLETED = "completed"  #: ended with a result (which may be a tool's own failure, ``is_error``)
    FAILED = "failed"  #: ended in failure: an ``is_error`` result, or an error
    CANCELLED = "cancelled"  #: cancelled; no result

    def __str__(self) -> str:
        return self.value

    @property
    def ended(self) -> bool:
        """True for COMPLETED, FAILED and CANCELLED."""
        return self in (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)

    @classmethod
    def from_proto(cls, s: int) -> TaskStatus:
        return _STATUSES.get(pb.TaskStatus.ValueType(s), TaskStatus.UNSPECIFIED)


_STATUSES: dict[pb.TaskStatus.ValueType, TaskStatus] = {
    pb.TASK_STATUS_WORKING: TaskStatus.WORKING,
    pb.TASK_STATUS_INPUT_REQUIRED: TaskStatus.INPUT_REQUIRED,
    pb.TASK_STATUS_COMPLETED: TaskStatus.COMPLETED,
    pb.TASK_STATUS_FAILED: TaskStatus.FAILED,
    pb.TASK_STATUS_CANCELLED: TaskStatus.CANCELLED,
}


@dataclass(frozen=True)
class TaskOptions:
    """Ask for a call to run as a task (``call_tool(..., task=TaskOptions(ttl=600))``).

    ``ttl`` (seconds, or a ``timedelta``) is the lifetime asked for, a hint
    the upstream may lower or ignore; None: the upstream's default."""

    ttl: float | datetime.timedelta | None = None

    def to_proto(self) -> pb.TaskOptions:
        o = pb.TaskOptions()
        if self.ttl is not None:
            secs = self.ttl.total_seconds() if isinstance(self.ttl, datetime.timedelta) else float(self.ttl)
            if secs <= 0:
                raise ValueError(f"TaskOptions.ttl must be positive, not {self.ttl!r}")
            o.ttl.FromTimedelta(datetime.timedelta(seconds=secs))
        return o


def task_options(task: bool | TaskOptions) -> pb.TaskOptions | None:
    if isinstance(task, TaskOptions):
        return task.to_proto()
    return pb.TaskOptions() if task else None


def _time(m: pb.Task, name: str) -> datetime.datetime | None:
    if not m.HasField(name):  # type: ignore[arg-type]
        return None
    ts = getattr(m, name)
    return ts.ToDatetime(tzinfo=datetime.timezone.utc)  # type: ignore[no-any-return]


def _secs(m: pb.Task, name: str) -> float | None:
    if not m.HasField(name):  # type: ignore[arg-type]
        return None
    return getattr(m, name).ToTimedelta().total_seconds()  # type: ignore[no-any-return]


def _task_error(e: pb.TaskError) -> ToolsvcError:
    return ToolsvcError(
        _CODES.get(e.code, grpc.StatusCode.UNKNOWN),
        e.message,
        reason=e.reason or None,
        domain="toolsvc.dev",
        metadata=dict(e.metadata),
    )


@dataclass(frozen=True)
class Task:
    """A task, as the upstream last reported it.

    ``handle`` names it in ``get_task``, ``wait_task``, ``cancel_task`` and
    ``update_task``, on any replica (opaque; bound to the principal that
    created it). ``task_id`` is the upstream's id (for logs, not a handle).
    ``input_requests`` are what a task with status INPUT_REQUIRED asks
    (answer them with ``update_task``). From ``get_task`` and ``wait_task``'s
    ``on_status``, an ended task carries its outcome: ``result`` (a tool's
    own failure is ``result.is_error``) or ``error`` (the status the call
    would have failed with)."""

    handle: str
    tool: str
    server: str
    task_id: str
    status: TaskStatus
    status_message: str
    protocol_version: str
    create_time: datetime.datetime | None
    update_time: datetime.datetime | None
    ttl: float | None
    poll_interval: float | None
    input_requests: tuple[InputRequest, ...] = ()
    result: CallResult | None = None
    error: ToolsvcError | None = None
    raw: pb.Task = field(default_factory=pb.Task, repr=False)

    @property
    def ended(self) -> bool:
        return self.status.ended

    @classmethod
    def from_proto(
        cls, t: pb.Task, result: pb.CallToolResponse | None = None, error: pb.TaskError | None = None
    ) -> Task:
        return cls(
            handle=t.handle,
            tool=t.tool,
            server=t.server,
            task_id=t.task_id,
            status=TaskStatus.from_proto(t.status),
            status_message=t.status_message,
            protocol_version=t.protocol_version,
            create_time=_time(t, "create_time"),
            update_time=_time(t, "update_time"),
            ttl=_secs(t, "ttl"),
            poll_interval=_secs(t, "poll_interval"),
            input_requests=tuple(input_from_proto(r) for r in t.input_required.requests),
            result=CallResult.from_proto(result) if result is not None else None,
            error=_task_error(error) if error is not None else None,
            raw=t,
        )


class TaskFailedError(ToolsvcError):
    """A task failed without a result: the upstream reported an error. The
    code, reason and metadata are those the call would have failed with;
    ``task`` is the ended task."""

    task: Task

    def __init__(self, task: Task, err: ToolsvcError) -> None:
        super().__init__(
            err.code, err.message, reason=err.reason, domain=err.domain, metadata=err.metadata
        )
        self.task = task


class TaskCancelledError(ToolsvcError):
    """The task ended cancelled (by ``cancel_task``, or the upstream):
    code CANCELLED, reason ``TASK_CANCELLED``; ``task`` is the ended task."""

    task: Task

    def __init__(self, task: Task) -> None:
        super().__init__(
            grpc.StatusCode.CANCELLED, f"task {task.task_id} on {task.server} was cancelled", reason="TASK_CANCELLED"
        )
        self.task = task


def handle_of(task: str | Task) -> str:
    return task.handle if isinstance(task, Task) else task


def outcome(m: pb.WatchTaskResponse | pb.GetTaskResponse) -> CallResult:
    """The result of an ended task, or its error raised."""
    task = Task.from_proto(
        m.task, m.result if m.HasField("result") else None, m.error if m.HasField("error") else None
    )
    if task.result is not None:
        return task.result
    if task.error is not None:
        raise TaskFailedError(task, task.error)
    if task.status == TaskStatus.CANCELLED:
        raise TaskCancelledError(task)
    raise ToolsvcError(grpc.StatusCode.INTERNAL, f"task {task.task_id} ended {task.status} without a result")


def is_terminal(m: pb.WatchTaskResponse) -> bool:
    return m.HasField("result") or m.HasField("error") or TaskStatus.from_proto(m.task.status).ended


def watch_resumable(err: ToolsvcError) -> bool:
    """A WatchTask that ended with err is called again: a broken stream or a
    replica going away (UNAVAILABLE, SHUTTING_DOWN included), and a rate
    limit that says when to come back."""
    if err.code == grpc.StatusCode.UNAVAILABLE:
        return True
    return err.code == grpc.StatusCode.RESOURCE_EXHAUSTED and err.retry_delay is not None


def watch_ended_early() -> ToolsvcError:
    return ToolsvcError(grpc.StatusCode.UNAVAILABLE, "the task watch ended before the task did")


class TaskFollow:
    """The state of one ``wait_task``: which status was last reported, which
    input rounds were answered, and the resume backoff."""

    def __init__(self, min_backoff: float, max_backoff: float) -> None:
        self.last: tuple[int, str] | None = None
        self.answered: set[tuple[str, ...]] = set()
        self.min = max(min_backoff, 0.001)
        self.max = max(max_backoff, self.min)
        self.wait = self.min
        #: WatchTask streams opened so far.
        self.streams = 0

    def changed(self, m: pb.WatchTaskResponse) -> Task | None:
        """The task when its status or message changed (a resumed watch
        repeats the current state), else None."""
        key = (m.task.status, m.task.status_message)
        if key == self.last and not is_terminal(m):
            return None
        self.last = key
        return Task.from_proto(m.task, m.result if m.HasField("result") else None, m.error if m.HasField("error") else None)

    def to_answer(self, m: pb.WatchTaskResponse) -> list[InputRequest] | None:
        """The input requests of a round not answered yet, once."""
        if m.task.status != pb.TASK_STATUS_INPUT_REQUIRED or not m.task.input_required.requests:
            return None
        key = tuple(sorted(r.id for r in m.task.input_required.requests))
        if key in self.answered:
            return None
        self.answered.add(key)
        return [input_from_proto(r) for r in m.task.input_required.requests]

    def backoff(self, delivered: bool, err: ToolsvcError) -> float:
        if delivered:
            self.wait = self.min
        d = random.uniform(0, self.wait)
        self.wait = min(2 * self.wait, self.max)
        if err.retry_delay is not None:
            d = max(d, err.retry_delay)
        return d


def update_refused_harmlessly(err: ToolsvcError) -> bool:
    """An UpdateTask refused because the task no longer waits (answered
    elsewhere meanwhile): the watch goes on."""
    return err.reason == "TASK_NOT_WAITING"

