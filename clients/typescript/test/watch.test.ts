// The watch contract (docs/watching.md, catalogwatch in Go)
// against live toolsvc processes: snapshot then changes, resume on another
// replica, reset, rejected requests, close; and the load-balancing config.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client, loadBalancingServiceConfig, status, ToolsvcError, type Tool, type WatchEvent } from "../src/index.js";
import { eventually, freePort, testserverBin, Toolsvc, toolsvcBin } from "./harness.js";

const started: Toolsvc[] = [];
const clients: Client[] = [];
after(async () => {
  clients.forEach((c) => c.close());
  await Promise.all(started.map((s) => s.stop()));
});

async function start(config: object, listen?: string): Promise<Toolsvc> {
  const s = await Toolsvc.start(config, listen);
  started.push(s);
  return s;
}

function connect(target: string, options?: ConstructorParameters<typeof Client>[1]): Client {
  const c = new Client(target, options);
  clients.push(c);
  return c;
}

const tsConfig = () => ({ mcpServers: { ts: { command: testserverBin(), args: ["-mode", "stdio"] } } });
const demoConfig = () => ({ mcpServers: { demo: { command: toolsvcBin(), args: ["demo-server"] } } });

/** The catalog as name → schemaHash/available, for comparing a watcher with ListTools. */
function summary(tools: Iterable<Tool>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of tools) {
    out[t.name] = `${t.schemaHash}/${t.available}`;
  }
  return out;
}

/** Reads events from it until one satisfies pred. */
async function until(it: AsyncIterator<WatchEvent>, pred: (ev: WatchEvent) => boolean, seen: WatchEvent[] = []): Promise<WatchEvent> {
  for (;;) {
    const r = await it.next();
    assert.ok(!r.done, "the watch ended");
    seen.push(r.value);
    if (pred(r.value)) {
      return r.value;
    }
  }
}

describe("watch", () => {
  test("a snapshot, then changes as they happen; catalog always equals the server's", async () => {
    const svc = await start(tsConfig());
    const client = connect(svc.addr);
    const w = client.watch();
    const it = w[Symbol.asyncIterator]();
    const first = (await it.next()).value as WatchEvent;
    assert.equal(first.kind, "snapshot");
    assert.equal(first.resumed, false);
    assert.match(first.revision, /^[0-9a-f]{32}$/);
    assert.equal(w.revision, first.revision);
    assert.ok(w.catalog.has("ts__echo"));
    assert.deepEqual(summary(w.catalog.values()), summary(await client.listTools()));

    await client.callTool("ts__add_tool", { name: "watched" });
    const ev = await until(it, (e) => e.kind === "changes" && e.upserted.some((t) => t.name === "ts__watched"));
    assert.notEqual(ev.revision, first.revision);
    assert.ok(w.catalog.has("ts__watched"));
    assert.deepEqual(summary(w.catalog.values()), summary(await client.listTools()));
    assert.deepEqual(
      w.list().map((t) => t.name),
      [...w.catalog.keys()].sort(),
    );

    w.close();
    assert.equal((await it.next()).done, true);
    assert.equal(w.streams, 1);
  });

  test("resumes from the last revision on another replica: synced, nothing replaced", async () => {
    const port = await freePort();
    const a = await start(demoConfig(), `127.0.0.1:${port}`);
    const client = connect(`127.0.0.1:${port}`);
    const retries: ToolsvcError[] = [];
    const w = client.watch({ maxBackoffMs: 300, onRetry: (err) => retries.push(err) });
    const it = w[Symbol.asyncIterator]();
    const snap = (await it.next()).value as WatchEvent;
    assert.equal(snap.kind, "snapshot");
    const held = w.catalog.get("demo__add");

    await a.stop(); // the replica drains: the stream ends with UNAVAILABLE
    await start(demoConfig(), `127.0.0.1:${port}`); // another process, same upstream catalog

    const ev = (await it.next()).value as WatchEvent;
    assert.equal(ev.kind, "synced");
    assert.equal(ev.resumed, true);
    assert.equal(ev.revision, snap.revision);
    assert.equal(w.catalog.get("demo__add"), held, "a synced resume replaces nothing");
    assert.ok(w.streams >= 2);
    assert.ok(retries.length >= 1 && retries.every((e) => e.code === status.UNAVAILABLE), retries.map((e) => e.message).join("; "));
    w.close();
  });

  test("a token the server cannot serve brings a reset snapshot that replaces the local catalog", async () => {
    const svc = await start(demoConfig());
    const client = connect(svc.addr);
    const stale = { ...(await client.listTools())[0]!, name: "gone__tool" };
    const w = client.watch({ resumeToken: "0".repeat(32), initial: [stale] });
    assert.equal(w.revision, "0".repeat(32));
    assert.ok(w.catalog.has("gone__tool"));
    const it = w[Symbol.asyncIterator]();
    const ev = (await it.next()).value as WatchEvent;
    assert.equal(ev.kind, "reset");
    assert.equal(ev.resumed, true);
    assert.equal(w.catalog.has("gone__tool"), false);
    assert.deepEqual(summary(w.catalog.values()), summary(ev.tools));
    w.close();
  });

  test("a rejected request ends the watch with the error, without resuming", async () => {
    const svc = await start(demoConfig());
    const client = connect(svc.addr);
    const w = client.watch({ servers: ["nope"] });
    await assert.rejects(w.run(), (err: unknown) => {
      assert.ok(err instanceof ToolsvcError);
      assert.equal(err.code, status.NOT_FOUND);
      assert.equal(err.reason, "SERVER_NOT_FOUND");
      return true;
    });
    assert.equal(w.streams, 1);
  });

  test("start() resolves with the catalog in; run() applies until close()", async () => {
    const svc = await start(demoConfig());
    const client = connect(svc.addr);
    const w = client.watch({ servers: ["demo"], excludeUnavailable: true });
    const kinds: string[] = [];
    await w.start((ev) => kinds.push(ev.kind));
    assert.equal(w.catalog.size, 3);
    w.close();
    await w.done;
    assert.deepEqual(kinds, ["snapshot"]);
  });
});

describe("load balancing", () => {
  test("loadBalancingServiceConfig spreads calls over every replica the target resolves to", async () => {
    const [a, b] = await Promise.all([start(tsConfig()), start(tsConfig())]);
    const client = connect(`ipv4:${a.addr},${b.addr}`, { serviceConfig: loadBalancingServiceConfig });
    const echoes = async () => {
      const counts = [];
      for (const s of [a, b]) {
        const stats = await connect(s.addr).callTool("ts__call_stats", {});
        counts.push(Number(stats.structuredContent?.["echo"] ?? 0));
      }
      return counts;
    };
    // Until both connections are up, round_robin uses the ready one.
    await eventually(async () => {
      await client.callTool("ts__echo", { text: "x" });
      return (await echoes()).every((n) => n > 0);
    }, 10_000, "both replicas to get calls");
    const base = await echoes();
    for (let i = 0; i < 20; i++) {
      await client.callTool("ts__echo", { text: "x" });
    }
    const counts = (await echoes()).map((n, i) => n - base[i]!);
    assert.equal(counts[0]! + counts[1]!, 20);
    assert.ok(counts.every((n) => n >= 8), counts.join("/"));
  });
});
