// Unit tests of the watcher's contract checks and backoff, against an
// in-memory WatchCatalog stream (the end-to-end behaviour is in
// watch.test.ts against live toolsvc processes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { Metadata, status } from "@grpc/grpc-js";
import { CatalogWatcher, ToolsvcError } from "../src/index.js";
import { Tool, WatchCatalogResponse, type WatchCatalogRequest, type ToolServiceClient } from "../src/gen/toolsvc/v1/toolsvc.js";
import { Status } from "../src/gen/google/rpc/status.js";
import { ErrorInfo, RetryInfo } from "../src/gen/google/rpc/error_details.js";
import type { ClientInternals } from "../src/result.js";

const rev = (n: number) => n.toString(16).padStart(32, "0");
const tool = (name: string) => Tool.fromPartial({ name, schemaHash: "h" + name });
const snapshot = (r: number, ...names: string[]) =>
  WatchCatalogResponse.fromPartial({ revision: rev(r), event: { $case: "snapshot", snapshot: { tools: names.map(tool), reset: false } } });
const changes = (r: number, upserted: string[], removed: string[] = []) =>
  WatchCatalogResponse.fromPartial({ revision: rev(r), event: { $case: "changes", changes: { upserted: upserted.map(tool), removed } } });
const synced = (r: number) => WatchCatalogResponse.fromPartial({ revision: rev(r), event: { $case: "synced", synced: {} } });
/** m as a part of a split event: fragment = true (every part but the last). */
const part = (m: WatchCatalogResponse): WatchCatalogResponse => ({ ...m, fragment: true });
/** RESOURCE_EXHAUSTED as toolsvc sends it: RESPONSE_TOO_LARGE (a size), or with RetryInfo (a rate). */
const exhausted = (retryDelayMs?: number) => {
  const details = [
    { typeUrl: "type.googleapis.com/google.rpc.ErrorInfo", value: Buffer.from(ErrorInfo.encode({ reason: retryDelayMs === undefined ? "RESPONSE_TOO_LARGE" : "RATE_LIMITED", domain: "toolsvc.dev", metadata: {} }).finish()) },
  ];
  if (retryDelayMs !== undefined) {
    const retryDelay = { seconds: Math.floor(retryDelayMs / 1000), nanos: (retryDelayMs % 1000) * 1e6 };
    details.push({ typeUrl: "type.googleapis.com/google.rpc.RetryInfo", value: Buffer.from(RetryInfo.encode({ retryDelay }).finish()) });
  }
  const metadata = new Metadata();
  metadata.set("grpc-status-details-bin", Buffer.from(Status.encode({ code: status.RESOURCE_EXHAUSTED, message: "exhausted", details }).finish()));
  return Object.assign(new Error("8 RESOURCE_EXHAUSTED: exhausted"), { code: status.RESOURCE_EXHAUSTED, details: "exhausted", metadata });
};
const unavailable = () => Object.assign(new Error("14 UNAVAILABLE: gone"), { code: status.UNAVAILABLE, details: "gone", metadata: new Metadata() });

/** A fake client: stream i delivers scripts[i]'s messages, then fails with its error (or stays open). */
function fake(scripts: { messages: WatchCatalogResponse[]; end?: Error }[]) {
  const requests: WatchCatalogRequest[] = [];
  const streams: Readable[] = []; // to push more messages into an open stream
  const raw = {
    watchCatalog(req: WatchCatalogRequest) {
      requests.push(req);
      const s = scripts[Math.min(requests.length - 1, scripts.length - 1)]!;
      const stream = new Readable({ objectMode: true, read() {} });
      streams.push(stream);
      for (const m of s.messages) stream.push(m);
      if (s.end) {
        const end = s.end;
        setImmediate(() => stream.destroy(end));
      }
      return Object.assign(stream, { cancel: () => stream.destroy(Object.assign(new Error("cancelled"), { code: status.CANCELLED, details: "", metadata: new Metadata() })) });
    },
  };
  const internals: ClientInternals = { raw: raw as unknown as ToolServiceClient, metadata: () => new Metadata() };
  return { internals, requests, streams };
}

/** Resolves once cond() holds (polling on the event loop), or fails after 5 s. */
async function until(cond: () => boolean): Promise<void> {
  for (const t0 = Date.now(); !cond(); ) {
    assert.ok(Date.now() - t0 < 5000, "timed out");
    await new Promise((r) => setTimeout(r, 1));
  }
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
  ["a part of another revision", [part(snapshot(1, "a")), snapshot(2, "b")]],
  ["a part of another kind", [snapshot(1, "a"), part(changes(2, ["b"])), snapshot(2, "c")]],
  ["a synced in parts", [snapshot(1, "a"), part(synced(1)), synced(1)]],
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

test("a split event is applied whole when its last part arrives: the callback sees one event", async () => {
  const { internals, streams } = fake([{ messages: [part(snapshot(1, "a", "b")), part(snapshot(1, "c"))] }]);
  const w = new CatalogWatcher(internals);
  const events: { kind: string; revision: string; names: string[]; catalog: string[]; fragment: boolean }[] = [];
  const started = w.start((ev) =>
    events.push({
      kind: ev.kind,
      revision: ev.revision,
      names: [...ev.tools, ...ev.upserted].map((t) => t.name).concat(ev.removed.map((n) => "-" + n)),
      catalog: [...w.catalog.keys()].sort(),
      fragment: ev.raw.fragment,
    }),
  );
  await until(() => streams.length === 1 && streams[0]!.readableLength === 0); // both parts read
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual([events.length, w.catalog.size, w.revision], [0, 0, ""]); // never part of a snapshot
  streams[0]!.push(snapshot(1, "d"));
  await started;
  assert.deepEqual(events, [{ kind: "snapshot", revision: rev(1), names: ["a", "b", "c", "d"], catalog: ["a", "b", "c", "d"], fragment: false }]);

  // A split changes event: its upserts and removals are applied together.
  streams[0]!.push(part(changes(2, ["e"], ["a"])));
  streams[0]!.push(part(changes(2, ["f"])));
  await until(() => streams[0]!.readableLength === 0);
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual([events.length, w.revision, [...w.catalog.keys()].sort()], [1, rev(1), ["a", "b", "c", "d"]]);
  streams[0]!.push(changes(2, [], ["b"]));
  await until(() => events.length === 2);
  assert.deepEqual(events[1], { kind: "changes", revision: rev(2), names: ["e", "f", "-a", "-b"], catalog: ["c", "d", "e", "f"], fragment: false });
  w.close();
  await w.done;
});

test("a stream that ends between parts resumes with the old resume token; the parts are dropped", async () => {
  const { internals, requests } = fake([
    { messages: [snapshot(1, "a"), part(changes(2, ["b"])), part(changes(2, ["c"]))], end: unavailable() },
    { messages: [changes(2, ["d"])] },
  ]);
  const w = new CatalogWatcher(internals, { minBackoffMs: 1 });
  const seen: string[] = [];
  for await (const ev of w) {
    seen.push(`${ev.kind}${ev.resumed ? "*" : ""}:${ev.upserted.map((t) => t.name).join(",")}`);
    if (ev.kind === "changes") break;
  }
  assert.deepEqual(seen, ["snapshot:", "changes*:d"]); // b and c never applied
  assert.deepEqual([...w.catalog.keys()].sort(), ["a", "d"]);
  assert.deepEqual(
    requests.map((r) => r.resumeToken),
    ["", rev(1)],
  );
});

test("RESOURCE_EXHAUSTED without RetryInfo ends the watch (a size: not retried); with RetryInfo it is retried", async () => {
  const tooLarge = fake([{ messages: [snapshot(1, "a")], end: exhausted() }, { messages: [synced(1)] }]);
  const w1 = new CatalogWatcher(tooLarge.internals, { minBackoffMs: 1 });
  await assert.rejects(
    w1.run(),
    (e: unknown) => e instanceof ToolsvcError && e.code === status.RESOURCE_EXHAUSTED && e.reason === "RESPONSE_TOO_LARGE" && e.retryDelayMs === undefined,
  );
  assert.equal(tooLarge.requests.length, 1);
  assert.equal(w1.revision, rev(1));

  const limited = fake([{ messages: [snapshot(1, "a")], end: exhausted(5) }, { messages: [synced(1)] }]);
  const retries: ToolsvcError[] = [];
  const w2 = new CatalogWatcher(limited.internals, { minBackoffMs: 1, onRetry: (e) => retries.push(e) });
  const kinds: string[] = [];
  for await (const ev of w2) {
    kinds.push(`${ev.kind}${ev.resumed ? "*" : ""}`);
    if (ev.kind === "synced") break;
  }
  assert.deepEqual(kinds, ["snapshot", "synced*"]);
  assert.deepEqual(
    retries.map((e) => [e.code, e.retryDelayMs]),
    [[status.RESOURCE_EXHAUSTED, 5]],
  );
  assert.deepEqual(
    limited.requests.map((r) => r.resumeToken),
    ["", rev(1)],
  );
});

test("an event in more than 10,000 parts is a protocol violation, not retried (10,000 parts are applied)", async () => {
  const fill = (n: number, m: (i: number) => WatchCatalogResponse) => Array.from({ length: n }, (_, i) => part(m(i)));
  const { internals, requests } = fake([
    {
      messages: [
        ...fill(9_999, (i) => snapshot(1, `t${i}`)),
        snapshot(1, "last"), // the 10,000th part
        ...fill(10_001, (i) => changes(2, [`u${i}`])),
        changes(2, ["never"]),
      ],
    },
  ]);
  const w = new CatalogWatcher(internals, { minBackoffMs: 1 });
  const events: string[] = [];
  await assert.rejects(
    w.run((ev) => events.push(`${ev.kind}:${ev.tools.length}`)),
    (e: unknown) => e instanceof ToolsvcError && e.code === status.INTERNAL && /watch protocol violation: an event in more than 10000 parts/.test(e.message),
  );
  assert.deepEqual(events, ["snapshot:10000"]);
  assert.equal(w.revision, rev(1));
  assert.equal(w.catalog.has("u0"), false);
  assert.equal(requests.length, 1);
});

test("an event over 256 MiB of encoded parts is a protocol violation, not retried", async () => {
  const big = "x".repeat(16 << 20); // one string shared by every part: only the encoding is 16 MiB each
  const bigPart = () => part(WatchCatalogResponse.fromPartial({ revision: rev(1), event: { $case: "snapshot", snapshot: { tools: [{ name: "t", description: big }] } } }));
  const { internals, requests } = fake([{ messages: Array.from({ length: 17 }, bigPart) }, { messages: [synced(1)] }]);
  const w = new CatalogWatcher(internals, { minBackoffMs: 1 });
  await assert.rejects(w.run(), (e: unknown) => e instanceof ToolsvcError && /watch protocol violation: .* 256 MiB \(part 16, /.test(e.message));
  assert.deepEqual([requests.length, w.revision, w.catalog.size], [1, "", 0]);
});
