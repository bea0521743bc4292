#!/usr/bin/python3
"""Client-side load balancing over toolsvc replicas in Python: the channel
reads examples/lb/service_config.json (round_robin over every address the
target resolves to, health-checked subchannels, retries of UNAVAILABLE on
ListTools, ListServers and WatchCatalog); CallTool is retried by hand, and
only when that cannot run the tool twice.

    balanced.py TARGET CALLS TOOL [ARGS_JSON]

TARGET: dns:///toolsvc-headless.tools.svc.cluster.local:50051 in Kubernetes,
or ipv4:127.0.0.1:50051,127.0.0.1:50052 locally. Stubs as for client.py.
"""
import os
import random
import sys
import time

import grpc

from toolsvc.v1 import toolsvc_pb2 as pb
from toolsvc.v1 import toolsvc_pb2_grpc as rpc

SERVICE_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lb", "service_config.json")

try:  # grpcio-status (pip) gives the ErrorInfo reason; without it only idempotent calls are retried.
    from google.rpc import error_details_pb2
    from grpc_status import rpc_status
except ImportError:
    rpc_status = None


def not_dispatched(err):
    """True when the server says the call never reached the tool."""
    if err.code() != grpc.StatusCode.UNAVAILABLE or rpc_status is None:
        return False
    st = rpc_status.from_call(err)
    for d in st.details if st else []:
        info = error_details_pb2.ErrorInfo()
        if d.Unpack(info):
            return info.reason in ("SHUTTING_DOWN", "CIRCUIT_OPEN") or (
                info.reason == "UPSTREAM_UNAVAILABLE" and info.metadata.get("unavailable_reason") == "no_session")
    return False


def call_tool(stub, req, idempotent):
    backoff = 0.05
    for attempt in range(1, 6):
        try:
            return stub.CallTool(req, timeout=30)
        except grpc.RpcError as err:
            retry = not_dispatched(err) or (idempotent and err.code() == grpc.StatusCode.UNAVAILABLE)
            if attempt == 5 or not retry:
                raise
            time.sleep(backoff / 2 + random.random() * backoff / 2)
            backoff *= 2


def main(target, calls, tool, args_json="{}"):
    with open(SERVICE_CONFIG) as f:
        service_config = f.read()
    options = [("grpc.service_config", service_config), ("grpc.enable_retries", 1)]
    with grpc.insecure_channel(target, options=options) as channel:
        stub = rpc.ToolServiceStub(channel)
        page = stub.ListTools(pb.ListToolsRequest(), timeout=10)  # retried by the channel
        print("revision", page.revision, "tools", len(page.tools))
        # idempotent=True: this example calls a read-only tool.
        for _ in range(int(calls)):
            call_tool(stub, pb.CallToolRequest(name=tool, arguments_json=args_json), idempotent=True)
        print("calls", calls, "ok")


if __name__ == "__main__":
    main(*sys.argv[1:])
