// The TypeScript SDK's client against toolsvc's MCP front door.
//
// Usage: node front_client.mjs BASE_URL TRANSPORT TAG   (TRANSPORT: streamable | sse)
//
// Lists every tool (paging), calls h__echo, calls s__progress with onprogress, aborts
// s__wait_cancel after 300 ms (id fd-ts-TAG), asks h__add_tool to add ts_TAG and waits for
// notifications/tools/list_changed, lists again, and prints one JSON object with what it saw.
// The Go test (tests/mcpfront_clients_test.go) checks it against ListTools and the upstream.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [base, transportName, tag] = process.argv.slice(2);
const t0 = Date.now();
const out = { transport: transportName };
const client = new Client({ name: "frontdoor-ts-test", version: "1" });
let changed;
const changedP = new Promise((resolve) => (changed = resolve));
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());

const transport = transportName === "sse"
  ? new SSEClientTransport(new URL(base + "/sse"))
  : new StreamableHTTPClientTransport(new URL(base + "/mcp"));
await client.connect(transport);
out.protocol = transport.protocolVersion ?? null;
out.session = transport.sessionId ?? null;

async function names() {
  const all = [];
  let cursor;
  do {
    const res = await client.listTools(cursor ? { cursor } : {});
    all.push(...res.tools.map((t) => t.name));
    cursor = res.nextCursor;
  } while (cursor);
  return all.sort();
}
const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");

out.names = await names();
out.echo = text(await client.callTool({ name: "h__echo", arguments: { text: "ts " + tag } }));

const progress = [];
const pres = await client.callTool({ name: "s__progress", arguments: { steps: 3, step_ms: 100 } }, undefined,
  { onprogress: (p) => progress.push(p.progress) });
out.progress_result = text(pres);
out.progress = progress;

const bad = await client.callTool({ name: "h__echo", arguments: { text: 5 } });
out.bad_args_is_error = !!bad.isError;
out.bad_args_text = text(bad);

const ac = new AbortController();
setTimeout(() => ac.abort(), 300);
try {
  await client.callTool({ name: "s__wait_cancel", arguments: { id: "fd-ts-" + tag, ms: 30000 } }, undefined, { signal: ac.signal });
  out.cancelled = false;
} catch (e) {
  out.cancelled = true;
  out.cancel_error = String(e);
}

await client.callTool({ name: "h__add_tool", arguments: { name: "ts_" + tag } });
let timer;
out.list_changed = await Promise.race([changedP.then(() => true), new Promise((r) => (timer = setTimeout(() => r(false), 15000)))]);
clearTimeout(timer); // a pending timer would keep node running
out.names_after = await names();
out.elapsed_ms = Date.now() - t0;
console.log(JSON.stringify(out));
await client.close();
