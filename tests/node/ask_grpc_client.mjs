// The TypeScript client package (clients/typescript, @toolsvc/client, built
// by scripts/interop-deps.sh) calling tools that ask through toolsvc's gRPC
// API with callTool(..., { onInput }) (tests/interactive_sdks_test.go).
//
//   node ask_grpc_client.mjs ADDR TOOL...
//
// Answers: a form with {name: "Ts"}, a URL with accept, sampling with
// "hi from ts", roots with file:///ts. Prints one JSON object: what it was
// asked ("elicitation", "elicitationUrl", "sampling", "roots", in order) and
// each tool's result text (a tool error as "error: ...").
import { Client } from "../../clients/typescript/dist/index.js";

const [addr, ...tools] = process.argv.slice(2);
const out = { asked: [], results: {} };
const client = new Client(addr);
const onInput = (q) => {
  out.asked.push(q.kind);
  switch (q.kind) {
    case "elicitation":
      if (!q.requestedSchema?.properties?.name) throw new Error(`form without a name field: ${JSON.stringify(q.requestedSchema)}`);
      return { kind: "elicitation", action: "accept", content: { name: "Ts" } };
    case "elicitationUrl":
      if (!q.url.startsWith("https://login.example/")) throw new Error(`url ${q.url}`);
      return { kind: "elicitation", action: "accept" };
    case "sampling":
      return { kind: "sampling", result: { role: "assistant", content: { type: "text", text: "hi from ts" }, model: "ts-model" } };
    case "roots":
      return { kind: "roots", roots: [{ uri: "file:///ts", name: "ts" }] };
  }
  throw new Error(`unknown request ${q.kind}`);
};
for (const name of tools) {
  const res = await client.callTool(name, {}, { timeoutMs: 60_000, onInput });
  out.results[name] = res.isError ? `error: ${res.text}` : res.text;
}
client.close();
process.stdout.write(JSON.stringify(out) + "\n");
