"""toolsvc: a typed Python client for the toolsvc gRPC tool-dispatch service.

    import toolsvc

    with toolsvc.Client("localhost:50051") as c:
        tools = c.list_tools()                        # every page
        openai_tools = toolsvc.to_openai_tools(tools)  # or to_anthropic_tools
        r = c.call_tool("demo__add", {"a": 2, "b": 40})
        print(r.structured_content, r.text, r.is_error)
        t = c.call_tool("build__run", {}, task=True)  # a Task, when the upstream runs tasks
        if isinstance(t, toolsvc.Task):
            r = c.wait_task(t, on_status=print)       # resumes on any replica

``toolsvc.aio`` has the same API for asyncio. Errors are ``ToolsvcError``.
The generated messages and stubs are in ``toolsvc.v1``.
"""

from toolsvc._client import CatalogWatcher, Client, SearchResults, ServerList, ToolList
from toolsvc._common import LOAD_BALANCING_SERVICE_CONFIG, EventKind, RetryPolicy, WatchEvent
from toolsvc._convert import (
    CallResult,
    Progress,
    from_struct,
    input_schema,
    output_schema,
    to_anthropic_tools,
    to_openai_tools,
)
from toolsvc._errors import FieldViolation, ToolsvcError, WatchProtocolError
from toolsvc._input import (
    ElicitationAnswer,
    ElicitationRequest,
    ElicitationURLRequest,
    InputAnswer,
    InputRequest,
    RootsAnswer,
    RootsRequest,
    SamplingAnswer,
    SamplingRequest,
)
from toolsvc._tasks import Task, TaskCancelledError, TaskFailedError, TaskOptions, TaskStatus
from toolsvc.v1.toolsvc_pb2 import Tool

__version__ = "0.1.0"

__all__ = [
    "LOAD_BALANCING_SERVICE_CONFIG",
    "CallResult",
    "CatalogWatcher",
    "Client",
    "ElicitationAnswer",
    "ElicitationRequest",
    "ElicitationURLRequest",
    "EventKind",
    "FieldViolation",
    "InputAnswer",
    "InputRequest",
    "Progress",
    "RetryPolicy",
    "RootsAnswer",
    "RootsRequest",
    "SamplingAnswer",
    "SamplingRequest",
    "SearchResults",
    "ServerList",
    "Task",
    "TaskCancelledError",
    "TaskFailedError",
    "TaskOptions",
    "TaskStatus",
    "Tool",
    "ToolList",
    "ToolsvcError",
    "WatchEvent",
    "WatchProtocolError",
    "from_struct",
    "input_schema",
    "output_schema",
    "to_anthropic_tools",
    "to_openai_tools",
]
