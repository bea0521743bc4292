"""The asyncio client: the same API as ``toolsvc.Client`` on ``grpc.aio``.

    async with toolsvc.aio.Client("localhost:50051") as c:
        tools = await c.list_tools()
        r = await c.call_tool("demo__add", {"a": 2, "b": 40})
        async for m in c.call_tool_stream("demo__sleep", {"ms": 300}): ...
        w = c.watch()            # runs as a task on the running loop
        async for ev in w: ...   # await w.close() to stop

Coroutines instead of blocking calls; ``close()`` of the client and of a
watcher are coroutines too. Create the client inside the event loop that
uses it.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, overload

import grpc
from grpc import aio as grpc_aio

from toolsvc._client import (
    Arguments,
    SearchResults,
    ServerList,
    ToolList,
    _list_request,
    _page_token_expired,
    _search_request,
    _watch_request,
)
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
    stream_ended,
    watch_retryable,
)
from toolsvc._convert import CallResult, Progress, arguments_json
from toolsvc._errors import ToolsvcError, from_rpc_error, named_as_given, past_deadline
from toolsvc._input import (
    DEFAULT_MAX_INPUT_ROUNDS,
    AsyncInputHandler,
    InputAnswer,
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

__all__ = ["AsyncCatalogWatcher", "Client"]


class Client:
    """``toolsvc.Client`` for asyncio; the same arguments."""

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
        self.channel: grpc_aio.Channel = (
            grpc_aio.secure_channel(target, creds, options=args)
            if creds
            else grpc_aio.insecure_channel(target, options=args)
        )
        self.stub = rpc.ToolServiceStub(self.channel)
        self.retry = retry
        self._md = grpc_aio.Metadata(*auth_metadata(token))

    async def close(self) -> None:
        """Closes the channel; RPCs in flight are cancelled."""
        await self.channel.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def list_tools(
        self, *, page_size: int = 1000, schema_format: SchemaFormat = "json", timeout: float | None = 30.0
    ) -> ToolList:
        """Every tool of the catalog (all pages, one revision), sorted by name."""
        for attempt in range(3):
            out: list[pb.Tool] = []
            token, revision = "", ""
            try:
                while True:
                    page: pb.ListToolsResponse = await self.stub.ListTools(
                        _list_request(page_size, token, schema_format), timeout=timeout, metadata=self._md
                    )
                    out.extend(page.tools)
                    revision = revision or page.revision
                    token = page.next_page_token
                    if not token:
                        return ToolList(out, revision)
            except grpc.RpcError as err:
                e = from_rpc_error(err)
                if attempt < 2 and token and _page_token_expired(e):
                    continue
                raise e from None
        raise AssertionError("unreachable")

    async def search_tools(
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
        """The tools that best match a free-text query, best first; see
        ``toolsvc.Client.search_tools``."""
        req = _search_request(
            query, limit, servers, read_only, destructive, idempotent, open_world, name_glob, schema_format
        )
        try:
            r: pb.SearchToolsResponse = await self.stub.SearchTools(req, timeout=timeout, metadata=self._md)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return SearchResults(r)

    async def list_servers(self, *, timeout: float | None = 30.0) -> ServerList:
        """Every configured upstream and its state, sorted by name."""
        try:
            r: pb.ListServersResponse = await self.stub.ListServers(
                pb.ListServersRequest(), timeout=timeout, metadata=self._md
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return ServerList(r.servers, r.config if r.HasField("config") else None)

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Arguments = None,
        *,
        timeout: float | None = None,
        on_input: AsyncInputHandler | None = None,
        input_kinds: Iterable[InputKind] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        task: Literal[False] = False,
    ) -> CallResult: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Arguments = None,
        *,
        timeout: float | None = None,
        on_input: AsyncInputHandler | None = None,
        input_kinds: Iterable[InputKind] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        task: Literal[True] | TaskOptions,
    ) -> CallResult | Task: ...

    async def call_tool(
        self,
        name: str,
        arguments: Arguments = None,
        *,
        timeout: float | None = None,
        on_input: AsyncInputHandler | None = None,
        input_kinds: Iterable[InputKind] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        task: bool | TaskOptions = False,
    ) -> CallResult | Task:
        """Calls a tool; see ``toolsvc.Client.call_tool`` (``task`` too: a
        ``Task`` when the upstream runs the call as one). ``on_input`` may be
        a coroutine function (awaited) or a plain one."""
        req = pb.CallToolRequest(name=name, arguments_json=arguments_json(arguments))
        opts = task_options(task)
        if opts is not None:
            req.task.CopyFrom(opts)
        if on_input is None:
            r0 = await self._call(req, timeout, arguments)
            return Task.from_proto(r0.task) if r0.HasField("task") else CallResult.from_proto(r0)
        req.input_capabilities.CopyFrom(capabilities(input_kinds))
        for _ in range(max_input_rounds + 1):
            r = await self._call(req, timeout, arguments)
            if r.HasField("task"):
                return Task.from_proto(r.task)
            if not r.HasField("input_required"):
                return CallResult.from_proto(r)
            answers: list[pb.InputResponse] = []
            for x in r.input_required.requests:
                q = input_from_proto(x)
                answers.append(input_to_proto(q, await _answer(on_input, q)))
            del req.input_responses[:]
            req.input_responses.extend(answers)
            req.request_state = r.input_required.request_state
        raise rounds_exceeded(name, max_input_rounds)

    async def _call(
        self, req: pb.CallToolRequest, timeout: float | None, arguments: Arguments
    ) -> pb.CallToolResponse:
        deadline = None if timeout is None else time.monotonic() + timeout
        attempt = 0
        while True:
            attempt += 1
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                r: pb.CallToolResponse = await self.stub.CallTool(req, timeout=remaining, metadata=self._md)
                return r
            except grpc.RpcError as err:
                e = past_deadline(from_rpc_error(err), deadline, time.monotonic())
            remaining = None if deadline is None else deadline - time.monotonic()
            d = self.retry.delay(e, attempt, remaining)
            if d is None:
                raise named_as_given(e, arguments)
            await asyncio.sleep(d)

    async def get_task(self, task: str | Task, *, timeout: float | None = 30.0) -> Task:
        """The task's state; see ``toolsvc.Client.get_task``."""
        try:
            r: pb.GetTaskResponse = await self.stub.GetTask(
                pb.GetTaskRequest(handle=handle_of(task)), timeout=timeout, metadata=self._md
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return Task.from_proto(r.task, r.result if r.HasField("result") else None, r.error if r.HasField("error") else None)

    async def cancel_task(self, task: str | Task, *, timeout: float | None = 30.0) -> Task:
        """Cancels the task; see ``toolsvc.Client.cancel_task``."""
        try:
            r: pb.CancelTaskResponse = await self.stub.CancelTask(
                pb.CancelTaskRequest(handle=handle_of(task)), timeout=timeout, metadata=self._md
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return Task.from_proto(r.task)

    async def list_tasks(self, *, server: str | None = None, timeout: float | None = 30.0) -> list[Task]:
        """The caller's tasks; see ``toolsvc.Client.list_tasks``."""
        try:
            r: pb.ListTasksResponse = await self.stub.ListTasks(
                pb.ListTasksRequest(server=server or ""), timeout=timeout, metadata=self._md
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return [Task.from_proto(t) for t in r.tasks]

    async def update_task(
        self,
        task: str | Task,
        answers: Iterable[tuple[InputRequest, InputAnswer]],
        *,
        timeout: float | None = 30.0,
    ) -> Task:
        """Answers a task's input requests; see ``toolsvc.Client.update_task``."""
        req = pb.UpdateTaskRequest(handle=handle_of(task))
        req.input_responses.extend(input_to_proto(q, a) for q, a in answers)
        try:
            r: pb.UpdateTaskResponse = await self.stub.UpdateTask(req, timeout=timeout, metadata=self._md)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        return Task.from_proto(r.task)

    async def wait_task(
        self,
        task: str | Task,
        *,
        on_status: Callable[[Task], Any] | None = None,
        on_input: AsyncInputHandler | None = None,
        timeout: float | None = None,
        min_backoff: float = 0.1,
        max_backoff: float = 5.0,
        on_retry: Callable[[ToolsvcError, float], None] | None = None,
    ) -> CallResult:
        """Follows the task to its end, resuming the watch when it breaks;
        see ``toolsvc.Client.wait_task``. ``on_status`` and ``on_input`` may
        be coroutine functions (awaited) or plain ones. Cancelling the
        coroutine stops the watch, not the task."""
        handle = handle_of(task)
        follow = TaskFollow(min_backoff, max_backoff)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            call = self.stub.WatchTask(pb.WatchTaskRequest(handle=handle), timeout=remaining, metadata=self._md)
            follow.streams += 1
            delivered = False
            try:
                async for m in call:
                    delivered = True
                    changed = follow.changed(m)
                    if changed is not None and on_status is not None:
                        x = on_status(changed)
                        if inspect.isawaitable(x):
                            await x
                    if is_terminal(m):
                        return outcome(m)
                    asked = follow.to_answer(m)
                    if asked and on_input is not None:
                        answers = [(q, await _answer(on_input, q)) for q in asked]
                        try:
                            await self.update_task(handle, answers, timeout=remaining)
                        except ToolsvcError as e:
                            if not update_refused_harmlessly(e):
                                raise
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
            await asyncio.sleep(d)

    async def call_tool_stream(
        self, name: str, arguments: Arguments = None, *, timeout: float | None = None
    ) -> AsyncIterator[Progress | CallResult]:
        """Calls a tool, yielding ``Progress`` as it comes, then the
        ``CallResult``; see ``toolsvc.Client.call_tool_stream``. Closing the
        generator (``aclose()``, ``contextlib.aclosing``) cancels the call."""
        req = pb.CallToolStreamRequest(name=name, arguments_json=arguments_json(arguments))
        deadline = None if timeout is None else time.monotonic() + timeout
        attempt = 0
        while True:
            attempt += 1
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            call = self.stub.CallToolStream(req, timeout=remaining, metadata=self._md)
            received = False
            try:
                async for m in call:
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
                call.cancel()
            remaining = None if deadline is None else deadline - time.monotonic()
            d = None if received else self.retry.delay(e, attempt, remaining)
            if d is None:
                raise named_as_given(e, arguments)
            await asyncio.sleep(d)

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
    ) -> AsyncCatalogWatcher:
        """Starts watching the catalog in a task on the running loop; see
        ``AsyncCatalogWatcher`` and ``toolsvc.Client.watch``."""
        return AsyncCatalogWatcher(
            self,
            _watch_request(servers, exclude_unavailable, schema_format),
            CatalogState(resume_token, initial),
            Backoff(min_backoff, max_backoff),
            max_pending,
            on_retry,
        )


async def _answer(on_input: AsyncInputHandler, q: InputRequest) -> InputAnswer:
    a = on_input(q)
    if inspect.isawaitable(a):
        a = await a
    return a


class AsyncCatalogWatcher:
    """``toolsvc.CatalogWatcher`` for asyncio: the watch runs as a task,
    ``catalog`` is always current, ``async for ev in watcher`` yields the
    events, ``await watcher.close()`` stops it."""

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
        self._events: collections.deque[WatchEvent] = collections.deque()
        self._wake = asyncio.Event()
        self._ready = asyncio.Event()
        self._done = False
        self._closed = False
        self._got = False
        self.error: ToolsvcError | None = None
        #: WatchCatalog streams opened so far.
        self.streams = 0
        self._task = asyncio.get_running_loop().create_task(self._run(), name="toolsvc-watch")

    @property
    def catalog(self) -> dict[str, pb.Tool]:
        """The local catalog: exposed name -> Tool (a new dict after each change)."""
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

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Waits until the first event was applied; False on timeout. Raises
        ``error`` if the watch failed."""
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        if self.error is not None:
            raise self.error
        return self._got

    async def close(self) -> None:
        """Stops the watch; iteration ends."""
        self._closed = True
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._done = True
        self._wake.set()

    async def __aenter__(self) -> AsyncCatalogWatcher:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    def __aiter__(self) -> AsyncCatalogWatcher:
        return self

    async def __anext__(self) -> WatchEvent:
        ev = await self.get()
        if ev is None:
            raise StopAsyncIteration
        return ev

    async def get(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event; None when closed or after ``timeout`` seconds.
        Raises ``error`` once the watch failed and earlier events were read."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._events:
                return self._events.popleft()
            if self._done:
                if self.error is not None:
                    raise self.error
                return None
            self._wake.clear()
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return None
            try:
                await asyncio.wait_for(self._wake.wait(), left)
            except asyncio.TimeoutError:
                return None

    def _push(self, ev: WatchEvent) -> None:
        if len(self._events) >= self._max_pending:
            self._events.clear()
            ev = self._state.reset_event()
        self._events.append(ev)
        self._wake.set()

    async def _run(self) -> None:
        try:
            while not self._closed:
                delivered, err = await self._stream()
                if self._closed:
                    return
                if not watch_retryable(err):
                    self.error = err
                    return
                d = self._backoff.next(delivered)
                if self._on_retry is not None:
                    self._on_retry(err, d)
                await asyncio.sleep(d)
        finally:
            self._done = True
            self._ready.set()
            self._wake.set()

    async def _stream(self) -> tuple[bool, ToolsvcError]:
        tok = self._state.resume_token()
        req = pb.WatchCatalogRequest()
        req.CopyFrom(self._req)
        req.resume_token = tok
        delivered = False
        self.streams += 1
        try:
            call = self._client.stub.WatchCatalog(req, metadata=self._client._md)
        except (ValueError, grpc_aio.UsageError) as e:  # the client's channel was closed
            return False, ToolsvcError(grpc.StatusCode.CANCELLED, f"watch stopped: {e}")
        try:
            async for m in call:
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
        except ToolsvcError as e:
            return delivered, e
        except asyncio.CancelledError:
            task = asyncio.current_task()
            cancelling = getattr(task, "cancelling", None)  # Python 3.11+
            if self._closed or (cancelling is not None and cancelling()):
                raise
            # Not our close(): grpc.aio cancels the calls of a channel that
            # was closed.
            return delivered, ToolsvcError(grpc.StatusCode.CANCELLED, "watch stopped: the client's channel was closed")
        finally:
            self._state.drop_parts()  # an unfinished event goes with its stream
            call.cancel()

