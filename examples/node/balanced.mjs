// Client-side load balancing over toolsvc replicas in Node: the channel reads
// examples/lb/service_config.json (round_robin over every address the target
// resolves to, retries of UNAVAILABLE on ListTools, ListServers and
// WatchCatalog); CallTool is retried by hand, and only when that cannot run
// the tool twice.
//
//   node balanced.mjs TARGET CALLS TOOL [ARGS_JSON]
//
// TARGET: dns:///toolsvc-headless.tools.svc.cluster.local:50051 in Kubernetes,
// or ipv4:127.0.0.1:50051,127.0.0.1:50052 locally.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const [target, calls, tool, argsJSON = "{}"] = process.argv.slice(2);
const protoDir = process.env.TOOLSVC_PROTO ?? fileURLToPath(new URL("../../proto", import.meta.url));
const serviceConfig = readFileSync(new URL("../lb/service_config.json", import.meta.url), "utf8");
const def = protoLoader.loadSync("toolsvc/v1/toolsvc.proto", { includeDirs: [protoDir], keepCase: true, longs: String, arrays: true, oneofs: true });
const { ToolService } = grpc.loadPackageDefinition(def).toolsvc.v1;
const client = new ToolService(target, grpc.credentials.createInsecure(), { "grpc.service_config": serviceConfig });
const unary = (method, req) =>
  new Promise((resolve, reject) => {
    const call = client[method](req, { deadline: Date.now() + 30_000 }, (err, res) => (err ? reject(err) : resolve({ res, peer: call.getPeer() })));
  });

// True when the server says the call never reached the tool: ErrorInfo
// reason SHUTTING_DOWN or CIRCUIT_OPEN, or UPSTREAM_UNAVAILABLE with
// unavailable_reason no_session. grpc-js hands the google.rpc.Status details
// over as bytes; without generated code for google.rpc this example looks for
// the reason strings in them (ErrorInfo.reason precedes its metadata).
const details = (err) => {
  const bin = err.metadata?.get("grpc-status-details-bin")?.[0];
  return bin ? Buffer.from(bin).toString("latin1") : "";
};
const notDispatched = (err) =>
  err.code === grpc.status.UNAVAILABLE && /SHUTTING_DOWN|CIRCUIT_OPEN|UPSTREAM_UNAVAILABLE[^]*no_session/.test(details(err));

async function callTool(req, idempotent) {
  let backoff = 50;
  for (let attempt = 1; ; attempt++) {
    try {
      return await unary("CallTool", req);
    } catch (err) {
      const retry = notDispatched(err) || (idempotent && err.code === grpc.status.UNAVAILABLE);
      if (attempt === 5 || !retry) throw err;
      await new Promise((r) => setTimeout(r, backoff / 2 + Math.random() * backoff / 2));
      backoff *= 2;
    }
  }
}

const { res: page } = await unary("ListTools", {}); // retried by the channel
console.log("revision", page.revision, "tools", page.tools.length);
const byPeer = new Map();
for (let i = 0; i < Number(calls); i++) {
  // idempotent: true, this example calls a read-only tool.
  const { peer } = await callTool({ name: tool, arguments_json: argsJSON }, true);
  byPeer.set(peer, (byPeer.get(peer) ?? 0) + 1);
}
for (const [peer, n] of [...byPeer].sort()) console.log("peer", peer, n);
console.log("calls", calls, "ok");
client.close();
