"""Client-side load balancing over toolsvc replicas in Python with the
toolsvc package: toolsvc.LOAD_BALANCING_SERVICE_CONFIG (the same as
examples/lb/service_config.json: round_robin over every address the target
resolves to, health-checked subchannels, channel retries of UNAVAILABLE on
ListTools, ListServers and WatchCatalog). call_tool retries by itself only
when the server says the call was never dispatched (toolsvc.RetryPolicy).

    balanced.py TARGET CALLS TOOL [ARGS_JSON]

TARGET: dns:///toolsvc-headless.tools.svc.cluster.local:50051 in Kubernetes,
or ipv4:127.0.0.1:50051,127.0.0.1:50052 locally.
"""
import sys

import toolsvc


def main(target, calls, tool, args_json="{}"):
    with toolsvc.Client(target, service_config=toolsvc.LOAD_BALANCING_SERVICE_CONFIG) as client:
        tools = client.list_tools()  # retried by the channel
        print("revision", tools.revision, "tools", len(tools))
        for _ in range(int(calls)):
            client.call_tool(tool, args_json, timeout=30)
        print("calls", calls, "ok")


if __name__ == "__main__":
    main(*sys.argv[1:])
