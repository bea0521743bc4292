// A toolsvc client in Node with the @toolsvc/client package: list the
// catalog, watch it, call a tool, call one with progress streaming, and
// resume the watch from the last revision seen.
//
//   node client.mjs ADDR TOOL [ARGS_JSON [STREAM_TOOL STREAM_ARGS_JSON]]
import { Client } from "@toolsvc/client";

const [addr, tool, argsJSON = "{}", streamTool = tool, streamArgs = "{}"] = process.argv.slice(2);
const client = new Client(addr);

// List: every page.
for (const t of await client.listTools({ timeoutMs: 30_000 })) console.log("tool", t.name);

// Watch: the first event is a snapshot; keep the catalog and its revision.
let watch = client.watch();
const snap = (await watch[Symbol.asyncIterator]().next()).value;
console.log("snapshot", snap.revision, watch.catalog.size, "tools");
const held = [...watch.catalog.values()];
watch.close(); // as if the process stopped; resumed below

// Call. A tool's own failure is isError, not an exception.
const res = await client.callTool(tool, argsJSON, { timeoutMs: 30_000 });
console.log("call", tool, res.isError ? "is_error" : "ok", res.text);

// Streaming call: progress as it comes, the result last.
for await (const ev of client.callToolStream(streamTool, streamArgs, { timeoutMs: 30_000 })) {
  if (ev.type === "progress") console.log(`progress ${ev.progress}/${ev.total ?? "?"} ${ev.message}`);
  else console.log("stream result", ev.result.isError ? "is_error" : "ok", ev.result.text);
}

// Resume from the revision held: only what changed since arrives (the
// watcher also resumes by itself after a dropped stream, on any replica).
console.log("resumed from", snap.revision);
watch = client.watch({ resumeToken: snap.revision, initial: held });
for await (const ev of watch) {
  if (ev.kind === "changes") {
    const names = [...ev.upserted.map((t) => "+" + t.name), ...ev.removed.map((n) => "-" + n)];
    console.log("changes", ev.revision, names.join(" "));
    break;
  }
  console.log(ev.kind, ev.revision); // synced, progress, or a reset snapshot
}
console.log("catalog now", watch.catalog.size, "tools");
client.close();
