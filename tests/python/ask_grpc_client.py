"""The Python client package (clients/python) calling tools that ask through
toolsvc's gRPC API with ``call_tool(..., on_input=...)``
(tests/interactive_sdks_test.go).

Usage: ask_grpc_client.py ADDR TOOL...

Answers: a form with {name: "Py"}, a URL with accept, sampling with "hi
from py", roots with file:///py. Prints one JSON object: what it was asked
("elicitation", "elicitation_url", "sampling", "roots", in order) and each
tool's result text (a tool error as "error: ...").
"""

import json
import sys

import toolsvc


def main() -> None:
    addr, *tools = sys.argv[1:]
    out: dict = {"asked": [], "results": {}}

    def on_input(req: toolsvc.InputRequest) -> toolsvc.InputAnswer:
        if isinstance(req, toolsvc.ElicitationRequest):
            out["asked"].append("elicitation")
            assert "name" in req.requested_schema["properties"], req.requested_schema
            return toolsvc.ElicitationAnswer("accept", {"name": "Py"})
        if isinstance(req, toolsvc.ElicitationURLRequest):
            out["asked"].append("elicitation_url")
            assert req.url.startswith("https://login.example/"), req.url
            return toolsvc.ElicitationAnswer("accept")
        if isinstance(req, toolsvc.SamplingRequest):
            out["asked"].append("sampling")
            return toolsvc.SamplingAnswer(
                {"role": "assistant", "content": {"type": "text", "text": "hi from py"}, "model": "py-model"}
            )
        out["asked"].append("roots")
        return toolsvc.RootsAnswer([("file:///py", "py")])

    with toolsvc.Client(addr) as client:
        for name in tools:
            res = client.call_tool(name, {}, timeout=60, on_input=on_input)
            out["results"][name] = ("error: " + res.text) if res.is_error else res.text
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
