// OpenAI and Anthropic tool formats: from a live catalog, and through the
// Struct wire encoding (doubles) to check integers stay integers.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Client, inputSchemaOf, toAnthropicTools, toOpenAITools, type Tool } from "../src/index.js";
import { Tool as ToolCodec } from "../src/gen/toolsvc/v1/toolsvc.js";
import { testserverBin, Toolsvc } from "./harness.js";

let svc: Toolsvc;
let client: Client;
before(async () => {
  svc = await Toolsvc.start({ mcpServers: { ts: { command: testserverBin(), args: ["-mode", "stdio"] } } });
  client = new Client(svc.addr);
});
after(async () => {
  client?.close();
  await svc?.stop();
});

// tests/testserver's strict tool declares exactly this inputSchema.
const strictSchema = {
  type: "object",
  required: ["count"],
  additionalProperties: false,
  properties: {
    count: { type: "integer", minimum: 0 },
    label: { type: "string" },
    opts: { type: "object", required: ["flag"], properties: { flag: { type: "boolean" } } },
    tags: { type: "array", items: { type: "string" } },
  },
};

test("the live catalog in OpenAI and Anthropic formats carries the exact schema", async () => {
  const tools = await client.listTools();
  const strict = tools.find((t) => t.name === "ts__strict")!;

  const [openai] = toOpenAITools([strict]);
  assert.deepEqual(openai, {
    type: "function",
    function: { name: "ts__strict", description: "Return the raw arguments JSON.", parameters: strictSchema },
  });
  assert.match(JSON.stringify(openai), /"minimum":0[,}]/);

  const [responses] = toOpenAITools([strict], { api: "responses" });
  assert.deepEqual(responses, { type: "function", name: "ts__strict", description: "Return the raw arguments JSON.", parameters: strictSchema, strict: false });

  const anthropic = toAnthropicTools(tools);
  assert.equal(anthropic.length, tools.length);
  assert.deepEqual(
    anthropic.find((t) => t.name === "ts__strict"),
    { name: "ts__strict", description: "Return the raw arguments JSON.", input_schema: strictSchema },
  );
  // A watcher's catalog works as input too.
  const w = client.watch();
  await w[Symbol.asyncIterator]().next();
  assert.deepEqual(toAnthropicTools(w.list()), anthropic);
  w.close();
});

/** A Tool as it arrives: encoded and decoded with the generated codec (Struct numbers are doubles). */
function wire(schema: { [key: string]: any }): Tool {
  const t = ToolCodec.fromPartial({ name: "s__t", description: "d", inputSchema: schema });
  return ToolCodec.decode(ToolCodec.encode(t).finish());
}

test("integral doubles come out as integers; fractions stay fractions", () => {
  const tool = wire({ type: "object", properties: { n: { type: "integer", maximum: 10.0, minimum: -3, multipleOf: 0.5, default: 1e21 } } });
  const json = JSON.stringify(toOpenAITools([tool])[0]!.function.parameters);
  assert.equal(json, '{"type":"object","properties":{"n":{"type":"integer","maximum":10,"minimum":-3,"multipleOf":0.5,"default":1e+21}}}');
  assert.doesNotMatch(json, /10\.0/);
});

test("input_schema_json is preferred when the server sends it", () => {
  const tool = { ...wire({ type: "object" }), inputSchemaJson: '{"type":"object","properties":{"n":{"type":"integer","maximum":10.0}}}' };
  assert.equal(JSON.stringify(toAnthropicTools([tool])[0]!.input_schema), '{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}');
  // Empty means absent: the Struct is used.
  assert.deepEqual(inputSchemaOf({ ...tool, inputSchemaJson: "" }), { type: "object" });
});

test("no schema, title fallback, and a fresh copy each time", () => {
  assert.deepEqual(toAnthropicTools([{ name: "x__y", title: "T", inputSchema: undefined }]), [
    { name: "x__y", description: "T", input_schema: { type: "object", properties: {} } },
  ]);
  const tool = wire({ type: "object", properties: { a: { type: "string" } } });
  const out = toOpenAITools([tool])[0]!.function.parameters as { properties: { a: { type: string } } };
  out.properties.a.type = "number";
  assert.equal(tool.inputSchema?.["properties"].a.type, "string");
});
