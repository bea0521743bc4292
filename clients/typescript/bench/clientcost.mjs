// CPU per call of @toolsvc/client against its own generated stub, on the
// package's channel: client.callTool (the package: the request, retry and
// deadline handling, the ToolResult) and the ts-proto stub's callTool with a
// request built once (grpc-js alone), interleaved over 5 rounds at 1 and 32
// concurrent callers. Prints one JSON line of agent CPU µs per call per
// round; the difference is what the package adds, the rest is grpc-js's own
// floor. Needs a built package (npm run build) and a toolsvc whose tool
// s__echo echoes {"text"} (the bench upstream: docs/benchmarks.md).
//
//   node bench/clientcost.mjs HOST:PORT
import { Client } from "../dist/index.js";
import { Metadata } from "@grpc/grpc-js";
const target = process.argv[2], tool = "s__echo";
const client = new Client(target);
const raw = client["raw"];
// The generated stub with the request the package would build.
import * as gen from "../dist/gen/toolsvc/v1/toolsvc.js";
const req = gen.CallToolRequest.fromPartial({ name: tool, arguments: { text: "hello" } });
const paths = {
  pkg: async () => { const r = await client.callTool(tool, { text: "hello" }); if (r.text !== "hello") throw new Error(r.text); },
  stub: () => new Promise((res, rej) => raw.callTool(req, new Metadata(), {}, (e, r) => (e ? rej(e) : res(r)))),
};
async function run(fn, n, workers) {
  let next = 0;
  const c0 = process.cpuUsage(); const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: workers }, async () => { while (next++ < n) await fn(); }));
  const c = process.cpuUsage(c0); const t = Number(process.hrtime.bigint() - t0) / 1e9;
  return { cpu: (c.user + c.system) / n, rate: n / t };
}
for (const w of [1, 32]) { await run(paths.pkg, 300, w); await run(paths.stub, 300, w); }
const out = { pkg: { 1: [], 32: [] }, stub: { 1: [], 32: [] } };
for (let round = 0; round < 5; round++) for (const w of [1, 32]) for (const p of round % 2 ? ["stub", "pkg"] : ["pkg", "stub"]) out[p][w].push((await run(paths[p], 2000, w)).cpu.toFixed(1));
console.log(JSON.stringify(out));
client.close();
