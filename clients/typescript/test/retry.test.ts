// The retry rule for calls, with errors produced by a live toolsvc whose
// upstream really dies: a call that was running when its session died is
// never retried (it may have run); calls the server says were not
// dispatched (no_session, CIRCUIT_OPEN) are, within the deadline.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client, status, ToolsvcError } from "../src/index.js";
import { eventually, scratch, testserverBin, Toolsvc } from "./harness.js";

let svc: Toolsvc;
let dir: string;
const retries: { err: ToolsvcError; attempt: number; waitMs: number }[] = [];
let client: Client;

before(async () => {
  dir = scratch();
  // The upstream starts once; every reconnect after its death fails.
  const script = `echo $$ > '${dir}/pid'; [ -e '${dir}/started' ] && exit 1; touch '${dir}/started'; exec '${testserverBin()}' -mode stdio`;
  svc = await Toolsvc.start({
    mcpServers: {
      fl: {
        command: "sh",
        args: ["-c", script],
        backoff: { base: "20ms", max: "50ms" },
        breaker: { failures: 3, cooldown: "400ms", maxCooldown: "400ms" },
      },
    },
  });
  client = new Client(svc.addr, { retry: { maxAttempts: 3, initialBackoffMs: 20, onRetry: (err, attempt, waitMs) => retries.push({ err, attempt, waitMs }) } });
});

after(async () => {
  client?.close();
  await svc?.stop();
});

test("a call whose session dies under it is not retried; later calls are, and only while not dispatched", async () => {
  const id = "running";
  const running = client.callTool("fl__wait_cancel", { id, ms: 20_000 });
  await eventually(async () => !(await client.callTool("fl__cancel_record", { id })).isError, 10_000, "the call to start");
  process.kill(Number(readFileSync(join(dir, "pid"), "utf8").trim()), "SIGKILL");

  const lost = await running.then(
    () => assert.fail("resolved"),
    (e: unknown) => e,
  );
  assert.ok(lost instanceof ToolsvcError);
  assert.equal(lost.code, status.UNAVAILABLE);
  assert.equal(lost.reason, "UPSTREAM_UNAVAILABLE");
  assert.equal(lost.metadata["unavailable_reason"], "session_lost");
  assert.equal(lost.notDispatched, false);
  assert.equal(retries.length, 0, "session_lost must not be retried");

  // The session is gone and cannot come back: every call is refused
  // before dispatch (no_session), then fast by the open breaker.
  const refused = await client.callTool("fl__echo", { text: "x" }).then(
    () => assert.fail("resolved"),
    (e: unknown) => e,
  );
  assert.ok(refused instanceof ToolsvcError && refused.notDispatched, String(refused));
  assert.equal(retries.length, 2, "maxAttempts 3: two retries");
  assert.deepEqual(
    retries.map((r) => r.attempt),
    [1, 2],
  );
  assert.ok(retries.every((r) => r.err.notDispatched));
  assert.ok(
    retries.every((r) => ["UPSTREAM_UNAVAILABLE", "CIRCUIT_OPEN"].includes(r.err.reason)),
    retries.map((r) => r.err.reason).join(","),
  );
});

test("CIRCUIT_OPEN is retried after its RetryInfo delay, not when the deadline is sooner", async () => {
  // The breaker opens: seen without retries.
  const plain = new Client(svc.addr, { retry: false });
  try {
    await eventually(
      async () => {
        const e = await plain.callTool("fl__echo", { text: "x" }).catch((e: unknown) => e);
        return e instanceof ToolsvcError && e.reason === "CIRCUIT_OPEN" && e.retryDelayMs !== undefined && e.notDispatched;
      },
      15_000,
      "the breaker to open",
    );
  } finally {
    plain.close();
  }
  // The retrying client waits at least the delay the server asked for.
  await eventually(
    async () => {
      await client.callTool("fl__echo", { text: "x" }, { timeoutMs: 5000 }).catch(() => undefined);
      return retries.some((r) => r.err.reason === "CIRCUIT_OPEN");
    },
    15_000,
    "a CIRCUIT_OPEN retry",
  );
  const waits = retries.filter((r) => r.err.reason === "CIRCUIT_OPEN");
  assert.ok(
    waits.every((r) => r.err.retryDelayMs !== undefined && r.waitMs >= r.err.retryDelayMs),
    JSON.stringify(waits.map((r) => [r.waitMs, r.err.retryDelayMs])),
  );

  // With 30 ms left and a longer delay, there is no retry: the error comes at once.
  await eventually(
    async () => {
      const before = retries.length;
      const e = await client.callTool("fl__echo", { text: "x" }, { timeoutMs: 30 }).catch((e: unknown) => e);
      return e instanceof ToolsvcError && e.reason === "CIRCUIT_OPEN" && e.retryDelayMs! > 30 && retries.length === before;
    },
    15_000,
    "CIRCUIT_OPEN thrown without a retry",
  );
});

test("callToolStream follows the same rule: not-dispatched failures before any message are retried", async () => {
  const before = retries.length;
  const err = await (async () => {
    for await (const _ of client.callToolStream("fl__echo", { text: "x" }, { timeoutMs: 10_000 })) {
      // the upstream is gone: nothing arrives
    }
  })().then(
    () => assert.fail("resolved"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ToolsvcError && err.notDispatched, String(err));
  const mine = retries.slice(before);
  assert.ok(mine.length >= 1 && mine.length <= 2, `${mine.length} retries`);
  assert.ok(mine.every((r) => r.err.notDispatched));
});

test("idempotent: true retries any UNAVAILABLE; a request error is never retried", async () => {
  const before = retries.length;
  const e = await client.callTool("fl__echo", { text: "x" }, { idempotent: true, timeoutMs: 10_000 }).catch((e: unknown) => e);
  assert.ok(e instanceof ToolsvcError && e.code === status.UNAVAILABLE);
  assert.ok(retries.length > before);
  const n = retries.length;
  const bad = await client.callTool("fl__nope", {}, { idempotent: true }).catch((e: unknown) => e);
  assert.ok(bad instanceof ToolsvcError && bad.code === status.NOT_FOUND);
  assert.equal(retries.length, n);
});
