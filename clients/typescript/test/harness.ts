// Test harness: real toolsvc processes (the binary built from ./cmd/toolsvc)
// in front of real MCP servers (toolsvc's demo server, tests/testserver), on
// loopback. scripts/ts-client.sh builds the binaries once and passes them in
// TOOLSVC_BIN and TESTSERVER_BIN; without them the harness builds them.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file runs from clients/typescript/build/test/). */
export const repoRoot = resolve(fileURLToPath(new URL("../../../..", import.meta.url)));

const tmp = mkdtempSync(join(tmpdir(), "toolsvc-ts-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

/** A scratch directory removed when the test process exits. */
export function scratch(): string {
  return mkdtempSync(join(tmp, "s-"));
}

function binary(env: string, pkg: string): string {
  const fromEnv = process.env[env];
  if (fromEnv) {
    return fromEnv;
  }
  const out = join(tmp, pkg.replaceAll("/", "_"));
  execFileSync("go", ["build", "-o", out, pkg], { cwd: repoRoot, stdio: "inherit" });
  process.env[env] = out;
  return out;
}

export const toolsvcBin = () => binary("TOOLSVC_BIN", "./cmd/toolsvc");
export const testserverBin = () => binary("TESTSERVER_BIN", "./tests/testserver");

/** A running toolsvc. */
export class Toolsvc {
  private output = "";
  private exited: Promise<void>;

  private constructor(
    readonly proc: ChildProcess,
    public addr = "",
  ) {
    this.exited = new Promise((res) => proc.once("exit", () => res()));
    const collect = (b: Buffer) => {
      this.output += b.toString();
    };
    proc.stdout?.on("data", collect);
    proc.stderr?.on("data", collect);
  }

  /**
   * Starts `toolsvc serve` with config (undefined: the built-in demo) on
   * listen (default any loopback port), plus extraArgs, and waits until it
   * is ready.
   */
  static async start(config?: object, listen = "127.0.0.1:0", extraArgs: string[] = []): Promise<Toolsvc> {
    const args = ["serve", "--listen", listen, "--admin-listen", "", "--log-level", "info", ...extraArgs];
    if (config !== undefined) {
      const file = join(scratch(), "config.json");
      writeFileSync(file, JSON.stringify(config));
      args.push("--config", file);
    }
    const proc = spawn(toolsvcBin(), args, { stdio: ["ignore", "pipe", "pipe"], detached: true });
    const t = new Toolsvc(proc);
    t.addr = await t.waitFor(/msg=serving addr=(\S+)/);
    await t.waitFor(/msg=ready/);
    return t;
  }

  /** Waits for a line of output matching re and returns its first group. */
  async waitFor(re: RegExp, timeoutMs = 60_000): Promise<string> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const m = re.exec(this.output);
      if (m) {
        return m[1] ?? m[0];
      }
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
        throw new Error(`toolsvc exited before printing ${re}:\n${this.output}`);
      }
      if (Date.now() > end) {
        throw new Error(`toolsvc printed nothing matching ${re} in ${timeoutMs} ms:\n${this.output}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  get log(): string {
    return this.output;
  }

  /** SIGTERM (toolsvc drains and stops its upstreams), then waits for the exit; SIGKILL to the group after 15 s. */
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
      return;
    }
    const pid = this.proc.pid!;
    process.kill(pid, "SIGTERM");
    const timer = setTimeout(() => killGroup(pid), 15_000);
    await this.exited;
    clearTimeout(timer);
    killGroup(pid); // anything its children left behind in the group
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** A free loopback port (free a moment ago). */
export async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

/** Polls cond every 20 ms until it is true or timeoutMs passed. */
export async function eventually(cond: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = "condition"): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
