// A toolsvc client in Node: list the catalog, watch it, call a tool, call one
// with progress streaming, and resume the watch from the last revision seen.
//
//   node client.mjs ADDR TOOL [ARGS_JSON [STREAM_TOOL STREAM_ARGS_JSON]]
//
// The API is loaded from proto/ at run time (no generated code).
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const [addr, tool, argsJSON = "{}", streamTool = tool, streamArgs = "{}"] = process.argv.slice(2);
const protoDir = process.env.TOOLSVC_PROTO ?? fileURLToPath(new URL("../../proto", import.meta.url));
const def = protoLoader.loadSync("toolsvc/v1/toolsvc.proto", { includeDirs: [protoDir], keepCase: true, longs: String, arrays: true, oneofs: true });
const { ToolService } = grpc.loadPackageDefinition(def).toolsvc.v1;
const client = new ToolService(addr, grpc.credentials.createInsecure());
const deadline = (s) => ({ deadline: Date.now() + s * 1000 });
const unary = (method, req) =>
  new Promise((resolve, reject) => client[method](req, deadline(30), (err, res) => (err ? reject(err) : resolve(res))));

// List: page until next_page_token is empty.
let token = "";
do {
  const page = await unary("ListTools", { page_token: token });
  for (const t of page.tools) console.log("tool", t.name);
  token = page.next_page_token;
} while (token);

// Watch: the first message is a snapshot; keep its revision.
let revision = await new Promise((resolve, reject) => {
  const watch = client.WatchCatalog({});
  watch.once("data", (ev) => {
    console.log("snapshot", ev.revision, ev.snapshot.tools.length, "tools");
    watch.cancel(); // as if the connection dropped
    resolve(ev.revision);
  });
  watch.on("error", (err) => err.code !== grpc.status.CANCELLED && reject(err));
});

// Call. A tool's own failure is is_error, not an RPC error.
const res = await unary("CallTool", { name: tool, arguments_json: argsJSON });
const text = res.content.map((c) => c.text?.text ?? "").join("");
console.log("call", tool, res.is_error ? "is_error" : "ok", text);

// Streaming call: progress as it comes, the result last.
await new Promise((resolve, reject) => {
  const call = client.CallToolStream({ name: streamTool, arguments_json: streamArgs }, deadline(30));
  call.on("data", (msg) => {
    if (msg.event === "progress") console.log(`progress ${msg.progress.progress}/${msg.progress.total ?? "?"} ${msg.progress.message}`);
    else console.log("stream result", msg.result.is_error ? "is_error" : "ok", msg.result.content.map((c) => c.text?.text ?? "").join(""));
  });
  call.on("end", resolve);
  call.on("error", reject);
});

// Resume from the last revision: only what changed since arrives.
console.log("resumed from", revision);
await new Promise((resolve, reject) => {
  const watch = client.WatchCatalog({ resume_token: revision }, deadline(30));
  watch.on("data", (ev) => {
    revision = ev.revision; // always keep the latest as the resume token
    if (ev.event === "changes") {
      const names = [...ev.changes.upserted.map((t) => "+" + t.name), ...ev.changes.removed.map((n) => "-" + n)];
      console.log("changes", revision, names.join(" "));
      watch.cancel();
      resolve();
    } else {
      console.log(ev.event, revision); // synced, progress, or a snapshot (reset: replace all state)
    }
  });
  watch.on("error", (err) => err.code !== grpc.status.CANCELLED && reject(err));
});

// Resources and prompts: read the first resource listed (server + uri; a
// resource_link from a tool result reads the same way, with the called
// tool's server) and get the first prompt (required arguments = "world").
const { resources } = await unary("ListResources", {});
for (const r of resources) console.log("resource", r.server, r.uri);
if (resources.length > 0) {
  const read = await unary("ReadResource", { server: resources[0].server, uri: resources[0].uri });
  for (const c of read.contents) console.log("read", c.uri, c.contents === "text" ? c.text.split("\n")[0] : `${c.blob.length} bytes`);
}
const { prompts } = await unary("ListPrompts", {});
for (const p of prompts) console.log("prompt", p.name);
if (prompts.length > 0) {
  const args = Object.fromEntries(prompts[0].arguments.filter((a) => a.required).map((a) => [a.name, "world"]));
  const got = await unary("GetPrompt", { name: prompts[0].name, arguments: args });
  for (const m of got.messages) console.log("got prompt", prompts[0].name, `${m.role}:`, m.content.text?.text ?? "");
}
client.close();
