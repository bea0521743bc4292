// A TypeScript-SDK MCP server whose tools run as 2025-11-25 experimental
// tasks, for the bridge's task tests (mcpbridge/tasks_test.go).
//
//   node tasks_server.mjs stdio
//   node tasks_server.mjs http [PORT]   (127.0.0.1, PORT 0 = any; prints "URL http://127.0.0.1:PORT/mcp")
//
// The server declares capabilities.tasks {list, cancel, requests.tools.call}
// and serves tasks/get, tasks/result, tasks/list and tasks/cancel from one
// InMemoryTaskStore per process (tasks are still bound to the session that
// created them: the store hides them from any other session id).
//
// Tools:
//   slow{ms, fail}   execution.taskSupport "optional": with params.task, a task
//                    (pollInterval 100 ms, the requested ttl or 60 s) that
//                    completes after ms with "slept <ms>", or fails with "boom"
//                    (status failed, an isError result); a cancelled task
//                    stays cancelled. Without params.task the SDK runs the task
//                    itself and answers the plain result.
//   ask{}            taskSupport "required": asks the caller for a name with
//                    elicitation/create tied to the task (status
//                    input_required; the request reaches the client on the
//                    response stream of tasks/result), then completes with
//                    "hello <name>".
//   echo{text}       no execution (taskSupport forbidden): a plain tool.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from "@modelcontextprotocol/sdk/experimental/tasks";

const taskStore = new InMemoryTaskStore();
const taskMessageQueue = new InMemoryTaskMessageQueue();
// The protocol answers tasks/* from the store; these typed handlers are
// required by registerToolTask but unused at runtime.
const stored = {
  async getTask(_args, { taskId, taskStore }) { return taskStore.getTask(taskId); },
  async getTaskResult(_args, { taskId, taskStore }) { return taskStore.getTaskResult(taskId); },
};

function newServer() {
  const server = new McpServer({ name: "tasks-ts", version: "1.0.0" }, {
    taskStore, taskMessageQueue,
    capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
  });
  server.experimental.tasks.registerToolTask("slow", {
    description: "Sleeps ms; runs as a task",
    inputSchema: { ms: z.number().default(500), fail: z.boolean().default(false) },
    execution: { taskSupport: "optional" },
  }, { ...stored,
    async createTask({ ms, fail }, { taskStore, taskRequestedTtl }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl ?? 60000, pollInterval: 100 });
      setTimeout(async () => {
        try {
          if ((await taskStore.getTask(task.taskId))?.status === "cancelled") return;
          await taskStore.storeTaskResult(task.taskId, fail ? "failed" : "completed",
            { content: [{ type: "text", text: fail ? "boom" : `slept ${ms}` }], isError: fail });
        } catch { /* expired or cancelled meanwhile */ }
      }, ms);
      return { task };
    },
  });
  server.experimental.tasks.registerToolTask("ask", {
    description: "Asks for a name (input_required), then greets it",
    inputSchema: {},
  }, { ...stored,
    async createTask(_args, { taskStore, taskRequestedTtl, sendRequest }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl ?? 60000, pollInterval: 100 });
      sendRequest({ method: "elicitation/create", params: { mode: "form", message: "Your name?",
        requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } } },
      ElicitResultSchema, { relatedTask: { taskId: task.taskId } })
        .then((r) => taskStore.storeTaskResult(task.taskId, "completed",
          { content: [{ type: "text", text: r.action === "accept" ? `hello ${r.content?.name}` : `no name (${r.action})` }] }))
        .catch(() => { /* the task expired or the session ended */ });
      return { task };
    },
  });
  server.registerTool("echo", { description: "Return text.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }));
  return server;
}

if ((process.argv[2] ?? "stdio") === "stdio") {
  await newServer().connect(new StdioServerTransport());
} else {
  const transports = new Map();
  const srv = http.createServer(async (req, res) => {
    let t = transports.get(req.headers["mcp-session-id"]);
    if (!t) {
      t = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, t) });
      t.onclose = () => { if (t.sessionId) transports.delete(t.sessionId); };
      await newServer().connect(t);
    }
    await t.handleRequest(req, res);
  });
  srv.listen(Number(process.argv[3] ?? 0), "127.0.0.1", () => console.log(`URL http://127.0.0.1:${srv.address().port}/mcp`));
}
