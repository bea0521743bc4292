// Unit tests of the watcher's contract checks and backoff, against an
// in-memory WatchCatalog stream (the end-to-end behaviour is in
// watch.test.ts against live toolsvc processes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { Metadata, status } from "@grpc/grpc-js";
import { CatalogWatcher, ToolsvcError } from "../src/index.js";
import { Tool, WatchCatalogResponse, type WatchCatalogRequest, type ToolServiceClient } from "../src/gen/toolsvc/v1/toolsvc.js";
import type { ClientInternals } from "../src/client.js";

const rev = (n: number) => n.toString(16).padStart(32, "0");
const tool = (name: string) => Tool.fromPartial({ name, schemaHash: "h" + name });
const snapshot = (r: number, ...names: string[]) =>
  WatchCatalogResponse.fromPartial({ revision: rev(r), event: { $case: "snapshot", snapshot: { tools: names.map(tool), reset: false } } });
const changes = (r: number, upserted: string[], removed: string[] = []) =>
  WatchCatalogResponse.fromPartial({ revision: rev(r), event: { $case: "changes", changes: { upserted: upserted.map(tool), removed } } });
const synced = (r: number) => WatchCatalogResponse.fromPartial({ revision: rev(r), event: { $case: "synced", synced: {} } });
const unavailable = () => Object.assign(new Error("14 UNAVAILABLE: gone"), { code: status.UNAVAILABLE, details: "gone", metadata: new Metadata() });

/** A fake client: stream i delivers scripts[i]'s messages, then fails with its error (or stays open). */
function fake(scripts: { messages: WatchCatalogResponse[]; end?: Error }[]) {
  const requests: WatchCatalogRequest[] = [];
  const raw = {
    watchCatalog(req: WatchCatalogRequest) {
      requests.push(req);
      const s = scripts[Math.min(requests.length - 1, scripts.length - 1)]!;
      const stream = new Readable({ objectMode: true, read() {} });
      for (const m of s.messages) stream.push(m);
      if (s.end) {
        const end = s.end;
        setImmediate(() => stream.destroy(end));
      }
      return Object.assign(stream, { cancel: () => stream.destroy(Object.assign(new Error("cancelled"), { code: status.CANCELLED, details: "", metadata: new Metadata() })) });
    },
  };
  const internals: ClientInternals = { raw: raw as unknown as ToolServiceClient, metadata: () => new Metadata() };
  return { internals, requests };
}

test("applies snapshot and changes, resumes with the last revision and the same filters", async () => {
  const { internals, requests } = fake([
    { messages: [snapshot(1, "a", "b"), changes(2, ["c"], ["a"])], end: unavailable() },
    { messages: [synced(2)] },
  ]);
  const w = new CatalogWatcher(internals, { servers: ["s"], excludeUnavailable: true, minBackoffMs: 1 });
  const kinds: string[] = [];
  for await (const ev of w) {
    kinds.push(`${ev.kind}${ev.resumed ? "*" : ""}`);
    if (ev.kind === "synced") break;
  }
  assert.deepEqual(kinds, ["snapshot", "changes", "synced*"]);
  assert.deepEqual([...w.catalog.keys()].sort(), ["b", "c"]);
  assert.equal(w.revision, rev(2));
  assert.deepEqual(
    requests.map((r) => [r.resumeToken, r.servers, r.excludeUnavailable]),
    [
      ["", ["s"], true],
      [rev(2), ["s"], true],
    ],
  );
});

for (const [what, script] of [
  ["changes before a snapshot", [changes(1, ["a"])]],
  ["synced to another revision", [snapshot(1, "a"), synced(2)]],
  ["an event without a revision", [WatchCatalogResponse.fromPartial({ revision: "", event: { $case: "synced", synced: {} } })]],
  ["an event with no kind", [WatchCatalogResponse.fromPartial({ revision: rev(1) })]],
] as const) {
  test(`a protocol violation ends the watch without resuming: ${what}`, async () => {
    const { internals, requests } = fake([{ messages: [...script] }]);
    const w = new CatalogWatcher(internals, { minBackoffMs: 1 });
    await assert.rejects(w.run(), (e: unknown) => e instanceof ToolsvcError && /watch protocol violation/.test(e.message));
    assert.equal(requests.length, 1);
  });
}

test("backoff: full jitter, doubling to the maximum, back to the minimum after a delivered event", async () => {
  const fails = Array.from({ length: 6 }, () => ({ messages: [] as WatchCatalogResponse[], end: unavailable() }));
  const { internals } = fake([...fails, { messages: [snapshot(1, "a")], end: unavailable() }, { messages: [], end: unavailable() }, { messages: [synced(1)] }]);
  const waits: number[] = [];
  const w = new CatalogWatcher(internals, { minBackoffMs: 2, maxBackoffMs: 16, onRetry: (_e, ms) => waits.push(ms) });
  for await (const ev of w) {
    if (ev.kind === "synced") break;
  }
  // Bounds per attempt: min 2 doubling to max 16: 2, 4, 8, 16, 16, 16; then
  // the stream that delivered the snapshot resets it to 2; the next failure
  // (no event) waits up to 2 and doubles to 4.
  const bounds = [2, 4, 8, 16, 16, 16, 2, 4];
  assert.equal(waits.length, bounds.length, waits.join(","));
  waits.forEach((ms, i) => assert.ok(ms >= 1 && ms <= bounds[i]! + 1, `wait ${i} = ${ms}, bound ${bounds[i]}`));
});

test("close() ends an iteration waiting for the next event, and one waiting to resume", async () => {
  const open = fake([{ messages: [snapshot(1, "a")] }]);
  const w1 = new CatalogWatcher(open.internals);
  const it = w1[Symbol.asyncIterator]();
  await it.next();
  const pending = it.next();
  w1.close();
  assert.equal((await pending).done, true);

  const failing = fake([{ messages: [], end: unavailable() }]);
  const w2 = new CatalogWatcher(failing.internals, { minBackoffMs: 60_000 });
  const run = w2.run();
  await new Promise((r) => setTimeout(r, 50));
  const t0 = Date.now();
  w2.close();
  await run;
  assert.ok(Date.now() - t0 < 1000);
});
