// A TypeScript-SDK MCP server whose tools change at runtime, for toolsvc's
// interop tests. It uses the low-level Server so that it picks the channel of
// every tools/list_changed and sends exactly one per change.
//
//   node runtime_server.mjs stdio
//   node runtime_server.mjs http [PORT]   (127.0.0.1, PORT 0 = any; prints "URL http://127.0.0.1:PORT/mcp")
//   node runtime_server.mjs http-stateless [PORT]   (streamable HTTP without sessions: a Server per request)
//   node runtime_server.mjs sse [PORT]    (legacy HTTP+SSE; prints "URL http://127.0.0.1:PORT/sse")
//
// Tools (the tool set is global to the process):
//   echo{text}
//   add_tool{name, via}     registers `name` (answers "<name> ok"), then sends tools/list_changed:
//                           via "session": server.sendToolListChanged(), no related request (HTTP: the standalone GET stream);
//                           via "request": extra.sendNotification(), on the call's own response stream;
//                           via "none":    no notification.
//                           Other live sessions are notified on their session channel.
//   remove_tool{name, via}  the reverse.
//   sleep{ms}               waits ms, honouring cancellation (extra.signal); every call is recorded;
//                           with a progress token, reports progress 1..4 of 4 along the way.
//   stats{}                 {"sleeps": [{ms, elapsed_ms, cancelled, reason}], "get_streams": open standalone GET streams}
//   wait_cancel{id, ms}     waits ms or until cancelled; with $MATRIX_DIR set, records <id>.started, then
//                           <id>.cancelled or <id>.finished there ("<pid> <unix nanos>", written atomically),
//                           which tests read directly (the interop matrix, tests/matrix_test.go).
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const obj = (props = {}, required = []) => ({ type: "object", properties: props, required });
const via = { type: "string", enum: ["session", "request", "none"] };
const base = [
  { name: "echo", description: "Return text.", inputSchema: obj({ text: { type: "string" } }) },
  { name: "add_tool", description: "Register a tool and announce it.", inputSchema: obj({ name: { type: "string" }, via }, ["name"]) },
  { name: "remove_tool", description: "Remove a registered tool and announce it.", inputSchema: obj({ name: { type: "string" }, via }, ["name"]) },
  { name: "sleep", description: "Sleep ms milliseconds; stops when the call is cancelled.", inputSchema: obj({ ms: { type: "integer" } }, ["ms"]) },
  { name: "stats", description: "Recorded sleeps and open standalone streams.", inputSchema: obj() },
  { name: "wait_cancel", description: "Wait ms or until cancelled; record which in $MATRIX_DIR.",
    inputSchema: obj({ id: { type: "string" }, ms: { type: "integer" } }, ["id", "ms"]) },
];
const added = new Map(); // name -> tool
const sleeps = [];
let getStreams = 0;
const servers = new Set(); // live Server instances, one per session

const text = (t) => ({ content: [{ type: "text", text: t }] });

function newServer() {
  const server = new Server({ name: "runtime", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...base, ...added.values()] }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const args = req.params.arguments ?? {};
    switch (req.params.name) {
      case "echo":
        return text(String(args.text ?? ""));
      case "add_tool":
      case "remove_tool": {
        const name = String(args.name);
        if (req.params.name === "add_tool") {
          added.set(name, { name, description: `Added at runtime via ${args.via ?? "session"}.`, inputSchema: obj() });
        } else if (!added.delete(name)) {
          return { ...text(`no tool ${name}`), isError: true };
        }
        await announce(server, extra, args.via ?? "session");
        return text(`${req.params.name} ${name} ok`);
      }
      case "sleep":
        return sleep(Number(args.ms), extra.signal, req.params._meta?.progressToken, extra);
      case "wait_cancel":
        return waitCancel(String(args.id), Number(args.ms), extra.signal);
      case "stats":
        return { ...text(JSON.stringify({ sleeps, get_streams: getStreams })), structuredContent: { sleeps, get_streams: getStreams } };
    }
    if (added.has(req.params.name)) return text(`${req.params.name} ok`);
    throw new Error(`unknown tool ${req.params.name}`);
  });
  servers.add(server);
  server.onclose = () => servers.delete(server);
  return server;
}

async function announce(self, extra, channel) {
  if (channel === "request") {
    await extra.sendNotification({ method: "notifications/tools/list_changed" });
  } else if (channel === "session") {
    await self.sendToolListChanged();
  }
  if (channel !== "none") {
    for (const s of servers) if (s !== self) await s.sendToolListChanged().catch(() => {});
  }
}

function sleep(ms, signal, progressToken, extra) {
  const start = Date.now();
  const rec = { ms, elapsed_ms: 0, cancelled: false, reason: "" };
  sleeps.push(rec);
  // With a progress token: progress 1..4 at quarters of the sleep.
  const ticks = [];
  if (progressToken !== undefined) {
    for (let i = 1; i <= 4; i++) {
      ticks.push(setTimeout(() => extra.sendNotification({ method: "notifications/progress",
        params: { progressToken, progress: i, total: 4, message: `quarter ${i}` } }).catch(() => {}), (ms * i) / 4 - 1));
    }
  }
  return new Promise((resolve) => {
    const done = () => {
      rec.elapsed_ms = Date.now() - start;
      process.stderr.write(`sleep ${rec.cancelled ? "cancelled" : "finished"} after ${rec.elapsed_ms}ms${rec.reason ? ` (${rec.reason})` : ""}\n`);
      resolve(text(`slept ${rec.elapsed_ms}ms`));
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      ticks.forEach(clearTimeout);
      rec.cancelled = true;
      rec.reason = String(signal.reason ?? "");
      done();
    }, { once: true });
  });
}

function record(id, event) {
  const dir = process.env.MATRIX_DIR;
  if (!dir || !id || id.includes("/")) return;
  const final = path.join(dir, `${id}.${event}`);
  fs.writeFileSync(final + ".tmp", `${process.pid} ${process.hrtime.bigint() - hrBase + epochBase}\n`);
  fs.renameSync(final + ".tmp", final);
}
// Unix nanoseconds from the monotonic clock, anchored once at start.
const hrBase = process.hrtime.bigint();
const epochBase = BigInt(Date.now()) * 1000000n;

function waitCancel(id, ms, signal) {
  record(id, "started");
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      record(id, "finished");
      resolve(text("finished"));
    }, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      record(id, "cancelled");
      resolve(text("cancelled"));
    }, { once: true });
  });
}

function listen(httpServer, suffix) {
  httpServer.listen(Number(process.argv[3] ?? 0), "127.0.0.1", () => {
    process.stdout.write(`URL http://127.0.0.1:${httpServer.address().port}${suffix}\n`);
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
  const httpServer = http.createServer(async (req, res) => {
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
    if (req.method === "GET") {
      getStreams++;
      res.once("close", () => getStreams--);
    }
    await transport.handleRequest(req, res);
  });
  listen(httpServer, "/mcp");
} else if (mode === "http-stateless") {
  // No sessions: every POST gets its own Server and transport, closed with
  // the response. There is no standalone GET stream, so a runtime change
  // reaches a client only when it lists again.
  const httpServer = http.createServer(async (req, res) => {
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
  });
  listen(httpServer, "/mcp");
} else if (mode === "sse") {
  // The deprecated 2024-11-05 HTTP+SSE transport: GET /sse opens the event
  // stream, whose first event names the POST endpoint of the session.
  const transports = new Map(); // session id -> transport
  const httpServer = http.createServer(async (req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res);
      transports.set(transport.sessionId, transport);
      res.once("close", () => transports.delete(transport.sessionId));
      await newServer().connect(transport);
      return;
    }
    if (req.method === "POST" && url.pathname === "/messages") {
      const transport = transports.get(url.searchParams.get("sessionId"));
      if (!transport) {
        res.writeHead(404).end("unknown session");
        return;
      }
      await transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404).end();
  });
  listen(httpServer, "/sse");
} else {
  process.stderr.write(`usage: runtime_server.mjs stdio | http [PORT] | http-stateless [PORT] | sse [PORT]\n`);
  process.exit(2);
}
