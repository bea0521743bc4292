import { status, type ClientReadableStream } from "@grpc/grpc-js";
import {
  Task as TaskMessage,
  TaskStatus,
  WatchCatalogRequest,
  WatchTaskRequest,
  type CallToolResponse,
  type CatalogChanges,
  type CatalogSnapshot,
  type InputResponse,
  type TaskError,
  type Tool,
  WatchCatalogResponse,
  type WatchTaskResponse,
} from "./gen/toolsvc/v1/toolsvc.js";
import type { Duration } from "./gen/google/protobuf/duration.js";
import { fromError, fromTaskError, messageOf, ToolsvcError } from "./errors.js";
import { ToolResult, type ClientInternals } from "./result.js";
import { inputRequestOf, inputResponseOf, type InputHandler, type InputRequest } from "./input.js";

/** What an event did to the local catalog. */
export type WatchEventKind =
  /** Replaced the local catalog (the first event of a new watch). */
  | "snapshot"
  /** Replaced the local catalog because the server could not serve the resume token (unknown, too old, another catalog). */
  | "reset"
  /** Upserted and removed tools. */
  | "changes"
  /** Confirmed that the local catalog is current. */
  | "synced"
  /** A keep-alive carrying the current revision. */
  | "progress";

/** One applied watch event. */
export interface WatchEvent {
  readonly kind: WatchEventKind;
  /** The revision of the local catalog after the event: the resume token. */
  readonly revision: string;
  /** The whole catalog, for snapshot and reset (else empty). */
  readonly tools: readonly Tool[];
  /** New or changed tools (availability included), for changes. */
  readonly upserted: readonly Tool[];
  /** Names of tools that are gone, for changes. */
  readonly removed: readonly string[];
  /** True for the first event of a stream that resumed from a revision (after a reconnect, or options.resumeToken). */
  readonly resumed: boolean;
  /** The message as received. */
  readonly raw: WatchCatalogResponse;
}

/** Options of {@link Client.watch}. The default watches every tool. */
export interface WatchOptions {
  /** Only tools of these servers (configured names). */
  servers?: string[];
  /** Leave out tools whose upstream is not ready (they arrive as removed when it goes down). */
  excludeUnavailable?: boolean;
  /**
   * Start from a catalog the caller already holds (for example from a
   * previous run): both are needed; a resume token without `initial` is
   * ignored.
   */
  resumeToken?: string;
  initial?: Iterable<Tool>;
  /** Bounds of the jittered exponential wait before a resume (defaults 100 ms and 10 s). It restarts from minBackoffMs once a resumed stream delivered an event. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Called before waiting to resume after a stream failed. */
  onRetry?: (err: ToolsvcError, waitMs: number) => void;
}

/** Codes that mean the request itself is wrong: the watch ends with them instead of resuming. */
const fatalCodes = new Set<status>([
  status.INVALID_ARGUMENT,
  status.NOT_FOUND,
  status.PERMISSION_DENIED,
  status.UNAUTHENTICATED,
  status.UNIMPLEMENTED,
  status.FAILED_PRECONDITION,
  status.OUT_OF_RANGE,
  status.ALREADY_EXISTS,
]);

/**
 * The bound on the parts of one split event a watcher holds before applying
 * it (WatchCatalogResponse.fragment): 256 MiB of encoded parts or 10,000
 * parts, whichever comes first, counting every part of the event (the last
 * one too). toolsvc sends parts of about 1 MiB, so the byte bound is the one
 * a real catalog meets (a catalog of a quarter of a gigabyte); the part count
 * stops a server that sends endless tiny parts. Going over is a protocol
 * violation: the watch ends, not resumed (a resume would meet it again).
 */
const maxEventBytes = 256 << 20;
const maxEventParts = 10_000;

/** The parts of a split event received so far, and their encoded size. */
interface Parts {
  list: WatchCatalogResponse[];
  bytes: number;
}

/** The errors raised for messages the watch contract does not allow: never resumed. */
const violations = new WeakSet<ToolsvcError>();

/**
 * CatalogWatcher keeps a local copy of toolsvc's catalog (or of one view of
 * it) through WatchCatalog, as docs/watching.md specifies:
 * iterate it for the events; after each one, `catalog` (name → Tool) and
 * `revision` are the server's view at that revision. A stream that fails
 * (UNAVAILABLE, a dropped connection, a replica shutting down, anything but
 * a rejected request) is resumed from the last revision with the same
 * filters, after a jittered exponential backoff, on whichever replica the
 * channel picks: the server answers `synced`, the changes since, or a
 * `reset` snapshot. Iteration ends when close() is called or the loop is
 * left; it throws a {@link ToolsvcError} when the server rejects the request
 * (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, UNAUTHENTICATED, ...) or
 * breaks the watch contract.
 *
 * Events are applied as they are read: a watcher that is not iterated (or
 * run()) does not advance. One iteration at a time.
 */
export class CatalogWatcher implements AsyncIterable<WatchEvent> {
  /** The local catalog, name → Tool. The same Map object throughout, updated in place; do not modify it. */
  readonly catalog: ReadonlyMap<string, Tool>;
  private readonly tools = new Map<string, Tool>();
  private rev = "";
  private have = false; // tools/rev hold a catalog the server sent (or initial)
  private streamCount = 0;
  private closed = false;
  private running = false;
  private call: ClientReadableStream<WatchCatalogResponse> | undefined;
  private wake: (() => void) | undefined;
  private readonly minBackoff: number;
  private readonly maxBackoff: number;

  constructor(
    private readonly client: ClientInternals,
    private readonly options: WatchOptions = {},
  ) {
    this.catalog = this.tools;
    this.minBackoff = options.minBackoffMs && options.minBackoffMs > 0 ? options.minBackoffMs : 100;
    this.maxBackoff =
      options.maxBackoffMs !== undefined && options.maxBackoffMs >= this.minBackoff
        ? options.maxBackoffMs
        : Math.max(10_000, this.minBackoff);
    if (options.initial !== undefined && options.resumeToken) {
      for (const t of options.initial) {
        this.tools.set(t.name, t);
      }
      this.rev = options.resumeToken;
      this.have = true;
    }
  }

  /** The revision of the local catalog ("" before the first event). */
  get revision(): string {
    return this.rev;
  }

  /** How many WatchCatalog streams this watcher has opened. */
  get streams(): number {
    return this.streamCount;
  }

  /** The local catalog as an array sorted by name. */
  list(): Tool[] {
    return [...this.tools.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Stops the watch: the current stream is cancelled and iteration ends. */
  close(): void {
    this.closed = true;
    this.call?.cancel();
    this.wake?.();
  }

  /** Applies events until close() (resolves) or a rejected request (rejects); for callers that only read `catalog`. */
  async run(onEvent?: (ev: WatchEvent) => void): Promise<void> {
    for await (const ev of this) {
      onEvent?.(ev);
    }
  }

  /**
   * The background run started by {@link start}: resolves after close(),
   * rejects with the error that ended the watch.
   */
  done: Promise<void> | undefined;

  /**
   * Runs the watch in the background ({@link run}) and resolves once the
   * first event is applied, i.e. `catalog` holds the server's view; from then
   * on it stays current. Rejects if the watch ends before that.
   */
  start(onEvent?: (ev: WatchEvent) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      this.done = this.run((ev) => {
        resolve();
        onEvent?.(ev);
      });
      this.done.then(resolve, reject);
    });
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<WatchEvent, void, undefined> {
    if (this.running) {
      throw new Error("CatalogWatcher: already being iterated");
    }
    this.running = true;
    try {
      let wait = this.minBackoff;
      while (!this.closed) {
        let delivered = false;
        let failure: ToolsvcError;
        try {
          for await (const ev of this.stream()) {
            delivered = true;
            yield ev;
          }
          failure = new ToolsvcError(status.UNAVAILABLE, "watch stream ended without a status");
        } catch (err) {
          failure = fromError(err);
        }
        if (this.closed) {
          return;
        }
        // RESOURCE_EXHAUSTED without RetryInfo is a size, not a rate: the
        // server's RESPONSE_TOO_LARGE (an event too large for any message)
        // or a message over this client's receive limit; a resume meets it
        // again.
        const tooLarge = failure.code === status.RESOURCE_EXHAUSTED && failure.retryDelayMs === undefined;
        if (fatalCodes.has(failure.code) || violations.has(failure) || tooLarge) {
          throw failure;
        }
        if (delivered) {
          wait = this.minBackoff;
        }
        const d = Math.random() * wait + 1; // full jitter
        this.options.onRetry?.(failure, d);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, d);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
        wait = Math.min(2 * wait, this.maxBackoff);
      }
    } finally {
      this.running = false;
      this.call?.cancel();
      this.call = undefined;
    }
  }

  /** One WatchCatalog stream: yields each message once applied. */
  private async *stream(): AsyncGenerator<WatchEvent, void, undefined> {
    const token = this.have ? this.rev : "";
    this.streamCount++;
    const call = this.client.raw.watchCatalog(
      WatchCatalogRequest.fromPartial({
        resumeToken: token,
        servers: this.options.servers ?? [],
        excludeUnavailable: this.options.excludeUnavailable ?? false,
        // Large events arrive in parts, assembled below before they apply.
        fragment: true,
      }),
      this.client.metadata(),
    );
    this.call = call;
    try {
      let first = true;
      // Of a split event, not yet applied; dropped with the stream if it
      // ends between parts (the catalog stays at its previous revision).
      const parts: Parts = { list: [], bytes: 0 };
      for await (const m of call as AsyncIterable<WatchCatalogResponse>) {
        const whole = this.assemble(parts, m);
        if (whole === undefined) {
          continue; // more parts to come
        }
        parts.list = [];
        parts.bytes = 0;
        const ev = this.apply(whole, first && token !== "");
        first = false;
        yield ev;
      }
    } finally {
      call.cancel();
      if (this.call === call) {
        this.call = undefined;
      }
    }
  }

  /**
   * Collects the parts of an event the server split
   * (WatchCatalogResponse.fragment): undefined while more are to come, then
   * the whole event (every part holds some of its lists' entries), so the
   * catalog never holds part of a snapshot. An event over maxEventParts or
   * maxEventBytes is a protocol violation.
   */
  private assemble(acc: Parts, m: WatchCatalogResponse): WatchCatalogResponse | undefined {
    const parts = acc.list;
    const violation = (what: string) => {
      const e = new ToolsvcError(status.INTERNAL, `watch protocol violation: ${what}`);
      violations.add(e);
      return e;
    };
    const head = parts[0];
    if (head !== undefined && (m.revision !== head.revision || m.event?.$case !== head.event?.$case)) {
      throw violation(`${m.event?.$case} at ${m.revision} while a ${head.event?.$case} at ${head.revision} was in parts`);
    }
    if (m.fragment && m.event?.$case !== "snapshot" && m.event?.$case !== "changes") {
      throw violation(`${m.event?.$case} in parts`);
    }
    if (head === undefined && !m.fragment) {
      return m; // a whole event in one message
    }
    const bytes = acc.bytes + WatchCatalogResponse.encode(m).finish().byteLength;
    if (parts.length + 1 > maxEventParts || bytes > maxEventBytes) {
      throw violation(`an event in more than ${maxEventParts} parts or ${maxEventBytes >> 20} MiB (part ${parts.length + 1}, ${bytes} bytes so far)`);
    }
    if (m.fragment) {
      parts.push(m);
      acc.bytes = bytes;
      return undefined;
    }
    const all = [...parts, m];
    if (m.event?.$case === "snapshot") {
      const ss = all.flatMap((p) => (p.event?.$case === "snapshot" ? [p.event.snapshot] : []));
      const snapshot: CatalogSnapshot = {
        ...m.event.snapshot,
        tools: ss.flatMap((s) => s.tools),
        resources: ss.flatMap((s) => s.resources),
        resourceTemplates: ss.flatMap((s) => s.resourceTemplates),
        prompts: ss.flatMap((s) => s.prompts),
      };
      return { ...m, fragment: false, event: { $case: "snapshot", snapshot } };
    }
    if (m.event?.$case === "changes") {
      const cs = all.flatMap((p) => (p.event?.$case === "changes" ? [p.event.changes] : []));
      const changes: CatalogChanges = {
        upserted: cs.flatMap((c) => c.upserted),
        removed: cs.flatMap((c) => c.removed),
        upsertedResources: cs.flatMap((c) => c.upsertedResources),
        removedResources: cs.flatMap((c) => c.removedResources),
        upsertedResourceTemplates: cs.flatMap((c) => c.upsertedResourceTemplates),
        removedResourceTemplates: cs.flatMap((c) => c.removedResourceTemplates),
        upsertedPrompts: cs.flatMap((c) => c.upsertedPrompts),
        removedPrompts: cs.flatMap((c) => c.removedPrompts),
      };
      return { ...m, fragment: false, event: { $case: "changes", changes } };
    }
    return m;
  }

  /** Updates the local catalog with one (whole) event. */
  private apply(m: WatchCatalogResponse, resumed: boolean): WatchEvent {
    const violation = (what: string) => {
      const e = new ToolsvcError(status.INTERNAL, `watch protocol violation: ${what}`);
      violations.add(e);
      return e;
    };
    if (m.revision === "") {
      throw violation("event without a revision");
    }
    let ev: WatchEvent;
    const base = { revision: m.revision, tools: [], upserted: [], removed: [], resumed, raw: m };
    switch (m.event?.$case) {
      case "snapshot": {
        const tools = m.event.snapshot.tools;
        ev = { ...base, kind: m.event.snapshot.reset ? "reset" : "snapshot", tools };
        this.tools.clear();
        for (const t of tools) {
          this.tools.set(t.name, t);
        }
        break;
      }
      case "changes": {
        if (!this.have) {
          throw violation("changes before a snapshot");
        }
        const { upserted, removed } = m.event.changes;
        ev = { ...base, kind: "changes", upserted, removed };
        for (const name of removed) {
          this.tools.delete(name);
        }
        for (const t of upserted) {
          this.tools.set(t.name, t);
        }
        break;
      }
      case "synced":
      case "progress": {
        if (!this.have || m.revision !== this.rev) {
          throw violation(`${m.event.$case} at ${m.revision} while holding "${this.rev}"`);
        }
        ev = { ...base, kind: m.event.$case };
        break;
      }
      default:
        throw violation("unknown event");
    }
    this.rev = m.revision;
    this.have = true;
    return ev;
  }
}

// --- Tasks (docs/tasks.md). ---

/** Where a task is in its life. */
export type TaskStatusName = "unspecified" | "working" | "input_required" | "completed" | "failed" | "cancelled";

const taskStatusNames: Record<number, TaskStatusName> = {
  [TaskStatus.TASK_STATUS_WORKING]: "working",
  [TaskStatus.TASK_STATUS_INPUT_REQUIRED]: "input_required",
  [TaskStatus.TASK_STATUS_COMPLETED]: "completed",
  [TaskStatus.TASK_STATUS_FAILED]: "failed",
  [TaskStatus.TASK_STATUS_CANCELLED]: "cancelled",
};

function durationMs(d: Duration | undefined): number | undefined {
  return d === undefined ? undefined : d.seconds * 1000 + d.nanos / 1e6;
}

/**
 * A task, as the upstream last reported it (docs/tasks.md). `handle` names
 * it in getTask, waitTask, cancelTask and updateTask, on any replica
 * (opaque; bound to the principal that created it); `taskId` is the
 * upstream's id, for logs. `inputRequests` are what a task with status
 * `input_required` asks (answer them with updateTask). From getTask and
 * waitTask's onStatus, an ended task carries its outcome: `result` (a
 * tool's own failure is `result.isError`) or `error`.
 */
export class Task {
  readonly handle: string;
  readonly tool: string;
  readonly server: string;
  readonly taskId: string;
  readonly status: TaskStatusName;
  readonly statusMessage: string;
  /** "2025-11-25" (experimental tasks) or "2026-07-28" (the io.modelcontextprotocol/tasks extension). */
  readonly protocolVersion: string;
  readonly createTime: Date | undefined;
  readonly updateTime: Date | undefined;
  /** How long after its creation the upstream keeps it, if it said. */
  readonly ttlMs: number | undefined;
  /** The upstream's suggested interval between polls, if any. */
  readonly pollIntervalMs: number | undefined;
  readonly inputRequests: readonly InputRequest[];
  readonly result: ToolResult | undefined;
  readonly error: ToolsvcError | undefined;
  /** The message as received. */
  readonly raw: TaskMessage;

  constructor(raw: TaskMessage, result?: CallToolResponse, error?: TaskError) {
    this.raw = raw;
    this.handle = raw.handle;
    this.tool = raw.tool;
    this.server = raw.server;
    this.taskId = raw.taskId;
    this.status = taskStatusNames[raw.status] ?? "unspecified";
    this.statusMessage = raw.statusMessage;
    this.protocolVersion = raw.protocolVersion;
    this.createTime = raw.createTime;
    this.updateTime = raw.updateTime;
    this.ttlMs = durationMs(raw.ttl);
    this.pollIntervalMs = durationMs(raw.pollInterval);
    this.inputRequests = Object.freeze((raw.inputRequired?.requests ?? []).map(inputRequestOf));
    this.result = result === undefined ? undefined : new ToolResult(result);
    this.error = error === undefined ? undefined : fromTaskError(error);
  }

  /** True once completed, failed or cancelled. */
  get ended(): boolean {
    return this.status === "completed" || this.status === "failed" || this.status === "cancelled";
  }
}

/** @internal A task message (with its outcome) as a Task. */
export function taskOf(m: { task?: TaskMessage; result?: CallToolResponse; error?: TaskError }): Task {
  return new Task(m.task ?? TaskMessage.fromPartial({}), m.result, m.error);
}

/** Options of {@link Client.waitTask}. */
export interface WaitTaskOptions {
  /** Called with the first state and every change of status or status message (a resumed watch repeats nothing). */
  onStatus?: (task: Task) => void | Promise<void>;
  /**
   * Answers a task that waits for input (status input_required, 2026-07-28
   * upstreams): each request, in order, as callTool's onInput; the answers
   * go to updateTask. Without it the wait goes on until someone else answers.
   * What it throws ends the wait (the task goes on).
   */
  onInput?: InputHandler;
  /** Stops the wait (rejects with CANCELLED); the task goes on. */
  signal?: AbortSignal;
  /** Bounds the whole wait (then DEADLINE_EXCEEDED); the task goes on. */
  timeoutMs?: number;
  /** Bounds of the jittered exponential wait before a resume (defaults 100 ms and 5 s); back to the minimum after a stream that delivered. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Called before waiting to resume after a watch broke. */
  onRetry?: (err: ToolsvcError, waitMs: number) => void;
}

/** What waitTask needs of a client. @internal */
export interface TaskInternals extends ClientInternals {
  updateTask(handle: string, answers: InputResponse[], deadline: number | undefined, signal: AbortSignal | undefined): Promise<unknown>;
}

function terminal(m: WatchTaskResponse): boolean {
  const s = m.task?.status;
  return (
    m.result !== undefined ||
    m.error !== undefined ||
    s === TaskStatus.TASK_STATUS_COMPLETED ||
    s === TaskStatus.TASK_STATUS_FAILED ||
    s === TaskStatus.TASK_STATUS_CANCELLED
  );
}

/** @internal The result of an ended task, or its error thrown. */
export function outcomeOf(m: { task?: TaskMessage; result?: CallToolResponse; error?: TaskError }): ToolResult {
  const t = taskOf(m);
  if (t.result !== undefined) {
    return t.result;
  }
  if (t.error !== undefined) {
    throw new TaskFailedError(t, t.error);
  }
  if (t.status === "cancelled") {
    throw new TaskCancelledError(t);
  }
  throw new ToolsvcError(status.INTERNAL, `task ${t.taskId} ended ${t.status} without a result`);
}

/**
 * A WatchTask that ended with e is called again: a broken stream or a
 * replica going away (UNAVAILABLE, SHUTTING_DOWN included), and a rate
 * limit that says when to come back.
 */
function taskWatchResumable(e: ToolsvcError): boolean {
  return e.code === status.UNAVAILABLE || (e.code === status.RESOURCE_EXHAUSTED && e.retryDelayMs !== undefined);
}

/** @internal Client.waitTask: WatchTask to the end, called again whenever the stream breaks. */
export async function waitTask(c: TaskInternals, handle: string, options: WaitTaskOptions): Promise<ToolResult> {
  const { signal } = options;
  const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
  const minWait = Math.max(options.minBackoffMs ?? 100, 1);
  const maxWait = Math.max(options.maxBackoffMs ?? 5000, minWait);
  let wait = minWait;
  let last: string | undefined; // status and message last reported
  const answered = new Set<string>();
  const cancelled = () => new ToolsvcError(status.CANCELLED, "the wait was cancelled by its AbortSignal", { cause: signal?.reason });
  for (;;) {
    if (signal?.aborted) {
      throw cancelled();
    }
    const call: ClientReadableStream<WatchTaskResponse> = c.raw.watchTask(
      WatchTaskRequest.fromPartial({ handle }),
      c.metadata(),
      deadline === undefined ? {} : { deadline },
    );
    const cancel = () => call.cancel();
    signal?.addEventListener("abort", cancel, { once: true });
    let delivered = false;
    let err: ToolsvcError;
    try {
      const it = (call as AsyncIterable<WatchTaskResponse>)[Symbol.asyncIterator]();
      for (;;) {
        let r: IteratorResult<WatchTaskResponse>;
        try {
          r = await it.next();
        } catch (e) {
          err = fromError(e);
          break;
        }
        if (r.done) {
          err = new ToolsvcError(status.UNAVAILABLE, "the task watch ended before the task did");
          break;
        }
        delivered = true;
        const m = r.value;
        const key = `${m.task?.status}\u0000${m.task?.statusMessage}`;
        if (key !== last || terminal(m)) {
          last = key;
          await options.onStatus?.(taskOf(m));
        }
        if (terminal(m)) {
          return outcomeOf(m);
        }
        const reqs = m.task?.inputRequired?.requests ?? [];
        if (m.task?.status === TaskStatus.TASK_STATUS_INPUT_REQUIRED && reqs.length > 0) {
          const round = reqs.map((q) => q.id).sort().join("\u0000");
          if (!answered.has(round)) {
            answered.add(round);
            if (options.onInput !== undefined) {
              const answers: InputResponse[] = [];
              for (const q of reqs.map(inputRequestOf)) {
                answers.push(inputResponseOf(q, await options.onInput(q)));
              }
              try {
                await c.updateTask(handle, answers, deadline, signal);
              } catch (e) {
                if (fromError(e).reason !== "TASK_NOT_WAITING") {
                  throw e; // answered meanwhile, elsewhere: not an error
                }
              }
            }
          }
        }
      }
    } finally {
      signal?.removeEventListener("abort", cancel);
      call.cancel(); // a no-op once the stream ended
    }
    if (signal?.aborted) {
      throw cancelled();
    }
    if (err.code === status.CANCELLED && err.reason === "" && deadline !== undefined && Date.now() >= deadline - 5) {
      err = new ToolsvcError(status.DEADLINE_EXCEEDED, "the wait's deadline passed", { cause: err });
    }
    if (!taskWatchResumable(err)) {
      throw err;
    }
    if (delivered) {
      wait = minWait;
    }
    let d = Math.random() * wait;
    wait = Math.min(2 * wait, maxWait);
    if (err.retryDelayMs !== undefined) {
      d = Math.max(d, err.retryDelayMs);
    }
    if (deadline !== undefined && Date.now() + d >= deadline) {
      throw err;
    }
    options.onRetry?.(err, d);
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, d);
      signal?.addEventListener("abort", done, { once: true });
    });
  }
}

/**
 * A task failed without a result: the upstream reported an error. The
 * code, reason and metadata are the ones the call would have failed with;
 * `task` is the ended task.
 */
export class TaskFailedError extends ToolsvcError {
  readonly task: Task;

  constructor(task: Task, err: ToolsvcError) {
    super(err.code, messageOf(err), { reason: err.reason, domain: err.domain, metadata: { ...err.metadata } });
    this.name = "TaskFailedError";
    this.task = task;
  }
}

/** The task ended cancelled (by cancelTask, or the upstream): code CANCELLED, reason TASK_CANCELLED. */
export class TaskCancelledError extends ToolsvcError {
  readonly task: Task;

  constructor(task: Task) {
    super(status.CANCELLED, `task ${task.taskId} on ${task.server} was cancelled`, { reason: "TASK_CANCELLED" });
    this.name = "TaskCancelledError";
    this.task = task;
  }
}
