// The TypeScript SDK's client, declaring elicitation (form and URL), sampling
// and roots with handlers, calling tools that ask through toolsvc's MCP front
// door (tests/interactive_sdks_test.go).
//
//   node ask_front_client.mjs BASE_URL TOOL...
//
// Answers: a form with {name: "Front"}, a URL with accept, sampling with
// "hi there", roots with file:///front. Prints one JSON object: the
// protocol, what it was asked ("elicitation", "elicitation_url", "sampling",
// "roots", in order), and each tool's result text (an error as "error: ...").
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [base, ...tools] = process.argv.slice(2);
const out = { asked: [], results: {} };
const client = new Client({ name: "ask-front-ts", version: "1" },
  { capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: false } } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  if (req.params.mode === "url") {
    out.asked.push("elicitation_url");
    return { action: "accept" };
  }
  out.asked.push("elicitation");
  return { action: "accept", content: { name: "Front" } };
});
client.setRequestHandler(CreateMessageRequestSchema, async () => {
  out.asked.push("sampling");
  return { role: "assistant", content: { type: "text", text: "hi there" }, model: "front-model" };
});
client.setRequestHandler(ListRootsRequestSchema, async () => {
  out.asked.push("roots");
  return { roots: [{ uri: "file:///front", name: "front" }] };
});

const transport = new StreamableHTTPClientTransport(new URL(base + "/mcp"));
await client.connect(transport);
out.protocol = transport.protocolVersion ?? null;
for (const name of tools) {
  try {
    const res = await client.callTool({ name, arguments: {} });
    const t = res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
    out.results[name] = res.isError ? `error: ${t}` : t;
  } catch (e) {
    out.results[name] = `error: ${e?.message ?? e}`;
  }
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
