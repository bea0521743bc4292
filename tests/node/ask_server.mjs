// A TypeScript-SDK MCP server whose tools ask their caller mid-call, for
// toolsvc's interactive-call cells (tests/interactive_sdks_test.go).
//
//   node ask_server.mjs stdio
//   node ask_server.mjs http [PORT]            (127.0.0.1, PORT 0 = any; prints "URL http://127.0.0.1:PORT/mcp")
//   node ask_server.mjs http-stateless [PORT]  (streamable HTTP without sessions: a Server per request)
//
// Tools, the same contract as tests/python/ask_server.py:
//   ask_name    server.elicitInput(form {name})        -> "hello <name>" | "declined" | "cancelled"
//   ask_url     server.elicitInput({mode: "url", url: https://login.example/authorize?sdk=ts})
//                                                      -> "url <action>"
//   ask_sample  server.createMessage("Say hi")         -> "model=<text>"
//   ask_roots   server.listRoots()                     -> "roots=<uri>,<uri>"
//   ask_form    server.elicitInput(form {name, color default "blue", size default 3})
//                                                      -> "form <the content as received, JSON>" | "declined" | "cancelled"
//               (the TypeScript SDK's server adds no defaults: the content is what the client sent)
// Each request is sent with relatedRequestId = the call's id, so over
// streamable HTTP it goes out on the call's own response stream. A failure of
// the SDK call (the client lacks the capability, the answer never comes) is
// the tool's error result, with the error's text.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const empty = { type: "object", properties: {} };
const tools = [
  { name: "ask_name", description: "Ask the caller's name (form elicitation) and greet them.", inputSchema: empty },
  { name: "ask_url", description: "Send the caller to a URL (URL elicitation).", inputSchema: empty },
  { name: "ask_sample", description: "Ask the caller's model to say hi (sampling).", inputSchema: empty },
  { name: "ask_roots", description: "List the caller's roots.", inputSchema: empty },
  { name: "ask_form", description: "Ask a form whose fields have defaults; say what came back.", inputSchema: empty },
];
const formSchema = { type: "object", required: ["name"], properties: {
  name: { type: "string" }, color: { type: "string", default: "blue" }, size: { type: "integer", default: 3 } } };
const nameSchema = { type: "object", properties: { name: { type: "string", description: "Your name" } }, required: ["name"] };
const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], ...(isError ? { isError } : {}) });

function newServer() {
  const server = new Server({ name: "ask-ts", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  // Protocol errors (an answer to a request this Server never sent) go to
  // stderr, where the tests look for them.
  server.onerror = (e) => process.stderr.write(`ask-ts: ${e?.message ?? e}\n`);
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const opts = { relatedRequestId: extra.requestId, signal: extra.signal };
    try {
      switch (req.params.name) {
        case "ask_name": {
          const r = await server.elicitInput({ message: "What is your name?", requestedSchema: nameSchema }, opts);
          return text(r.action === "accept" ? `hello ${r.content?.name}` : `${r.action}d`);
        }
        case "ask_url": {
          const r = await server.elicitInput({ mode: "url", message: "Log in, please",
            url: "https://login.example/authorize?sdk=ts", elicitationId: "el-ts-1" }, opts);
          return text(`url ${r.action}`);
        }
        case "ask_sample": {
          const r = await server.createMessage({ maxTokens: 20,
            messages: [{ role: "user", content: { type: "text", text: "Say hi" } }] }, opts);
          const c = Array.isArray(r.content) ? r.content[0] : r.content;
          return text(`model=${c?.text}`);
        }
        case "ask_form": {
          const r = await server.elicitInput({ message: "Your order?", requestedSchema: formSchema }, opts);
          return text(r.action === "accept" ? `form ${JSON.stringify(r.content)}` : `${r.action}d`);
        }
        case "ask_roots": {
          const r = await server.listRoots(undefined, opts);
          return text(`roots=${r.roots.map((x) => x.uri).join(",")}`);
        }
      }
    } catch (e) {
      return text(`${req.params.name}: ${e?.message ?? e}`, true);
    }
    throw new Error(`unknown tool ${req.params.name}`);
  });
  return server;
}

function listen(httpServer) {
  httpServer.listen(Number(process.argv[3] ?? 0), "127.0.0.1", () => {
    process.stdout.write(`URL http://127.0.0.1:${httpServer.address().port}/mcp\n`);
  });
  const stop = () => {
    httpServer.close(() => process.exit(0));
    httpServer.closeAllConnections();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

const mode = process.argv[2] ?? "stdio";
if (mode === "stdio") {
  await newServer().connect(new StdioServerTransport());
} else if (mode === "http") {
  const transports = new Map(); // session id -> transport
  listen(http.createServer(async (req, res) => {
    if (!req.url.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const sid = req.headers["mcp-session-id"];
    let transport = sid && transports.get(sid);
    if (!transport) {
      if (sid || req.method !== "POST") {
        res.writeHead(404, { "content-type": "application/json" }).end(
          JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res);
  }));
} else if (mode === "http-stateless") {
  // No sessions: every POST gets its own Server and transport, closed with
  // the response, as the SDK's stateless example does.
  listen(http.createServer(async (req, res) => {
    if (!req.url.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405, { allow: "POST" }).end();
      return;
    }
    const server = newServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.once("close", () => {
      transport.close().catch(() => {});
      server.close().catch(() => {});
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }));
} else {
  process.stderr.write("usage: ask_server.mjs stdio | http [PORT] | http-stateless [PORT]\n");
  process.exit(2);
}
