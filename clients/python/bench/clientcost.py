"""CPU per call of the toolsvc package against its own generated stub.

Interleaved rounds on one channel: Client.call_tool (the package: arguments
to JSON, the request, the result wrapper) and stub.CallTool with a request
built once (grpcio alone), at 1 and 32 concurrent asyncio callers. Prints
one JSON line of agent CPU µs per call per round. The difference is what the
package adds; the rest is grpcio's own floor.

    python clients/python/bench/clientcost.py HOST:PORT [TOOL]
"""

import asyncio
import json
import sys
import time

from toolsvc import aio
from toolsvc.v1 import toolsvc_pb2 as pb

TARGET = sys.argv[1]
TOOL = sys.argv[2] if len(sys.argv) > 2 else "s__echo"


async def main() -> None:
    async with aio.Client(TARGET) as client:
        req = pb.CallToolRequest(name=TOOL, arguments_json=json.dumps({"text": "hello"}))

        async def pkg() -> None:
            r = await client.call_tool(TOOL, {"text": "hello"})
            assert r.text == "hello", r.text

        async def stub() -> None:
            await client.stub.CallTool(req)

        async def run(fn, n: int, workers: int) -> float:
            left = [n]

            async def worker() -> None:
                while left[0] > 0:
                    left[0] -= 1
                    await fn()

            c0 = time.process_time()
            await asyncio.gather(*(worker() for _ in range(workers)))
            return (time.process_time() - c0) / n * 1e6

        paths = {"pkg": pkg, "stub": stub}
        for w in (1, 32):
            for fn in paths.values():
                await run(fn, 300, w)
        out: dict = {p: {"1": [], "32": []} for p in paths}
        for rnd in range(5):
            for w in (1, 32):
                for p in (["pkg", "stub"] if rnd % 2 == 0 else ["stub", "pkg"]):
                    out[p][str(w)].append(round(await run(paths[p], 2000, w), 1))
        print(json.dumps(out))


asyncio.run(main())
