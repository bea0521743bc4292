// The TypeScript SDK's client (1.32.2, 2025-11-25 experimental tasks) against
// toolsvc's MCP front door (tests/mcpfront_tasks_test.go).
//
//   node tasks_front_client.mjs BASE_URL TOKEN TOOL...
//
// For each TOOL (a task tool taking {ms, fail}): callToolStream with a task
// (the stream's message types and the result text), the same failing, and a
// task created with client.request, cancelled with cancelTask and read with
// getTask. A TOOL written ask:NAME is a tool that asks for a name: one
// callToolStream, the client answering elicitations with {name: "Front"}.
// Then listTasks, and getTask of a forged id. Prints one JSON object.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [base, token, ...tools] = process.argv.slice(2);
const out = { tools: {}, calls: {}, asked: [] };
// enforceStrictCapabilities: the client refuses a task the server did not
// declare (capabilities.tasks.requests.tools.call).
const client = new Client({ name: "tasks-front-ts", version: "1" },
  { enforceStrictCapabilities: true, capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.asked.push(req.params.message);
  return { action: "accept", content: { name: "Front" } };
});
const transport = new StreamableHTTPClientTransport(new URL(base + "/mcp"),
  { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
await client.connect(transport);
out.protocol = transport.protocolVersion ?? null;
out.tasksCapability = client.getServerCapabilities()?.tasks ?? null;
const listed = await client.listTools();
for (const t of listed.tools) out.tools[t.name] = t.execution?.taskSupport ?? null;

const text = (r) => (r?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
async function stream(name, args) {
  const r = { types: [], statuses: [] };
  for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema,
    { task: { ttl: 60000 } })) {
    r.types.push(m.type);
    if (m.type === "taskCreated") { r.taskId = m.task.taskId; r.created = m.task; }
    if (m.type === "taskStatus") r.statuses.push(m.task.status);
    if (m.type === "result") { r.text = text(m.result); r.isError = !!m.result.isError; r.related = m.result._meta?.["io.modelcontextprotocol/related-task"]?.taskId ?? null; }
    if (m.type === "error") r.error = m.error.message;
  }
  return r;
}
for (const name of tools) {
  const c = {};
  if (name.startsWith("ask:")) {
    try {
      out.calls[name] = await stream(name.slice(4), {});
    } catch (e) {
      out.calls[name] = { error: `${e?.code ?? ""} ${e?.message ?? e}` };
    }
    continue;
  }
  try {
    c.ok = await stream(name, { ms: 300 });
    c.fail = await stream(name, { ms: 50, fail: true });
    const created = await client.request({ method: "tools/call", params: { name, arguments: { ms: 30000 }, task: { ttl: 60000 } } },
      CreateTaskResultSchema);
    const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
    const got = await client.experimental.tasks.getTask(created.task.taskId);
    c.cancel = { taskId: created.task.taskId, cancelled: cancelled.status, got: got.status };
  } catch (e) {
    c.error = `${e?.code ?? ""} ${e?.message ?? e}`;
  }
  out.calls[name] = c;
}
const lst = await client.experimental.tasks.listTasks();
out.listed = lst.tasks.map((t) => t.taskId);
try {
  await client.experimental.tasks.getTask("t1.forged");
  out.forged = "no error";
} catch (e) {
  out.forged = { code: e.code, message: e.message };
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
