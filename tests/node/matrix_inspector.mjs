// The client matrix's cell runner for the MCP Inspector's CLI (@modelcontextprotocol/inspector-cli,
// the v1 inspector's --cli mode, on the TypeScript SDK 1.x client): one inspector process
// per operation, as a user scripts it, its JSON output read back.
//
// Usage: node matrix_inspector.mjs URL ERA PREFIX DISCOVERY_URL TASKS_URL TASKS_PREFIX   (ERA: 2025-11-25)
//
// The same operations and report as matrix_client.mjs. The CLI has a method for listing,
// calling, reading and getting only (tools/list, tools/call, resources/list, resources/read,
// resources/templates/list, prompts/list, prompts/get, logging/setLevel), its client declares
// no capabilities and prints a request's result only: an operation it cannot do is asked of it
// all the same (its own refusal, or what the server answers a client without the capability),
// so that the report shows the CLI's limit, directly as through toolsvc. The negotiated
// protocol version is read from the inspector's own client by matrix_inspector_probe.mjs,
// preloaded with --import.
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const [url, , prefix = "", discoveryURL = "", tasksURL = "", tasksPrefix = ""] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
// The CLI's main module (its package exports nothing to import).
const cli = path.join(path.dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/inspector-cli/package.json")),
  "build", "index.js");
const probe = path.join(here, "matrix_inspector_probe.mjs");
let protocol = null;

// inspector runs the CLI against target with args; its JSON output.
function inspector(target, ...args) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--import", probe, cli, target, "--transport", "http", ...args],
      // cwd: the CLI finds its package.json ("../package.json") from the working directory.
      { cwd: path.dirname(cli), timeout: 120000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
        const m = /MATRIX_PROTOCOL (\S+)/.exec(stderr);
        if (m) protocol = m[1];
        if (err) {
          // Its own words (stderr, without the deprecation banner), not node's "Command failed".
          const said = stderr.split("\n").filter((l) => l.trim() && !/deprecated|Upgrade:|security fixes|MATRIX_PROTOCOL/.test(l));
          reject(new Error(`inspector ${args.slice(0, 4).join(" ")} (exit ${err.code}): ${said.join(" ").slice(0, 1500)}`));
          return;
        }
        try {
          resolve(JSON.parse(stdout));
        } catch (e) {
          reject(new Error(`inspector ${args.join(" ")}: output ${stdout.slice(0, 500)}: ${e}`));
        }
      });
  });
}

const ops = {};
async function run(op, fn) {
  try {
    ops[op] = { value: await fn() };
  } catch (err) {
    ops[op] = { error: String(err?.message ?? err).slice(0, 2000) };
  }
}
const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
const call = async (target, name, ...toolArgs) => {
  const res = await inspector(target, "--method", "tools/call", "--tool-name", name,
    ...(toolArgs.length ? ["--tool-arg", ...toolArgs] : []));
  return (res.isError ? "error: " : "") + text(res);
};
const sorted = (xs) => xs.map(String).sort();

await run("list", async () => sorted((await inspector(url, "--method", "tools/list")).tools.map((t) => t.name)));
await run("call", () => call(url, prefix + "echo", "text=matrix"));
// A progress token rides along (--tool-metadata); the CLI prints the result only, so it
// counts no notification.
await run("progress", async () => {
  await inspector(url, "--method", "tools/call", "--tool-name", prefix + "progress", "--tool-arg", "steps=2", "step_ms=100",
    "--tool-metadata", "progressToken=matrix");
  return 0;
});
await run("elicitation", () => call(url, prefix + "ask_name"));
await run("elicitation/url", () => call(url, prefix + "ask_url"));
await run("sampling", () => call(url, prefix + "ask_model"));
await run("roots", () => call(url, prefix + "ask_roots"));
// logging/setLevel works, but each inspector run is its own session and prints no
// notifications: the log messages of a later call are never seen.
await run("logging", async () => {
  await inspector(url, "--method", "logging/setLevel", "--log-level", "debug");
  await call(url, prefix + "log_levels", "tag=matrix");
  return [];
});
await run("resources/list", async () => sorted((await inspector(url, "--method", "resources/list")).resources.map((r) => r.uri)));
await run("resources/read", async () =>
  (await inspector(url, "--method", "resources/read", "--uri", "test://hello")).contents.map((c) => c.text ?? "").join(""));
await run("resources/templates", async () =>
  sorted((await inspector(url, "--method", "resources/templates/list")).resourceTemplates.map((t) => t.uriTemplate)));
await run("resources/subscribe", async () => {
  await inspector(url, "--method", "resources/subscribe", "--uri", "test://hello");
  return "subscribed";
});
await run("prompts/list", async () => sorted((await inspector(url, "--method", "prompts/list")).prompts.map((p) => p.name)));
await run("prompts/get", async () =>
  (await inspector(url, "--method", "prompts/get", "--prompt-name", prefix + "hi")).messages.map((m) => m.content.text ?? "").join(""));
await run("completion", async () =>
  sorted((await inspector(url, "--method", "completion/complete", "--prompt-name", prefix + "trip")).completion.values));
await run("discovery", async () => {
  if (!discoveryURL) return prefix + "echo:" + await call(url, prefix + "echo", "text=matrix");
  const found = JSON.parse(text(await inspector(discoveryURL, "--method", "tools/call", "--tool-name", "search_tools",
    "--tool-arg", "query=echo", "limit=1"))).tools[0].name;
  return found + ":" + await call(discoveryURL, "call_tool", `name=${found}`, 'arguments={"text":"matrix"}');
});
// A task is asked with params.task, which the CLI has no option for: a plain call's result.
await run("tasks", async () => "no task:" + await call(tasksURL, tasksPrefix + "slow", "ms=50"));
console.log(JSON.stringify({ protocol, ops }));
