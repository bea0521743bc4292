// The Node agent of `go run ./tests/bench` (tests/bench/nodeagent.go starts
// it): the same echo call made through toolsvc with @toolsvc/client and
// directly to the upstream with the TypeScript MCP SDK client, measured
// interleaved (each round runs every path once, rotating the order), at one
// caller and at CALLERS concurrent callers sharing one client. Prints one
// JSON line: per path, p50/p99 latency (µs) and calls/s at each concurrency,
// and the agent process's own CPU per call at CALLERS (the client-side work
// of each path).
//
//   node agent.mjs CONFIG_JSON
//   CONFIG_JSON: {"paths": [{"name", "kind": "toolsvc"|"stdio"|"http", "target"|"command"+"args"|"url", "tool"}],
//                 "rounds", "calls", "warmup", "callers", "concCalls"}
import { Client } from "@toolsvc/client";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const cfg = JSON.parse(process.argv[2]);
const args = { text: "hello" };

async function open(p) {
  if (p.kind === "toolsvc") {
    const client = new Client(p.target);
    return {
      call: async () => {
        const res = await client.callTool(p.tool, args);
        if (res.isError || res.text !== "hello") throw new Error(`${p.name}: unexpected result ${res.text}`);
      },
      close: async () => client.close(),
    };
  }
  const mcp = new McpClient({ name: "toolsvc-bench-node-agent", version: "1" });
  const transport =
    p.kind === "stdio" ? new StdioClientTransport({ command: p.command, args: p.args, stderr: "inherit" }) : new StreamableHTTPClientTransport(new URL(p.url));
  await mcp.connect(transport);
  return {
    call: async () => {
      const res = await mcp.callTool({ name: p.tool, arguments: args });
      if (res.isError || res.content?.[0]?.text !== "hello") throw new Error(`${p.name}: unexpected result ${JSON.stringify(res)}`);
    },
    close: async () => mcp.close(),
  };
}

const now = () => process.hrtime.bigint();

async function sequential(c, n, lat) {
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await c.call();
    lat.push(Number(now() - t0) / 1000);
  }
}

async function concurrent(c, n, workers, lat) {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next++ < n) {
        const t0 = now();
        await c.call();
        lat.push(Number(now() - t0) / 1000);
      }
    }),
  );
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) * p / 100)] : 0;
};

const paths = [];
for (const p of cfg.paths) paths.push({ ...p, client: await open(p) });
const out = {};
for (const p of paths) out[p.name] = { seq: [], seqNs: 0n, conc: [], concNs: 0n, concCpuUs: 0 };

for (const p of paths) await sequential(p.client, cfg.warmup, []);
for (let r = 0; r < cfg.rounds; r++) {
  for (let i = 0; i < paths.length; i++) {
    const p = paths[(i + r) % paths.length];
    const t0 = now();
    await sequential(p.client, cfg.calls, out[p.name].seq);
    out[p.name].seqNs += now() - t0;
  }
}
for (let r = 0; r < cfg.rounds; r++) {
  for (let i = 0; i < paths.length; i++) {
    const p = paths[(i + r) % paths.length];
    const t0 = now();
    const c0 = process.cpuUsage();
    await concurrent(p.client, cfg.concCalls, cfg.callers, out[p.name].conc);
    const c1 = process.cpuUsage(c0);
    out[p.name].concNs += now() - t0;
    out[p.name].concCpuUs += c1.user + c1.system;
  }
}
for (const p of paths) await p.client.close();

const result = {};
for (const [name, o] of Object.entries(out)) {
  result[name] = {
    p50_us_1: pct(o.seq, 50),
    p99_us_1: pct(o.seq, 99),
    calls_per_s_1: o.seq.length / (Number(o.seqNs) / 1e9),
    p50_us_n: pct(o.conc, 50),
    p99_us_n: pct(o.conc, 99),
    calls_per_s_n: o.conc.length / (Number(o.concNs) / 1e9),
    agent_cpu_us_per_call_n: o.concCpuUs / o.conc.length,
  };
}
console.log(JSON.stringify(result));
