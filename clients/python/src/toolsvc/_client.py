"""The blocking client."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, overload

import grpc

from toolsvc._common import (
    Backoff,
    CatalogState,
    ChannelTLS,
    RetryPolicy,
    SchemaFormat,
    WatchEvent,
    auth_metadata,
    channel_args,
    channel_credentials,
    set_schema_format,
    stream_ended,
    watch_retryable,
)
from toolsvc._convert import CallResult, Progress, arguments_json
from toolsvc._errors import ToolsvcError, from_rpc_error, named_as_given, past_deadline
from toolsvc._input import (
    DEFAULT_MAX_INPUT_ROUNDS,
    InputAnswer,
    InputHandler,
    InputKind,
    InputRequest,
    capabilities,
    rounds_exceeded,
)
from toolsvc._input import from_proto as input_from_proto
from toolsvc._input import to_proto as input_to_proto
from toolsvc._tasks import (
    Task,
    TaskFollow,
    TaskOptions,
    handle_of,
    is_terminal,
    outcome,
    task_options,
    update_refused_harmlessly,
    watch_ended_early,
    watch_resumable,
)
from toolsvc.v1 import toolsvc_pb2 as pb
from toolsvc.v1 import toolsvc_pb2_grpc as rpc

__all__ = ["CatalogWatcher", "Client", "SearchResults", "ServerList", "ToolList"]

Arguments = Mapping[str, Any] | str | bytes | None


class ToolList(list[pb.Tool]):
    """The whole catalog from ``list_tools``; ``revision`` is the catalog
    revision every page came from."""

    revision: str

    def __init__(self, tools: Iterable[pb.Tool] = (), revision: str = "") -> None:
        super().__init__(tools)
        self.revision = revision


class SearchResults(list[pb.Tool]):
    """The tools ``search_tools`` found, best first (a list of Tool, so the
    format helpers take it as it is); ``scores`` maps each name to its score
    and ``revision`` is the catalog revision they were ranked on."""

    revision: str
    scores: dict[str, float]

    def __init__(self, response: pb.SearchToolsResponse | None = None) -> None:
        results = list(response.results) if response is not None else []
        super().__init__(r.tool for r in results)
        self.revision = response.revision if response is not None else ""
        self.scores = {r.tool.name: r.score for r in results}


def _search_request(
    query: str,
    limit: int | None,
    servers: Sequence[str] | None,
    read_only: bool | None,
    destructive: bool | None,
    idempotent: bool | None,
    open_world: bool | None,
    name_glob: str | None,
    schema_format: SchemaFormat,
) -> pb.SearchToolsRequest:
    req = pb.SearchToolsRequest(query=query, limit=limit or 0, servers=list(servers or ()), name_glob=name_glob or "")
    hints = {"read_only": read_only, "destructive": destructive, "idempotent": idempotent, "open_world": open_world}
    for k, v in hints.items():
        if v is not None:
            setattr(req.hints, k, v)
    set_schema_format(req, schema_format)
    return req


class ServerList(list[pb.Server]):
    """The upstreams from ``list_servers``; ``config`` is the configuration
    status (None with the built-in demo, or for a non-admin when auth is on)."""

    config: pb.ConfigStatus | None

    def __init__(self, servers: Iterable[pb.Server] = (), config: pb.ConfigStatus | None = None) -> None:
        super().__init__(servers)
        self.config = config


def _list_request(page_size: int, token: str, schema_format: SchemaFormat) -> pb.ListToolsRequest:
    req = pb.ListToolsRequest(page_size=page_size, page_token=token)
    set_schema_format(req, schema_format)
    return req


def _page_token_expired(e: ToolsvcError) -> bool:
    return e.code == grpc.StatusCode.INVALID_ARGUMENT and any(v.field == "page_token" for v in e.field_violations)


class Client:
    """A toolsvc client on one gRPC channel (thread-safe; share it).

    Args:
        target: a gRPC target: ``"localhost:50051"``, ``"dns:///toolsvc-headless.tools.svc.cluster.local:50051"``,
            ``"ipv4:127.0.0.1:50051,127.0.0.1:50052"``.
        token: a bearer token, sent as ``authorization: Bearer ...`` on every RPC.
        tls: None for plaintext, True for TLS with the system roots, or ``grpc.ChannelCredentials``.
        service_config: a gRPC service config (dict or JSON text), such as
            ``toolsvc.LOAD_BALANCING_SERVICE_CONFIG`` for client-side balancing over replicas.
        retry: when calls retry by themselves (``RetryPolicy``; ``RetryPolicy(max_attempts=1)``: never).
        options: extra gRPC channel arguments.
    """

    def __init__(
        self,
        target: str,
        *,
        token: str | None = None,
        tls: ChannelTLS = None,
        service_config: Mapping[str, Any] | str | None = None,
        retry: RetryPolicy = RetryPolicy(),
        options: Sequence[tuple[str, Any]] | None = None,
    ) -> None:
        args = channel_args(service_config, options)
        creds = channel_credentials(tls)
        self.channel: grpc.Channel = (
            grpc.secure_channel(target, creds, options=args) if creds else grpc.insecure_channel(target, options=args)
        )
        self.stub = rpc.ToolServiceStub(self.channel)
        self.retry = retry
        self._md = auth_metadata(token)

    def close(self) -> None:
        """Closes the channel; RPCs in flight are cancelled."""
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def list_tools(
        self, *, page_size: int = 1000, schema_format: SchemaFormat = "json", timeout: float | None = 30.0
    ) -> ToolList:
        """Every tool of the catalog (all pages, one revision), sorted by name.
        ``timeout`` applies to each page."""
        for attempt in range(3):
            out: list[pb.Tool] = []
            token, revision = "", ""
            try:
                while True:
                    page = self.stub.ListTools(
                        _list_request(page_size, token, schema_format), timeout=timeout, metadata=self._md
                    )
                    out.extend(page.tools)
                    revision = revision or page.revision
                    token = page.next_page_token
                    if not token:
                        return ToolList(out, revision)
            except grpc.RpcError as err:
                e = from_rpc_error(err)
                # The revision of the listing was forgotten between pages
                # (a busy catalog): start again, as docs/calls.md says.
                if attempt < 2 and token and _page_token_expired(e):
                    continue
                raise e from None
        raise AssertionError("unreachable")

    def search_tools(
        self,
        query: str,
        *,
        limit: int | None = None,
        servers: Sequence[str] | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
        name_glob: str | None = None,
        schema_format: SchemaFormat = "json",
        timeout: float | None = 30.0,
    ) -> SearchResults:
        """The tools that best match a free-text query, best first (at most
        ``limit``, default 10, at most 100), among those the caller may see;
        the filters narrow by server, hint (None: any) and exposed-name glob.
        Pass the result to ``to_openai_tools`` / ``to_anthropic_tools`` to give
        a model only these tools."""
        req = _search_request(
            query, limit, servers, read_only, destructive, idempotent, open_world, name_glob, schema_format
        )
        try:
            return SearchResults(self.stub.SearchTools(req, timeout=timeout, metadata=self._md))
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None

    def list_servers(self, *, timeout: float | None = 30.0) -> ServerList:
        """Every configured upstream and its state, sorted by name."""
        try:
            r = self.stub.ListServers(pb.ListServersRequest(), timeout=timeout, metadata=self._md)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return ServerList(r.servers, r.config if r.HasField("config") else None)

    @overload
    def call_tool(
        self,
        name: str,
        arguments: Arguments = None,
        *,
        timeout: float | None = None,
        on_input: InputHandler | None = None,
        input_kinds: Iterable[InputKind] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        task: Literal[False] = False,
    ) -> CallResult: ...

    @overload
    def call_tool(
        self,
        name: str,
        arguments: Arguments = None,
        *,
        timeout: float | None = None,
        on_input: InputHandler | None = None,
        input_kinds: Iterable[InputKind] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        task: Literal[True] | TaskOptions,
    ) -> CallResult | Task: ...

    def call_tool(
        self,
        name: str,
        arguments: Arguments = None,
        *,
        timeout: float | None = None,
        on_input: InputHandler | None = None,
        input_kinds: Iterable[InputKind] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        task: bool | TaskOptions = False,
    ) -> CallResult | Task:
        """Calls a tool by its exposed name. ``arguments`` is a dict (sent as
        JSON, integers exact) or JSON text. ``timeout`` (seconds) is the
        call's deadline, retries included; without it the server's
        callTimeout applies. A tool's own failure is ``result.is_error``;
        everything else raises ``ToolsvcError``.

        Tools that ask (docs/interactive.md): with ``on_input``, the call
        offers ``input_kinds`` (default all: ``elicitation``,
        ``elicitation_url``, ``sampling``, ``roots``); when the tool asks,
        ``on_input`` is called once per request (``ElicitationRequest``,
        ``ElicitationURLRequest``, ``SamplingRequest``, ``RootsRequest``) and
        returns its answer (``ElicitationAnswer``, ``SamplingAnswer``,
        ``RootsAnswer``), and the call goes on with the answers, up to
        ``max_input_rounds`` rounds (then ``ToolsvcError`` with reason
        ``INPUT_ROUNDS_EXCEEDED``). ``timeout`` then applies to each round,
        not to the time ``on_input`` takes. What ``on_input`` raises ends the
        call and propagates. Without ``on_input`` the server's policy answers
        the tool.

        Tasks (docs/tasks.md): with ``task=True`` or ``TaskOptions(ttl=...)``
        the call asks to run as an upstream task. When the upstream and the
        tool can, the call returns a ``Task`` at once (follow it with
        ``wait_task``, ``get_task``; stop it with ``cancel_task``); otherwise
        the call runs as usual and returns its ``CallResult``: check with
        ``isinstance``."""
        req = pb.CallToolRequest(name=name, arguments_json=arguments_json(arguments))
        opts = task_options(task)
        if opts is not None:
            req.task.CopyFrom(opts)
        if on_input is None:
            r0 = self._call(req, timeout, arguments)
            return Task.from_proto(r0.task) if r0.HasField("task") else CallResult.from_proto(r0)
        req.input_capabilities.CopyFrom(capabilities(input_kinds))
        for _ in range(max_input_rounds + 1):
            r = self._call(req, timeout, arguments)
            if r.HasField("task"):
                return Task.from_proto(r.task)
            if not r.HasField("input_required"):
                return CallResult.from_proto(r)
            asked = [input_from_proto(x) for x in r.input_required.requests]
            del req.input_responses[:]
            req.input_responses.extend(input_to_proto(q, on_input(q)) for q in asked)
            req.request_state = r.input_required.request_state
        raise rounds_exceeded(name, max_input_rounds)

    def _call(
        self, req: pb.CallToolRequest, timeout: float | None, arguments: Arguments
    ) -> pb.CallToolResponse:
        deadline = None if timeout is None else time.monotonic() + timeout
        attempt = 0
        while True:
            attempt += 1
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                r: pb.CallToolResponse = self.stub.CallTool(req, timeout=remaining, metadata=self._md)
                return r
            except grpc.RpcError as err:
                e = past_deadline(from_rpc_error(err), deadline, time.monotonic())
            remaining = None if deadline is None else deadline - time.monotonic()
            d = self.retry.delay(e, attempt, remaining)
            if d is None:
                raise named_as_given(e, arguments)
            time.sleep(d)

    def get_task(self, task: str | Task, *, timeout: float | None = 30.0) -> Task:
        """The task's state (by handle, or a ``Task``); once it has ended,
        with its ``result`` or ``error``. Raises ``ToolsvcError``:
        ``TASK_HANDLE_INVALID``, ``TASK_NOT_YOURS``, ``TASK_NOT_FOUND``, ..."""
        try:
            r: pb.GetTaskResponse = self.stub.GetTask(
                pb.GetTaskRequest(handle=handle_of(task)), timeout=timeout, metadata=self._md
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return Task.from_proto(r.task, r.result if r.HasField("result") else None, r.error if r.HasField("error") else None)

    def cancel_task(self, task: str | Task, *, timeout: float | None = 30.0) -> Task:
        """Asks the upstream to cancel the task; returns its state after.
        Cancelling an ended task changes nothing and is no error."""
        try:
            r: pb.CancelTaskResponse = self.stub.CancelTask(
                pb.CancelTaskRequest(handle=handle_of(task)), timeout=timeout, metadata=self._md
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return Task.from_proto(r.task)

    def list_tasks(self, *, server: str | None = None, timeout: float | None = 30.0) -> list[Task]:
        """The caller's own tasks that this replica created or served, newest
        first, with their last known state; only ``server``'s when given."""
        try:
            r: pb.ListTasksResponse = self.stub.ListTasks(
                pb.ListTasksRequest(server=server or ""), timeout=timeout, metadata=self._md
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return [Task.from_proto(t) for t in r.tasks]

    def update_task(
        self,
        task: str | Task,
        answers: Iterable[tuple[InputRequest, InputAnswer]],
        *,
        timeout: float | None = 30.0,
    ) -> Task:
        """Answers the input requests of a task whose status is
        INPUT_REQUIRED (``task.input_requests``): ``(request, answer)``
        pairs; a partial answer is allowed. Returns the task's state after.
        ``TASK_NOT_WAITING`` (FAILED_PRECONDITION) when it does not wait."""
        req = pb.UpdateTaskRequest(handle=handle_of(task))
        req.input_responses.extend(input_to_proto(q, a) for q, a in answers)
        try:
            r: pb.UpdateTaskResponse = self.stub.UpdateTask(req, timeout=timeout, metadata=self._md)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return Task.from_proto(r.task)

    def wait_task(
        self,
        task: str | Task,
        *,
        on_status: Callable[[Task], None] | None = None,
        on_input: InputHandler | None = None,
        timeout: float | None = None,
        min_backoff: float = 0.1,
        max_backoff: float = 5.0,
        on_retry: Callable[[ToolsvcError, float], None] | None = None,
    ) -> CallResult:
        """Follows the task with WatchTask until it ends and returns its
        result (a tool's own failure is ``result.is_error``), or raises
        ``TaskFailedError`` (the upstream's error, typed as the call's would
        be) or ``TaskCancelledError``.

        A watch that breaks (UNAVAILABLE: a replica going away, a broken
        connection) is resumed by calling WatchTask again with the same
        handle, on any replica the channel reaches, after a jittered backoff
        from ``min_backoff`` to ``max_backoff`` seconds (``on_retry(err,
        delay)`` is told). Other errors are raised. ``on_status(task)`` is
        called with the first state and every change of status or status
        message. When the task waits for input (``INPUT_REQUIRED``),
        ``on_input`` answers each request (as ``call_tool``'s) and the
        answers go to ``update_task``; without it the task waits for someone
        else to answer. What ``on_status`` or ``on_input`` raises ends the
        wait and propagates (the task goes on). ``timeout`` bounds the whole
        wait (then DEADLINE_EXCEEDED; the task goes on)."""
        handle = handle_of(task)
        follow = TaskFollow(min_backoff, max_backoff)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            call = self.stub.WatchTask(pb.WatchTaskRequest(handle=handle), timeout=remaining, metadata=self._md)
            follow.streams += 1
            delivered = False
            try:
                for m in call:
                    delivered = True
                    changed = follow.changed(m)
                    if changed is not None and on_status is not None:
                        on_status(changed)
                    if is_terminal(m):
                        return outcome(m)
                    asked = follow.to_answer(m)
                    if asked and on_input is not None:
                        self._answer_task(handle, asked, on_input, remaining)
                err = watch_ended_early()
            except grpc.RpcError as e:
                err = from_rpc_error(e)
            finally:
                call.cancel()
            if not watch_resumable(err):
                raise err
            d = follow.backoff(delivered, err)
            if deadline is not None and time.monotonic() + d >= deadline:
                raise err
            if on_retry is not None:
                on_retry(err, d)
            time.sleep(d)

    def _answer_task(
        self, handle: str, asked: list[InputRequest], on_input: InputHandler, timeout: float | None
    ) -> None:
        try:
            self.update_task(handle, [(q, on_input(q)) for q in asked], timeout=timeout)
        except ToolsvcError as e:
            if not update_refused_harmlessly(e):
                raise

    def call_tool_stream(
        self, name: str, arguments: Arguments = None, *, timeout: float | None = None
    ) -> Iterator[Progress | CallResult]:
        """Calls a tool and yields its progress (``Progress``) as it comes, then
        the ``CallResult`` last. Closing the generator early cancels the call
        (the upstream is sent notifications/cancelled)."""
        req = pb.CallToolStreamRequest(name=name, arguments_json=arguments_json(arguments))
        deadline = None if timeout is None else time.monotonic() + timeout
        attempt = 0
        while True:
            attempt += 1
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            call = self.stub.CallToolStream(req, timeout=remaining, metadata=self._md)
            received = False
            try:
                for m in call:
                    received = True
                    if m.WhichOneof("event") == "progress":
                        yield Progress.from_proto(m.progress)
                    else:
                        yield CallResult.from_proto(m.result)
                        return
                raise ToolsvcError(grpc.StatusCode.INTERNAL, "call stream ended without a result")
            except grpc.RpcError as err:
                e = from_rpc_error(err)
            finally:
                call.cancel()  # a no-op once the stream finished
            remaining = None if deadline is None else deadline - time.monotonic()
            d = None if received else self.retry.delay(e, attempt, remaining)
            if d is None:
                raise named_as_given(e, arguments)
            time.sleep(d)

    def watch(
        self,
        *,
        servers: Sequence[str] = (),
        exclude_unavailable: bool = False,
        schema_format: SchemaFormat = "json",
        resume_token: str | None = None,
        initial: Iterable[pb.Tool] | None = None,
        min_backoff: float = 0.1,
        max_backoff: float = 10.0,
        max_pending: int = 1024,
        on_retry: Callable[[ToolsvcError, float], None] | None = None,
    ) -> CatalogWatcher:
        """Starts watching the catalog in a background thread; see
        ``CatalogWatcher``. ``servers`` and ``exclude_unavailable`` select the
        view. ``resume_token`` with ``initial`` (the tools you hold at that
        revision) starts from a catalog you already have."""
        return CatalogWatcher(
            self,
            _watch_request(servers, exclude_unavailable, schema_format),
            CatalogState(resume_token, initial),
            Backoff(min_backoff, max_backoff),
            max_pending,
            on_retry,
        )


_CLOSED = object()


class CatalogWatcher:
    """Keeps ``catalog`` (exposed name -> ``toolsvc.v1.Tool``) equal to the
    server's view at ``revision``, in a background thread, resuming from the
    last revision (on any replica) with jittered backoff whenever a stream
    ends. It stops on ``close()`` or when the server rejects the request
    (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, UNAUTHENTICATED, ...:
    ``error`` is then set, and iteration raises it).

    Iterate to receive the ``WatchEvent`` s as they are applied (the catalog
    already includes each event when you get it). Events wait for you in a
    queue; a reader more than ``max_pending`` events behind gets one RESET
    event with the whole catalog in place of the ones it missed. ``catalog``
    is a new dict after each change, never modified in place: read it any
    time without locking, do not modify it.
    """

    def __init__(
        self,
        client: Client,
        req: pb.WatchCatalogRequest,
        state: CatalogState,
        backoff: Backoff,
        max_pending: int,
        on_retry: Callable[[ToolsvcError, float], None] | None,
    ) -> None:
        self._client, self._req, self._state, self._backoff = client, req, state, backoff
        self._max_pending = max(1, max_pending)
        self._on_retry = on_retry
        self._cond = threading.Condition()
        self._events: collections.deque[WatchEvent | object] = collections.deque()
        self._closed = threading.Event()
        self._ready = threading.Event()
        self._got = False  # an event was applied
        self._call: Any = None
        self.error: ToolsvcError | None = None
        #: WatchCatalog streams opened so far.
        self.streams = 0
        self._thread = threading.Thread(target=self._run, name="toolsvc-watch", daemon=True)
        self._thread.start()

    @property
    def catalog(self) -> dict[str, pb.Tool]:
        """The local catalog: exposed name -> Tool."""
        return self._state.catalog

    @property
    def revision(self) -> str:
        """The revision of ``catalog`` ("" before the first event)."""
        return self._state.revision

    @property
    def view(self) -> tuple[dict[str, pb.Tool], str]:
        """``(catalog, revision)``, read together (another thread may apply an
        event between reading ``catalog`` and ``revision``)."""
        return self._state.view

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Waits until the catalog holds the server's view (the first event
        applied); False on timeout. Raises ``error`` if the watch failed."""
        self._ready.wait(timeout)
        if self.error is not None:
            raise self.error
        return self._got

    def close(self) -> None:
        """Stops the watch and its thread; iteration ends."""
        self._closed.set()
        with self._cond:
            call = self._call
            self._cond.notify_all()
        if call is not None:
            call.cancel()
        if threading.current_thread() is not self._thread:
            self._thread.join(10)

    def __enter__(self) -> CatalogWatcher:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[WatchEvent]:
        return self

    def __next__(self) -> WatchEvent:
        ev = self.get()
        if ev is None:
            raise StopIteration
        return ev

    def get(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event; None when the watcher is closed, or after
        ``timeout`` seconds without one. Raises ``error`` once the watch
        failed and every event before the failure was read."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._events:
                    item = self._events.popleft()
                    if isinstance(item, WatchEvent):
                        return item
                    self._events.appendleft(item)  # the end stays for later reads
                    if item is _CLOSED:
                        return None
                    assert isinstance(item, ToolsvcError)
                    raise item
                if self._closed.is_set():
                    return None
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(left)

    def _push(self, item: WatchEvent | object) -> None:
        with self._cond:
            if isinstance(item, WatchEvent) and len(self._events) >= self._max_pending:
                self._events.clear()
                item = self._state.reset_event()
            self._events.append(item)
            self._cond.notify_all()

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            self._ready.set()  # wake wait_ready: it reports the outcome
            self._push(self.error if self.error is not None else _CLOSED)

    def _loop(self) -> None:
        while not self._closed.is_set():
            delivered, err = self._stream()
            if self._closed.is_set():
                return
            if not watch_retryable(err):
                self.error = err
                return
            d = self._backoff.next(delivered)
            if self._on_retry is not None:
                self._on_retry(err, d)
            if self._closed.wait(d):
                return

    def _stream(self) -> tuple[bool, ToolsvcError]:
        tok = self._state.resume_token()
        req = pb.WatchCatalogRequest()
        req.CopyFrom(self._req)
        req.resume_token = tok
        delivered = False
        with self._cond:
            if self._closed.is_set():
                return False, stream_ended()
            try:
                call = self._client.stub.WatchCatalog(req, metadata=self._client._md)
            except ValueError as e:  # the client's channel was closed
                return False, ToolsvcError(grpc.StatusCode.CANCELLED, f"watch stopped: {e}")
            self._call = call
            self.streams += 1
        try:
            for m in call:
                ev = self._state.receive(m, resumed=not delivered and tok != "")
                if ev is None:
                    continue  # a part of a split event: applied with its last part
                delivered = True
                self._got = True
                self._ready.set()
                self._push(ev)
            return delivered, stream_ended()
        except grpc.RpcError as err:
            return delivered, from_rpc_error(err)
        except ToolsvcError as e:  # a protocol violation
            return delivered, e
        finally:
            # The parts of an unfinished event go with the stream, however it
            # ended: the catalog stays at its revision, which the next stream
            # resumes from.
            self._state.drop_parts()
            call.cancel()
            with self._cond:
                self._call = None


def _watch_request(servers: Sequence[str], exclude_unavailable: bool, schema_format: SchemaFormat) -> pb.WatchCatalogRequest:
    # fragment: large events arrive in parts, which CatalogState assembles.
    req = pb.WatchCatalogRequest(servers=list(servers), exclude_unavailable=exclude_unavailable, fragment=True)
    set_schema_format(req, schema_format)
    return req
