#!/usr/bin/env bash
# Checks the TypeScript client package (clients/typescript, npm name
# @toolsvc/client) as CI does; scripts/test.sh runs it:
#   - npm ci, then tsc --strict over the package and its tests;
#   - node:test against live toolsvc processes the tests start themselves
#     (toolsvc and tests/testserver are built here once);
#   - the publish path: npm run build, npm pack, the tarball installed into a
#     fresh folder, imported as @toolsvc/client from plain ESM and type-checked
#     from a TypeScript consumer.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKG="$ROOT/clients/typescript"
cd "$PKG"

if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent build
npm run --silent check

TMP=$(mktemp -d "${TMPDIR:-/tmp}/toolsvc-ts-client.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
(cd "$ROOT" && go build -o "$TMP/toolsvc" ./cmd/toolsvc && go build -o "$TMP/testserver" ./tests/testserver)
TOOLSVC_BIN="$TMP/toolsvc" TESTSERVER_BIN="$TMP/testserver" npm test --silent

# The publish path.
npm pack --silent --pack-destination "$TMP" >/dev/null
tarball=$(ls "$TMP"/toolsvc-client-*.tgz)
mkdir "$TMP/consumer"
cd "$TMP/consumer"
echo '{"name": "consumer", "private": true, "type": "module"}' >package.json
npm install --no-audit --no-fund --loglevel=error "$tarball"
cat >check.mjs <<'JS'
import { Client, ToolsvcError, CatalogWatcher, toOpenAITools, toAnthropicTools, loadBalancingServiceConfig, status } from "@toolsvc/client";
const client = new Client("127.0.0.1:1", { serviceConfig: loadBalancingServiceConfig, retry: false });
const w = client.watch();
if (!(w instanceof CatalogWatcher) || !(w.catalog instanceof Map)) throw new Error("watch() is not a CatalogWatcher");
w.close();
const err = await client.callTool("x__y", {}, { timeoutMs: 2000 }).catch((e) => e);
if (!(err instanceof ToolsvcError) || ![status.UNAVAILABLE, status.DEADLINE_EXCEEDED].includes(err.code)) throw new Error(`want a ToolsvcError, got ${err}`);
const tool = { name: "s__t", description: "d", inputSchema: { type: "object", properties: { n: { type: "integer", maximum: 10 } } } };
if (toOpenAITools([tool])[0].function.name !== "s__t" || toAnthropicTools([tool])[0].input_schema.properties.n.maximum !== 10) throw new Error("tool formats");
client.close();
console.log("import @toolsvc/client from plain ESM: ok");
JS
node check.mjs
cat >check.ts <<'TS'
import { Client, Task, TaskFailedError, type Tool, type WatchEvent, toOpenAITools } from "@toolsvc/client";
const c: Client = new Client("127.0.0.1:1");
const f = async (): Promise<string> => (await c.callTool("x__y", { a: 1 })).text;
// With task: a Task or the plain result, told apart with instanceof.
const h = async (): Promise<string> => {
  const r = await c.callTool("x__y", {}, { task: { ttlMs: 60_000 } });
  return r instanceof Task ? (await c.waitTask(r, { onStatus: (t: Task) => void t.status })).text : r.text;
};
const e = (err: unknown): string => (err instanceof TaskFailedError ? err.task.taskId + err.reason : "");
void h;
void e;
const g = (ev: WatchEvent, t: Tool): string => ev.kind + t.name + toOpenAITools([t])[0]!.function.name;
void f;
void g;
c.close();
TS
"$PKG/node_modules/.bin/tsc" --strict --noEmit --module nodenext --moduleResolution nodenext --target es2022 --types node --typeRoots "$PKG/node_modules/@types" check.ts
echo "type-check a TypeScript consumer of the packed @toolsvc/client: ok"

# The README's example (plain JS as written) against a live toolsvc with the
# built-in demo.
"$TMP/toolsvc" serve --listen 127.0.0.1:0 --admin-listen "" >"$TMP/serve.log" 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null; wait $serve 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 300); do grep -q 'msg=ready' "$TMP/serve.log" && break; sleep 0.1; done
addr=$(sed -n 's/.*msg=serving addr=\([^ ]*\).*/\1/p' "$TMP/serve.log" | head -1)
[[ -n "$addr" ]] || { cat "$TMP/serve.log" >&2; exit 1; }
awk '/^```ts$/{f=1; next} /^```$/{if (f) exit} f' "$PKG/README.md" | sed "s/localhost:50051/$addr/" >readme.mjs
out=$(node readme.mjs)
echo "$out"
grep -q '^result: {"sum":42}$' <<<"$out" && grep -q '^result$' <<<"$out" || { echo "the README example printed the wrong thing" >&2; exit 1; }
echo "README example against a live toolsvc: ok"
