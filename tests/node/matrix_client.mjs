// The client matrix's cell runner for the TypeScript SDK's client (1.x: 2025-11-25, the
// last era it speaks) over streamable HTTP, or over legacy SSE (SSEClientTransport) for a
// URL whose path ends in /sse (each of URL, DISCOVERY_URL and TASKS_URL on its own), or, with
// MATRIX_MCP_REMOTE set (mcp-remote's proxy.js), over stdio to an mcp-remote process per
// session that bridges it to the URL over streamable HTTP (--transport http-only), as Claude
// Desktop runs it.
//
// Usage: node matrix_client.mjs URL ERA PREFIX [DISCOVERY_URL TASKS_URL TASKS_PREFIX]   (ERA: 2025-11-25)
// (DISCOVERY_URL, TASKS_URL, TASKS_PREFIX: as in matrix_client.py. The task call uses the
// SDK's experimental tasks API, client.experimental.tasks.callToolStream.)
//
// The same operations, answers and report as tests/python/matrix_client.py: each
// operation on its own, one JSON object {"protocol", "ops": {op: {value} | {error}}};
// tests/matrix_clients_test.go judges the values.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [url, , prefix = "", discoveryURL = "", tasksURL = "", tasksPrefix = ""] = process.argv.slice(2);
const ops = {};
const logs = [];
const client = new Client({ name: "matrix-ts", version: "1" },
  { capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: false } } });
// ask_url's URL request: the user "visits" the URL (accept, no content).
client.setRequestHandler(ElicitRequestSchema, async (req) =>
  req.params.mode === "url" ? { action: "accept" } : { action: "accept", content: { name: "Ada" } });
client.setRequestHandler(CreateMessageRequestSchema, async () =>
  ({ role: "assistant", content: { type: "text", text: "hi there" }, model: "matrix-model" }));
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///matrix", name: "matrix" }] }));
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params.data));

const mcpRemote = process.env.MATRIX_MCP_REMOTE;
let lateProgress = 0;
client.onerror = (err) => {
  if (String(err?.message).startsWith("Received a progress notification for an unknown token")) lateProgress++;
};
const connectTo = (u) => {
  if (mcpRemote) {
    return new StdioClientTransport({ command: process.execPath, args: [mcpRemote, u, "--transport", "http-only"],
      env: { ...process.env }, stderr: "inherit" });
  }
  const parsed = new URL(u);
  return parsed.pathname.endsWith("/sse") ? new SSEClientTransport(parsed) : new StreamableHTTPClientTransport(parsed);
};
const transport = connectTo(url);
// The negotiated version, whichever the transport: the client hands it to the transport.
let protocol = null;
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => {
  protocol = v;
  setVersion?.(v);
};
await client.connect(transport);

async function run(op, fn) {
  try {
    ops[op] = { value: await fn() };
  } catch (err) {
    ops[op] = { error: String(err?.stack ?? err).slice(0, 2000) };
  }
}
const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
async function call(name, args = {}, opts) {
  const res = await client.callTool({ name: prefix + name, arguments: args }, undefined, opts);
  return (res.isError ? "error: " : "") + text(res);
}
const sorted = (xs) => xs.map(String).sort();

await run("list", async () => {
  const all = [];
  let cursor;
  do {
    const res = await client.listTools(cursor ? { cursor } : {});
    all.push(...res.tools.map((t) => t.name));
    cursor = res.nextCursor;
  } while (cursor);
  return all.sort();
});
await run("call", () => call("echo", { text: "matrix" }));
await run("progress", async () => {
  const seen = [];
  await call("progress", { steps: 2, step_ms: 100 }, { onprogress: (p) => seen.push(p.progress) });
  // A notification the client reads after the call's result (the go-sdk server, over SSE or
  // through mcp-remote, on a loaded box) has no handler any more: the SDK reports it to
  // onerror, where it counts too. Wait for one, within a generous bound.
  for (let i = 0; i < 1000 && seen.length + lateProgress === 0; i++) await new Promise((r) => setTimeout(r, 10));
  return seen.length + lateProgress;
});
await run("elicitation", () => call("ask_name"));
await run("elicitation/url", () => call("ask_url"));
await run("sampling", () => call("ask_model"));
await run("roots", () => call("ask_roots"));
await run("logging", async () => {
  await client.setLoggingLevel("debug");
  await call("log_levels", { tag: "matrix" });
  return logs.filter((d) => d && typeof d === "object").map((d) => d.tag);
});
await run("resources/list", async () => sorted((await client.listResources()).resources.map((r) => r.uri)));
await run("resources/read", async () =>
  (await client.readResource({ uri: "test://hello" })).contents.map((c) => c.text ?? "").join(""));
await run("resources/templates", async () =>
  sorted((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)));
await run("resources/subscribe", async () => {
  await client.subscribeResource({ uri: "test://hello" });
  await client.unsubscribeResource({ uri: "test://hello" });
  return "subscribed";
});
await run("prompts/list", async () => sorted((await client.listPrompts()).prompts.map((p) => p.name)));
await run("prompts/get", async () =>
  (await client.getPrompt({ name: prefix + "hi" })).messages.map((m) => m.content.text ?? "").join(""));
await run("completion", async () => {
  const res = await client.complete({ ref: { type: "ref/prompt", name: prefix + "trip" }, argument: { name: "city", value: "Ber" } });
  return sorted(res.completion.values);
});
await run("discovery", async () => {
  if (!discoveryURL) return prefix + "echo:" + await call("echo", { text: "matrix" });
  const dc = new Client({ name: "matrix-ts-discovery", version: "1" });
  await dc.connect(connectTo(discoveryURL));
  try {
    const found = JSON.parse(text(await dc.callTool({ name: "search_tools", arguments: { query: "echo", limit: 1 } }))).tools[0].name;
    const res = await dc.callTool({ name: "call_tool", arguments: { name: found, arguments: { text: "matrix" } } });
    return found + ":" + (res.isError ? "error: " : "") + text(res);
  } finally {
    await dc.close();
  }
});
await run("tasks", async () => {
  const tc = new Client({ name: "matrix-ts-tasks", version: "1" });
  await tc.connect(connectTo(tasksURL));
  try {
    // A task only where the server declares them (2025-11-25: a receiver that does not
    // ignores params.task and answers the plain result, which the SDK then refuses).
    if (!tc.getServerCapabilities()?.tasks?.requests?.tools?.call) {
      throw new Error("the server declares no tasks (capabilities.tasks.requests.tools.call)");
    }
    let created = false;
    let result;
    for await (const m of tc.experimental.tasks.callToolStream({ name: tasksPrefix + "slow", arguments: { ms: 50 } },
      CallToolResultSchema, { task: { ttl: 60000 } })) {
      if (m.type === "taskCreated") created = true;
      else if (m.type === "result") result = m.result;
      else if (m.type === "error") throw m.error;
    }
    return (created ? "task:" : "no task:") + (result?.isError ? "error: " : "") + text(result ?? { content: [] });
  } finally {
    await tc.close();
  }
});
await client.close();
console.log(JSON.stringify({ protocol, ops }));
