// A toolsvc client in Node with the @toolsvc/client package: list the
// catalog, watch it, call a tool, call one with progress streaming, and
// resume the watch from the last revision seen.
//
//   node client.mjs ADDR TOOL [ARGS_JSON [STREAM_TOOL STREAM_ARGS_JSON [WAIT_S]]]
//
// Without STREAM_TOOL the streaming call calls TOOL with ARGS_JSON again.
// The resumed watch stops at the first change, or at "synced" (nothing
// changed yet) unless WAIT_S (default 0) asks to watch that many seconds
// more for one.
import { Client } from "@toolsvc/client";

const [addr, tool, argsJSON = "{}", streamToolArg, streamArgsArg, waitArg = "0"] = process.argv.slice(2);
// Without a streaming tool, the same call streamed.
const [streamTool, streamArgs] = streamToolArg ? [streamToolArg, streamArgsArg ?? "{}"] : [tool, argsJSON];
const waitMs = Number(waitArg) * 1000;
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
let timer; // set at synced when WAIT_S asks to watch on; closing the watch ends the loop
let changed = false;
for await (const ev of watch) {
  if (ev.kind === "changes") {
    const names = [...ev.upserted.map((t) => "+" + t.name), ...ev.removed.map((n) => "-" + n)];
    console.log("changes", ev.revision, names.join(" "));
    changed = true;
    break;
  }
  console.log(ev.kind, ev.revision); // synced, progress, or a reset snapshot
  if (ev.kind !== "progress") { // the catalog held is current
    if (waitMs <= 0) break;
    timer ??= setTimeout(() => watch.close(), waitMs);
  }
}
clearTimeout(timer);
if (!changed && waitMs > 0) console.log(`no change within ${waitMs / 1000}s`);
watch.close();
console.log("catalog now", watch.catalog.size, "tools");
// Resources and prompts (through the generated client, client.raw): read the
// first resource listed (server + uri; a resource_link from a tool result
// reads the same way, with the called tool's server) and get the first
// prompt (required arguments = "world").
const rpc = (method, req) =>
  new Promise((resolve, reject) =>
    client.raw[method](req, { deadline: Date.now() + 30_000 }, (err, res) => (err ? reject(err) : resolve(res))));
const { resources } = await rpc("listResources", { pageSize: 0, pageToken: "", servers: [] });
for (const r of resources) console.log("resource", r.server, r.uri);
if (resources.length > 0) {
  const read = await rpc("readResource", { server: resources[0].server, uri: resources[0].uri, inputResponses: [], requestState: "" });
  for (const c of read.contents) {
    console.log("read", c.uri, c.contents?.$case === "blob" ? `${c.contents.blob.length} bytes` : (c.contents?.text ?? "").split("\n")[0]);
  }
}
const { prompts } = await rpc("listPrompts", { pageSize: 0, pageToken: "" });
for (const p of prompts) console.log("prompt", p.name);
if (prompts.length > 0) {
  const args = Object.fromEntries(prompts[0].arguments.filter((a) => a.required).map((a) => [a.name, "world"]));
  const got = await rpc("getPrompt", { name: prompts[0].name, arguments: args, inputResponses: [], requestState: "" });
  for (const m of got.messages) {
    const c = m.content?.content;
    console.log("got prompt", prompts[0].name, `${m.role}:`, c?.$case === "text" ? c.text.text : "");
  }
}
client.close();
