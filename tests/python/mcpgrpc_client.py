"""A client of the MCP gRPC binding (model_context_protocol.Mcp) built only
from the published package mcp-grpc-transport-proto and grpcio
(scripts/python/mcpgrpc.txt), run against toolsvc by tests/mcpgrpc_test.go.

Usage: mcpgrpc_client.py ADDR TOKEN STEPS_JSON

STEPS_JSON is a list of steps, each {"rpc": NAME, ...}; the client runs them
in order and prints one JSON list with one outcome per step. Every request
carries the routing header the binding's comments say a client adds (mcp_tool,
mcp_prompt, mcp_resource) unless the step sets "header" (a value to send
instead) and the client's capabilities (elicitation form and URL, sampling,
roots) in common.metadata, as a 2026-07-28 request's _meta does. A request
answered with result_type INPUT_REQUIRED is answered and retried with
input_responses and request_state, up to 8 rounds: a form with {"name":
"Ada"}, a URL with accept, sampling with "hi there", roots with file:///work.

An outcome is {"error": {code, reason, message, metadata, fields}} for a
refusal, else what the step's response says (see run()).
"""

import json
import sys

import grpc
from google.protobuf import struct_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from mcp_grpc_transport_proto import mcp_messages_pb2 as m
from mcp_grpc_transport_proto import mcp_pb2_grpc

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"


def common(step, state=None, responses=None):
    md = struct_pb2.Struct()
    md.update(
        {
            VERSION_KEY: step.get("version", "2026-07-28"),
            CAPS_KEY: {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}},
        }
    )
    c = m.RequestFields(metadata=md)
    if state is not None:
        c.request_state = state
    for k, v in (responses or {}).items():
        c.input_responses[k].CopyFrom(v)
    return c


def answer(req, asked):
    if req.HasField("elicit_request"):
        e = req.elicit_request
        if e.HasField("url_mode"):
            asked.append("elicitation_url")
            assert e.url_mode.url.startswith("https://login.example/"), e.url_mode.url
            return m.InputResponse(elicit_result=m.ElicitResult(type=m.ElicitResult.TYPE_ACCEPT))
        asked.append("elicitation")
        assert "name" in e.requested_schema, dict(e.requested_schema)
        content = struct_pb2.Struct()
        content.update({"name": "Ada"})
        return m.InputResponse(elicit_result=m.ElicitResult(type=m.ElicitResult.TYPE_ACCEPT, content=content))
    if req.HasField("sampling_create_message"):
        asked.append("sampling")
        assert len(req.sampling_create_message.messages) > 0
        msg = m.SamplingMessage(role=m.ROLE_ASSISTANT, text=m.TextContent(text="hi there"))
        return m.InputResponse(
            sampling_create_message_result=m.SamplingCreateMessageResult(message=msg, model="test-model")
        )
    if req.HasField("list_roots_request"):
        asked.append("roots")
        return m.InputResponse(
            root_list_result=m.ListRootsResult(roots=[m.ListRootsResult.Root(uri="file:///work", name="work")])
        )
    raise AssertionError("an input request of no kind: %s" % req)


def rounds(call, make, step):
    """Calls make(common) until the result is complete; returns it and what was asked."""
    asked, state, responses = [], None, None
    for _ in range(8):
        res = call(make(common(step, state, responses)))
        if res.common.result_type != m.RESULT_TYPE_INPUT_REQUIRED:
            return res, asked
        assert res.common.HasField("request_state") and res.common.request_state, res.common
        state = res.common.request_state
        responses = {k: answer(v, asked) for k, v in sorted(res.common.input_requests.items())}
    raise AssertionError("still input_required after 8 rounds")


def error_of(err):
    out = {"code": err.code().name, "message": err.details(), "reason": "", "metadata": {}, "fields": []}
    st = rpc_status.from_call(err)
    for d in st.details if st else []:
        if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            d.Unpack(info)
            out["reason"], out["metadata"] = info.reason, dict(info.metadata)
        elif d.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            br = error_details_pb2.BadRequest()
            d.Unpack(br)
            out["fields"] = [v.field for v in br.field_violations]
    return out


def texts(contents):
    out = []
    for c in contents:
        if c.HasField("text"):
            out.append(c.text.text)
        elif c.HasField("embedded_resource"):
            out.append(c.embedded_resource.contents.text)
        elif c.HasField("resource_link"):
            out.append(c.resource_link.uri)
    return out


def lists(res, items):
    return {
        "items": items,
        "ttl_ms": res.ttl.ToMilliseconds() if res.HasField("ttl") else None,
        "cache_scope": m.CacheScope.Name(res.cache_scope),
        "version": res.common.metadata[VERSION_KEY] if VERSION_KEY in res.common.metadata else None,
        "result_type": m.ResultType.Name(res.common.result_type),
    }


def run(stub, token, step):
    rpc = step["rpc"]
    md = [("authorization", "Bearer " + token)] if token else []

    def header(name, value):
        v = step.get("header", value)
        return md + ([(name, v)] if v is not None else [])

    if rpc == "ListTools":
        res = stub.ListTools(m.ListToolsRequest(common=common(step)), metadata=md, timeout=60)
        return lists(res, sorted(t.name for t in res.tools))
    if rpc == "ListResources":
        res = stub.ListResources(m.ListResourcesRequest(common=common(step)), metadata=md, timeout=60)
        return lists(res, sorted(r.uri for r in res.resources))
    if rpc == "ListResourceTemplates":
        res = stub.ListResourceTemplates(m.ListResourceTemplatesRequest(common=common(step)), metadata=md, timeout=60)
        return lists(res, sorted(t.uri_template for t in res.resource_templates))
    if rpc == "ListPrompts":
        res = stub.ListPrompts(m.ListPromptsRequest(common=common(step)), metadata=md, timeout=60)
        return lists(res, sorted(p.name for p in res.prompts))
    if rpc == "CallTool":
        args = struct_pb2.Struct()
        args.update(step.get("arguments", {}))
        req = m.CallToolRequest.Request(name=step["name"], arguments=args)
        res, asked = rounds(
            lambda r: stub.CallTool(r, metadata=header("mcp_tool", step["name"]), timeout=60),
            lambda c: m.CallToolRequest(common=c, request=req),
            step,
        )
        return {"text": "".join(texts(res.content)), "is_error": res.is_error, "asked": asked}
    if rpc == "GetPrompt":
        res, asked = rounds(
            lambda r: stub.GetPrompt(r, metadata=header("mcp_prompt", step["name"]), timeout=60),
            lambda c: m.GetPromptRequest(common=c, name=step["name"], arguments=step.get("arguments", {})),
            step,
        )
        return {"text": "".join(x.text.text for x in res.messages), "asked": asked}
    if rpc == "ReadResource":
        res, asked = rounds(
            lambda r: stub.ReadResource(r, metadata=header("mcp_resource", step["uri"]), timeout=60),
            lambda c: m.ReadResourceRequest(common=c, uri=step["uri"]),
            step,
        )
        return {
            "text": "".join(c.text for c in res.resource),
            "asked": asked,
            "cache_scope": m.CacheScope.Name(res.cache_scope),
        }
    if rpc == "Complete":
        req = m.CompletionRequest(
            common=common(step), argument=m.CompletionRequest.Argument(name=step["argument"], value=step["value"])
        )
        if "prompt" in step:
            req.prompt_reference.name = step["prompt"]
            named = step["prompt"]
        else:
            req.resource_reference.uri = step["template"]
            named = step["template"]
        res = stub.Complete(req, metadata=header("mcp_resource", named), timeout=60)
        return {"values": list(res.values), "has_more": res.has_more}
    raise AssertionError("unknown rpc " + rpc)


def main() -> None:
    addr, token, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    out = []
    with grpc.insecure_channel(addr) as ch:
        stub = mcp_pb2_grpc.McpStub(ch)
        for step in steps:
            try:
                out.append(run(stub, token, step))
            except grpc.RpcError as err:
                out.append({"error": error_of(err)})
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
