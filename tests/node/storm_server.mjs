// A TypeScript-SDK MCP server (low-level Server, so every change sends its
// own notification: no debounce) for toolsvc's storm test.
//
//   node storm_server.mjs            (stdio)
//
// Tools: echo{text}; storm{count}: registers count tools storm_0..N-1 and
// sends one notifications/tools/list_changed per tool, in a burst;
// stats: {"list_calls": N} counted server-side.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const obj = (props = {}) => ({ type: "object", properties: props });
const base = [
  { name: "echo", description: "Return text.", inputSchema: obj({ text: { type: "string" } }) },
  { name: "storm", description: "Register count tools, one list_changed each.", inputSchema: obj({ count: { type: "integer" } }) },
  { name: "stats", description: "Counters.", inputSchema: obj() },
];
const extra = [];
let listCalls = 0;

const server = new Server({ name: "storm", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });

server.setRequestHandler(ListToolsRequestSchema, async () => {
  listCalls++;
  return { tools: [...base, ...extra] };
});

server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const args = req.params.arguments ?? {};
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  switch (req.params.name) {
    case "echo":
      return text(String(args.text ?? ""));
    case "storm": {
      const n = Number(args.count ?? 1000);
      const sends = [];
      for (let i = 0; i < n; i++) {
        extra.push({ name: `storm_${extra.length}`, description: "stormed", inputSchema: obj() });
        sends.push(server.sendToolListChanged());
      }
      await Promise.all(sends);
      return text(`stormed ${n}`);
    }
    case "stats":
      return { content: [{ type: "text", text: JSON.stringify({ list_calls: listCalls }) }], structuredContent: { list_calls: listCalls } };
  }
  if (req.params.name.startsWith("storm_")) return text(`${req.params.name} ok`);
  throw new Error(`unknown tool ${req.params.name}`);
});

await server.connect(new StdioServerTransport());
