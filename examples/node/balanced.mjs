// Client-side load balancing over toolsvc replicas in Node with the
// @toolsvc/client package: loadBalancingServiceConfig (round_robin over every
// address the target resolves to, channel retries of UNAVAILABLE on
// ListTools, ListServers and WatchCatalog); CallTool is retried by the
// package only when the server says the call was not dispatched, or on any
// UNAVAILABLE for a tool marked idempotent.
//
//   node balanced.mjs TARGET CALLS TOOL [ARGS_JSON]
//
// TARGET: dns:///toolsvc-headless.tools.svc.cluster.local:50051 in Kubernetes,
// or ipv4:127.0.0.1:50051,127.0.0.1:50052 locally.
import { Client, loadBalancingServiceConfig } from "@toolsvc/client";

const [target, calls, tool, argsJSON = "{}"] = process.argv.slice(2);
const client = new Client(target, { serviceConfig: loadBalancingServiceConfig });

const tools = await client.listTools({ timeoutMs: 30_000 }); // retried by the channel
console.log("tools", tools.length);
for (let i = 0; i < Number(calls); i++) {
  // idempotent: true, this example calls a read-only tool.
  const res = await client.callTool(tool, argsJSON, { timeoutMs: 30_000, idempotent: true });
  if (res.isError) throw new Error(`${tool}: ${res.text}`);
}
console.log("calls", calls, "ok");
client.close();
