// Bearer tokens and TLS against a live toolsvc with auth and TLS on: the
// token reaches every RPC (calls, listings, watches), refusals are
// UNAUTHENTICATED / PERMISSION_DENIED with ErrorInfo, and a refused watch is
// not resumed.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client, status, ToolsvcError } from "../src/index.js";
import { scratch, Toolsvc, toolsvcBin } from "./harness.js";

let svc: Toolsvc;
let ca: Buffer;
const clients: Client[] = [];
const token = "tok-" + "a".repeat(24);
const tokenB = "tok-" + "b".repeat(24);

before(async () => {
  const dir = scratch();
  // A self-signed certificate for 127.0.0.1, which is also the CA the client trusts.
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
    "-subj", "/CN=toolsvc-test", "-addext", "subjectAltName=IP:127.0.0.1",
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
  ca = readFileSync(join(dir, "cert.pem"));
  svc = await Toolsvc.start(
    {
      auth: {
        tokens: { "team-a": token, "team-b": tokenB },
        rules: [
          { principal: "team-a", allow: ["demo__add", "demo__echo"], deny: ["demo__echo"] },
          { principal: "team-b", allow: ["demo__add"] },
        ],
        rateLimits: [{ principal: "team-b", callsPerSecond: 2, burst: 1 }],
      },
      mcpServers: { demo: { command: toolsvcBin(), args: ["demo-server"] } },
    },
    "127.0.0.1:0",
    ["--tls-cert", join(dir, "cert.pem"), "--tls-key", join(dir, "key.pem")],
  );
});

after(async () => {
  clients.forEach((c) => c.close());
  await svc?.stop();
});

function connect(options: ConstructorParameters<typeof Client>[1]): Client {
  const c = new Client(svc.addr, options);
  clients.push(c);
  return c;
}

test("with the token over TLS: the principal's tools only, everywhere", async () => {
  const client = connect({ token, tls: { ca } });
  const names = (await client.listTools()).map((t) => t.name);
  assert.deepEqual(names, ["demo__add"]);
  const res = await client.callTool("demo__add", { a: 1, b: 2 });
  assert.deepEqual(res.structuredContent, { sum: 3 });

  const denied = await client.callTool("demo__echo", { text: "x" }).catch((e: unknown) => e);
  assert.ok(denied instanceof ToolsvcError);
  assert.equal(denied.code, status.PERMISSION_DENIED);
  assert.equal(denied.reason, "PERMISSION_DENIED");

  const w = client.watch();
  await w.start();
  assert.deepEqual([...w.catalog.keys()], ["demo__add"]);
  w.close();
});

test("without a token, or a wrong one: UNAUTHENTICATED, and a watch is not resumed", async () => {
  for (const options of [{ tls: { ca } }, { tls: { ca }, token: "wrong" }]) {
    const client = connect({ ...options, retry: false });
    const err = await client.listTools().catch((e: unknown) => e);
    assert.ok(err instanceof ToolsvcError, String(err));
    assert.equal(err.code, status.UNAUTHENTICATED);
    assert.equal(err.reason, "UNAUTHENTICATED");
    assert.ok(!err.message.includes(token));
    const w = client.watch();
    await assert.rejects(w.run(), (e: unknown) => e instanceof ToolsvcError && e.code === status.UNAUTHENTICATED);
    assert.equal(w.streams, 1);
  }
});

test("plaintext against a TLS server fails as UNAVAILABLE", async () => {
  const client = connect({ token, retry: false });
  const err = await client.callTool("demo__add", { a: 1, b: 2 }, { timeoutMs: 5000 }).catch((e: unknown) => e);
  assert.ok(err instanceof ToolsvcError);
  assert.ok([status.UNAVAILABLE, status.DEADLINE_EXCEEDED].includes(err.code), err.message);
});

test("RATE_LIMITED is not dispatched: retried after its RetryInfo delay", async () => {
  const plain = connect({ token: tokenB, tls: { ca }, retry: false });
  let limited: ToolsvcError | undefined;
  for (let i = 0; i < 5 && !limited; i++) {
    const e = await plain.callTool("demo__add", { a: 1, b: 1 }).catch((e: unknown) => e);
    if (e instanceof ToolsvcError) {
      limited = e;
    }
  }
  assert.ok(limited, "no call was rate limited");
  assert.equal(limited.code, status.RESOURCE_EXHAUSTED);
  assert.equal(limited.reason, "RATE_LIMITED");
  assert.equal(limited.metadata["principal"], "team-b");
  assert.ok(limited.notDispatched && limited.retryDelayMs! > 0);

  const waits: { reason: string; waitMs: number; delay: number | undefined }[] = [];
  const retrying = connect({
    token: tokenB,
    tls: { ca },
    retry: { maxAttempts: 5, onRetry: (err, _n, waitMs) => waits.push({ reason: err.reason, waitMs, delay: err.retryDelayMs }) },
  });
  for (let i = 0; i < 4; i++) {
    const res = await retrying.callTool("demo__add", { a: i, b: 1 });
    assert.deepEqual(res.structuredContent, { sum: i + 1 });
  }
  assert.ok(waits.length > 0, "four calls at 2/s with a burst of 1 were never limited");
  assert.ok(waits.every((w) => w.reason === "RATE_LIMITED" && w.delay !== undefined && w.waitMs >= w.delay), JSON.stringify(waits));
});
