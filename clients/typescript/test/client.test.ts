// Calls, listings, streaming and errors against a live toolsvc in front of
// toolsvc's demo server and tests/testserver (go-sdk), over stdio.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client, status, toAnthropicTools, toOpenAITools, ToolsvcError, type ToolStreamEvent } from "../src/index.js";
import { eventually, testserverBin, Toolsvc, toolsvcBin } from "./harness.js";

let svc: Toolsvc;
let client: Client;

before(async () => {
  svc = await Toolsvc.start({
    mcpServers: {
      demo: { command: toolsvcBin(), args: ["demo-server"] },
      ts: { command: testserverBin(), args: ["-mode", "stdio"] },
    },
  });
  client = new Client(svc.addr);
});

after(async () => {
  client?.close();
  await svc?.stop();
});

describe("searchTools", () => {
  test("ranks the catalog; filters; a searched subset in the LLM formats", async () => {
    const found = await client.searchTools({ query: "add two numbers", limit: 3 });
    assert.equal(found.tools[0]?.name, "demo__add");
    assert.equal(found.revision.length, 32);
    assert.deepEqual([...found.scores.keys()], found.tools.map((t) => t.name));
    // The query alone, as Python's search_tools(query, ...) takes it.
    const byQuery = await client.searchTools("add two numbers", { limit: 3 });
    assert.deepEqual(
      byQuery.tools.map((t) => t.name),
      found.tools.map((t) => t.name),
    );
    assert.equal((await client.searchTools("add two numbers")).tools[0]?.name, "demo__add");
    const only = await client.searchTools({ query: "add", servers: ["demo"], nameGlob: "demo__*" });
    assert.ok(only.tools.length > 0 && only.tools.every((t) => t.server === "demo"));
    const anthropic = toAnthropicTools(await client.listTools(), { deferLoading: true, alwaysLoaded: ["demo__add"] });
    assert.ok(anthropic.every((t) => (t.name === "demo__add" ? t.defer_loading === undefined : t.defer_loading === true)));
    assert.deepEqual(
      toOpenAITools(found.tools).map((t) => t.function.name),
      found.tools.map((t) => t.name),
    );
    // The search result as it is: best first, only the found tools.
    assert.deepEqual(
      toOpenAITools(found, { api: "responses" }).map((t) => t.name),
      found.tools.map((t) => t.name),
    );
    const subset = toAnthropicTools(found, { deferLoading: true, alwaysLoaded: ["demo__add"] });
    assert.deepEqual(
      subset.map((t) => [t.name, t.defer_loading]),
      found.tools.map((t) => [t.name, t.name === "demo__add" ? undefined : true]),
    );
    await assert.rejects(client.searchTools({ query: "" }), (e: unknown) => {
      assert.ok(e instanceof ToolsvcError);
      assert.equal(e.code, status.INVALID_ARGUMENT);
      assert.deepEqual(e.fieldViolations.map((v) => v.field), ["query"]);
      return true;
    });
  });
});

describe("listTools", () => {
  test("returns every page, sorted, from one revision", async () => {
    const all = await client.listTools();
    const names = all.map((t) => t.name);
    assert.ok(names.includes("demo__add") && names.includes("ts__strict"), names.join(" "));
    assert.deepEqual(names, [...names].sort());
    const paged = await client.listTools({ pageSize: 2 });
    assert.deepEqual(
      paged.map((t) => t.name),
      names,
    );
    const add = all.find((t) => t.name === "demo__add")!;
    assert.equal(add.server, "demo");
    assert.equal(add.originalName, "add");
    assert.equal(add.available, true);
    assert.equal(add.inputSchema?.["type"], "object");
    assert.equal(add.annotations?.readOnlyHint, true);
  });
});

describe("callTool", () => {
  test("returns content, structured content and text", async () => {
    const res = await client.callTool("demo__add", { a: 2, b: 40 });
    assert.equal(res.isError, false);
    assert.deepEqual(res.structuredContent, { sum: 42 });
    assert.equal(JSON.parse(res.text).sum, 42);
    const echo = await client.callTool("demo__echo", { text: "héllo" });
    assert.equal(echo.text, "héllo");
    assert.equal(echo.content[0]?.content?.$case, "text");
  });

  test("a tool's own failure is isError, not an exception", async () => {
    const res = await client.callTool("demo__sleep", { ms: -1 });
    assert.equal(res.isError, true);
    assert.match(res.text, /between 0 and 600000/);
  });

  test("JSON text arguments reach the upstream as written (integers beyond 2^53)", async () => {
    const raw = '{"count": 9007199254740993, "label": "x"}';
    const res = await client.callTool("ts__strict", raw);
    assert.equal(res.isError, false);
    assert.match(res.text, /9007199254740993/);
  });

  test("every content kind decodes", async () => {
    const res = await client.callTool("ts__all_content", {});
    const kinds = res.content.map((c) => c.content?.$case);
    assert.ok(kinds.includes("image") && kinds.includes("audio") && kinds.includes("resourceLink") && kinds.includes("resource"), kinds.join(","));
    const img = res.content.find((c) => c.content?.$case === "image");
    assert.ok(img?.content?.$case === "image" && img.content.image.data.length > 0 && img.content.image.mimeType !== "");
  });

  test("a deadline ends the call and cancels it upstream", async () => {
    const id = `deadline-${process.pid}`;
    await assert.rejects(client.callTool("ts__wait_cancel", { id, ms: 10_000 }, { timeoutMs: 300 }), (err: unknown) => {
      assert.ok(err instanceof ToolsvcError);
      assert.equal(err.code, status.DEADLINE_EXCEEDED);
      return true;
    });
    await assertCancelledUpstream(id);
  });

  test("an AbortSignal cancels the call upstream", async () => {
    const id = `abort-${process.pid}`;
    const ac = new AbortController();
    const p = client.callTool("ts__wait_cancel", { id, ms: 10_000 }, { signal: ac.signal });
    await waitStarted(id);
    ac.abort();
    await assert.rejects(p, (err: unknown) => err instanceof ToolsvcError && err.code === status.CANCELLED);
    await assertCancelledUpstream(id);
  });
});

async function waitStarted(id: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const rec = await client.callTool("ts__cancel_record", { id });
    if (!rec.isError) {
      return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`wait_cancel ${id} never started`);
}

async function assertCancelledUpstream(id: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const rec = await client.callTool("ts__cancel_record", { id });
    if (!rec.isError && rec.structuredContent?.["cancelled_unix_nanos"]) {
      assert.notEqual(rec.structuredContent["finished"], true);
      return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the upstream never saw call ${id} cancelled`);
}

describe("callToolStream", () => {
  test("yields progress in order, then the result last", async () => {
    const events: ToolStreamEvent[] = [];
    for await (const ev of client.callToolStream("ts__progress", { steps: 4, step_ms: 30 })) {
      events.push(ev);
    }
    // Progress that arrives after the result is dropped (docs/calls.md), so the
    // last step may race the result; the others arrive in order.
    const progress = events.flatMap((e) => (e.type === "progress" ? [e] : []));
    assert.ok(progress.length >= 3, `${progress.length} progress events`);
    progress.forEach((p, i) => {
      assert.equal(p.progress, i + 1);
      assert.equal(p.total, 4);
    });
    const last = events.at(-1);
    assert.ok(last?.type === "result");
    assert.equal(last.result.text, "4 steps");
    assert.equal(events.filter((e) => e.type === "result").length, 1);
  });

  test("leaving the loop early cancels the call", async () => {
    const t0 = Date.now();
    for await (const ev of client.callToolStream("ts__progress", { steps: 100, step_ms: 50 })) {
      assert.equal(ev.type, "progress");
      break; // the tool would run 5 s more
    }
    // The upstream call ends: toolsvc counts no call in flight to ts.
    await eventually(async () => {
      const { servers } = await client.listServers();
      return servers.find((s) => s.name === "ts")?.inFlightCalls === 0;
    }, 4000, "no call in flight");
    assert.ok(Date.now() - t0 < 4500);
  });

  test("an AbortSignal cancels a stream upstream while it waits", async () => {
    const id = `stream-abort-${process.pid}`;
    const ac = new AbortController();
    const consume = (async () => {
      for await (const _ of client.callToolStream("ts__wait_cancel", { id, ms: 10_000 }, { signal: ac.signal })) {
        // wait_cancel sends no progress
      }
    })();
    await waitStarted(id);
    ac.abort();
    await assert.rejects(consume, (err: unknown) => err instanceof ToolsvcError && err.code === status.CANCELLED);
    await assertCancelledUpstream(id);
  });

  test("errors are ToolsvcError", async () => {
    await assert.rejects(
      (async () => {
        for await (const _ of client.callToolStream("ts__nope", {})) {
          // nothing arrives
        }
      })(),
      (err: unknown) => err instanceof ToolsvcError && err.reason === "TOOL_NOT_FOUND",
    );
  });
});

describe("errors carry the server's details", () => {
  test("unknown tool: NOT_FOUND, TOOL_NOT_FOUND, metadata tool", async () => {
    const err = await client.callTool("demo__nope", {}).then(
      () => assert.fail("resolved"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ToolsvcError);
    assert.equal(err.code, status.NOT_FOUND);
    assert.equal(err.codeName, "NOT_FOUND");
    assert.equal(err.reason, "TOOL_NOT_FOUND");
    assert.equal(err.domain, "toolsvc.dev");
    assert.equal(err.metadata["tool"], "demo__nope");
    assert.equal(err.notDispatched, false);
  });

  test("arguments against the schema: INVALID_ARGUMENT, ARGUMENTS_INVALID, the JSON path", async () => {
    const err = await client.callTool("ts__strict", { count: "three" }).then(
      () => assert.fail("resolved"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ToolsvcError);
    assert.equal(err.code, status.INVALID_ARGUMENT);
    assert.equal(err.reason, "ARGUMENTS_INVALID");
    // Named as given: an object's paths under "arguments", JSON text's
    // under "arguments_json" (the field the package sends).
    assert.ok(
      err.fieldViolations.some((v) => v.field === "arguments.count"),
      JSON.stringify(err.fieldViolations),
    );
    assert.ok(!err.message.includes("arguments_json"), err.message);
    const asText = await client.callTool("ts__strict", '{"count": "three"}').then(
      () => assert.fail("resolved"),
      (e: unknown) => e,
    );
    assert.ok(asText instanceof ToolsvcError);
    assert.ok(
      asText.fieldViolations.some((v) => v.field === "arguments_json.count"),
      JSON.stringify(asText.fieldViolations),
    );
    const streamed = await (async () => {
      for await (const _ of client.callToolStream("ts__strict", { count: "three" })) {
        // no event: the call is refused
      }
    })().then(
      () => assert.fail("resolved"),
      (e: unknown) => e,
    );
    assert.ok(streamed instanceof ToolsvcError);
    assert.ok(
      streamed.fieldViolations.some((v) => v.field === "arguments.count"),
      JSON.stringify(streamed.fieldViolations),
    );
  });

  test("arguments that are not a JSON object", async () => {
    const err = await client.callTool("demo__echo", "[1, 2]").then(
      () => assert.fail("resolved"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ToolsvcError);
    assert.equal(err.reason, "ARGUMENTS_INVALID");
    assert.ok(err.fieldViolations.length > 0);
  });

  test("a missing name: REQUEST_INVALID naming the field", async () => {
    const err = await client.callTool("", {}).then(
      () => assert.fail("resolved"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ToolsvcError);
    assert.equal(err.reason, "REQUEST_INVALID");
    assert.deepEqual(
      err.fieldViolations.map((v) => v.field),
      ["name"],
    );
  });
});

describe("listServers", () => {
  test("reports every upstream", async () => {
    const res = await client.listServers();
    assert.deepEqual(
      res.servers.map((s) => s.name),
      ["demo", "ts"],
    );
    assert.ok(res.servers.every((s) => s.toolCount > 0 && s.connectCount >= 1));
    assert.ok(res.servers[0]!.connectedTime instanceof Date);
  });
});
