// Tasks (docs/tasks.md): callTool({task}), waitTask, getTask, cancelTask,
// listTasks and updateTask against live toolsvc processes in front of the
// real task servers: the TypeScript SDK's 2025-11-25 tasks
// (tests/node/tasks_server.mjs, stdio) and fastmcp-tasks' 2026-07-28
// extension (tests/python/tasks_server.py in .venv/tasks, HTTP).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect as netConnect } from "node:net";
import {
  Client,
  status,
  Task,
  TaskCancelledError,
  ToolResult,
  ToolsvcError,
  type InputRequest,
  type TaskStatusName,
} from "../src/index.js";
import { freePort, repoRoot, scratch, Toolsvc } from "./harness.js";

const started: Toolsvc[] = [];
const clients: Client[] = [];
let pyServer: ChildProcess | undefined;
let servers: Record<string, object> = {};

async function waitTCP(port: number, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((res) => {
      const s = netConnect(port, "127.0.0.1");
      s.once("connect", () => {
        s.destroy();
        res(true);
      });
      s.once("error", () => res(false));
    });
    if (ok) {
      return;
    }
    if (Date.now() > end || pyServer?.exitCode !== null) {
      throw new Error("tests/python/tasks_server.py did not start");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  const py = join(repoRoot, ".venv", "tasks", "bin", "python");
  if (!existsSync(py) || !existsSync(join(repoRoot, "tests", "node", "node_modules"))) {
    throw new Error("the task servers are not installed: run scripts/interop-deps.sh");
  }
  const port = await freePort();
  pyServer = spawn(py, [join(repoRoot, "tests", "python", "tasks_server.py"), String(port)], { stdio: "ignore" });
  await waitTCP(port, 60_000);
  servers = {
    ts: { command: "node", args: [join(repoRoot, "tests", "node", "tasks_server.mjs"), "stdio"] },
    py: { url: `http://127.0.0.1:${port}/mcp`, protocolVersion: "2026-07-28" },
  };
});

after(async () => {
  clients.forEach((c) => c.close());
  await Promise.all(started.map((s) => s.stop()));
  pyServer?.kill();
});

async function start(config: object, listen?: string, extraArgs: string[] = []): Promise<Toolsvc> {
  const s = await Toolsvc.start(config, listen, extraArgs);
  started.push(s);
  return s;
}

function connect(target: string): Client {
  const c = new Client(target);
  clients.push(c);
  return c;
}

async function startTask(c: Client, tool: string, args: Record<string, unknown>, ttlMs?: number): Promise<Task> {
  const t = await c.callTool(tool, args, { task: { ttlMs } });
  assert.ok(t instanceof Task, `callTool(${tool}, task) = ${JSON.stringify(t)}, want a Task`);
  return t;
}

const era: Record<string, string> = { ts: "2025-11-25", py: "2026-07-28" };

describe("tasks", () => {
  let c: Client;
  before(async () => {
    c = connect((await start({ mcpServers: servers })).addr);
  });

  for (const server of ["ts", "py"]) {
    test(`${server}: a task waited to its result, read, listed`, async () => {
      const t = await startTask(c, `${server}__slow`, { ms: 300 }, 60_000);
      assert.deepEqual([t.tool, t.server, t.protocolVersion, t.status], [`${server}__slow`, server, era[server], "working"]);
      assert.ok(t.handle.startsWith("t1.") && t.taskId !== "");
      const seen: TaskStatusName[] = [];
      const r = await c.waitTask(t, { onStatus: (x) => void seen.push(x.status), timeoutMs: 30_000 });
      assert.equal(r.text, "slept 300");
      assert.equal(seen[0], "working");
      assert.equal(seen.at(-1), "completed");
      const got = await c.getTask(t.handle);
      assert.ok(got.ended && got.result?.text === "slept 300" && got.error === undefined);
      assert.equal((await c.listTasks({ server }))[0]?.taskId, t.taskId);
    });

    test(`${server}: a failing task, a cancelled task, a tool without tasks`, async () => {
      const fail = await startTask(c, `${server}__slow`, { ms: 50, fail: true });
      const r = await c.waitTask(fail.handle, { timeoutMs: 30_000 });
      assert.ok(r.isError && r.text.includes("boom"));

      const long = await startTask(c, `${server}__slow`, { ms: 30_000 });
      assert.equal((await c.cancelTask(long)).status, "cancelled");
      assert.equal((await c.cancelTask(long)).status, "cancelled");
      await assert.rejects(c.waitTask(long, { timeoutMs: 30_000 }), (e: unknown) => {
        assert.ok(e instanceof TaskCancelledError && e instanceof ToolsvcError);
        assert.equal(e.code, status.CANCELLED);
        assert.equal(e.task.taskId, long.taskId);
        return true;
      });

      const plain = await c.callTool(`${server}__echo`, { text: "plain" }, { task: true });
      assert.ok(plain instanceof ToolResult && plain.text === "plain");
    });
  }

  test("bad handles, ttl and server", async () => {
    await assert.rejects(c.getTask("t1." + "A".repeat(60)), (e: unknown) => {
      assert.ok(e instanceof ToolsvcError);
      assert.equal(e.code, status.INVALID_ARGUMENT);
      assert.equal(e.reason, "TASK_HANDLE_INVALID");
      assert.deepEqual(e.fieldViolations.map((v) => v.field), ["handle"]);
      return true;
    });
    await assert.rejects(c.waitTask("t1.nope", { timeoutMs: 10_000 }), (e: unknown) => e instanceof ToolsvcError && e.reason === "TASK_HANDLE_INVALID");
    await assert.rejects(c.callTool("py__slow", {}, { task: { ttlMs: 0 } }), TypeError);
    await assert.rejects(c.listTasks({ server: "nope" }), (e: unknown) => e instanceof ToolsvcError && e.reason === "SERVER_NOT_FOUND");
  });

  test("input_required answered by onInput through UpdateTask", async () => {
    const t = await startTask(c, "py__ask", {});
    const asked: InputRequest[] = [];
    const seen: TaskStatusName[] = [];
    const r = await c.waitTask(t, {
      onStatus: (x) => void seen.push(x.status),
      onInput: (q) => {
        asked.push(q);
        return { kind: "elicitation", action: "accept", content: { name: "Ada" } };
      },
      timeoutMs: 30_000,
    });
    assert.equal(r.text, "hello Ada");
    assert.equal(asked.length, 1);
    assert.ok(asked[0]?.kind === "elicitation" && asked[0].message === "Your name?");
    assert.ok(seen.includes("input_required") && seen.at(-1) === "completed");
    await assert.rejects(c.updateTask(t, [[asked[0]!, { kind: "elicitation", action: "decline" }]]), (e: unknown) => {
      assert.ok(e instanceof ToolsvcError);
      assert.equal(e.code, status.FAILED_PRECONDITION);
      assert.equal(e.reason, "TASK_NOT_WAITING");
      return true;
    });
  });

  test("input_required answered with updateTask while another waits; an AbortSignal stops a wait", async () => {
    const t = await startTask(c, "py__ask", {});
    let waiting!: () => void;
    const isWaiting = new Promise<void>((res) => (waiting = res));
    const done = c.waitTask(t, { onStatus: (x) => (x.status === "input_required" ? waiting() : undefined), timeoutMs: 30_000 });
    await isWaiting;
    const got = await c.getTask(t);
    assert.equal(got.status, "input_required");
    assert.equal(got.inputRequests.length, 1);
    await c.updateTask(t, [[got.inputRequests[0]!, { kind: "elicitation", action: "accept", content: { name: "Bob" } }]]);
    assert.equal((await done).text, "hello Bob");

    const long = await startTask(c, "py__slow", { ms: 30_000 });
    const ac = new AbortController();
    const w = c.waitTask(long, { signal: ac.signal, onStatus: () => ac.abort() });
    await assert.rejects(w, (e: unknown) => e instanceof ToolsvcError && e.code === status.CANCELLED && !(e instanceof TaskCancelledError));
    assert.equal((await c.getTask(long)).status, "working"); // the task goes on
    await c.cancelTask(long);
  });
});

test("waitTask resumes on another replica when its replica stops", async () => {
  const key = join(scratch(), "state.key");
  writeFileSync(key, "0123456789abcdef0123456789abcdef", { mode: 0o600 });
  const config = { mcpServers: { py: servers["py"] } };
  const [pa, pb] = [await freePort(), await freePort()];
  const a = await start(config, `127.0.0.1:${pa}`, ["--state-key-file", key]);
  await start(config, `127.0.0.1:${pb}`, ["--state-key-file", key]);
  const c = connect(`ipv4:127.0.0.1:${pa},127.0.0.1:${pb}`);
  const t = await startTask(c, "py__slow", { ms: 4000 });
  const retries: ToolsvcError[] = [];
  let working!: () => void;
  const isWorking = new Promise<void>((res) => (working = res));
  const done = c.waitTask(t, {
    onStatus: (x) => (x.status === "working" ? working() : undefined),
    onRetry: (e) => void retries.push(e),
    timeoutMs: 60_000,
  });
  await isWorking;
  await a.stop();
  assert.equal((await done).text, "slept 4000");
  assert.ok(retries.length > 0 && retries.every((e) => e.code === status.UNAVAILABLE), `retries: ${retries.map(String)}`);
});
