import {
  credentials as grpcCredentials,
  Metadata,
  status,
  type CallOptions as GrpcCallOptions,
  type ChannelCredentials,
  type ChannelOptions,
  type ClientUnaryCall,
  type ServiceError,
} from "@grpc/grpc-js";
import {
  CallToolRequest,
  CallToolStreamRequest,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListToolsRequest,
  SearchToolsRequest,
  ToolServiceClient,
  UpdateTaskRequest,
  type CallToolResponse,
  type CancelTaskResponse,
  type GetTaskResponse,
  type ListTasksResponse,
  type UpdateTaskResponse,
  type CallToolStreamResponse,
  type InputResponse,
  type ListServersResponse,
  type ListToolsResponse,
  type SearchToolsResponse,
  type Tool,
} from "./gen/toolsvc/v1/toolsvc.js";
import { fromError, namedAsGiven, notDispatched, ToolsvcError } from "./errors.js";
import { ToolResult, type ClientInternals } from "./result.js";
import { CatalogWatcher, Task, taskOf, waitTask, type TaskInternals, type WaitTaskOptions, type WatchOptions } from "./watch.js";
import {
  capabilitiesOf,
  defaultMaxInputRounds,
  inputRequestOf,
  inputResponseOf,
  roundsExceeded,
  type InputAnswer,
  type InputHandler,
  type InputKind,
  type InputRequest,
} from "./input.js";

/**
 * The service config for client-side load balancing over toolsvc replicas
 * (docs/kubernetes.md): round_robin over every address the
 * target resolves to (use the headless Service:
 * `dns:///toolsvc-headless.tools.svc.cluster.local:50051`), and channel
 * retries of UNAVAILABLE for ListTools, ListServers and the opening of
 * WatchCatalog. CallTool and CallToolStream are deliberately not in the
 * retry policy: the client retries them itself, and only when the server
 * says the call was not dispatched ({@link notDispatched}). grpc-js ignores
 * `healthCheckConfig` (other gRPC implementations honour it); it moves off a
 * draining replica when that replica's GOAWAY arrives.
 */
export const loadBalancingServiceConfig = {
  loadBalancingConfig: [{ round_robin: {} }],
  healthCheckConfig: { serviceName: "toolsvc.v1.ToolService" },
  methodConfig: [
    {
      name: [
        { service: "toolsvc.v1.ToolService", method: "ListTools" },
        { service: "toolsvc.v1.ToolService", method: "ListServers" },
        { service: "toolsvc.v1.ToolService", method: "WatchCatalog" },
      ],
      retryPolicy: {
        maxAttempts: 4,
        initialBackoff: "0.1s",
        maxBackoff: "1s",
        backoffMultiplier: 2,
        retryableStatusCodes: ["UNAVAILABLE"],
      },
    },
  ],
} as const;

/** How the client retries; see {@link ClientOptions.retry}. */
export interface RetryOptions {
  /** Attempts per call, the first included (default 4). */
  maxAttempts?: number;
  /** The first backoff; it doubles per attempt up to maxBackoffMs (defaults 100 ms, 1 s). Waits are jittered. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Called before each wait: the error that will be retried, the attempt that failed (1-based) and the wait. */
  onRetry?: (err: ToolsvcError, attempt: number, waitMs: number) => void;
}

/** Options of {@link Client}. */
export interface ClientOptions {
  /** A bearer token, sent as `authorization: Bearer <token>` on every call (toolsvc `auth`). */
  token?: string;
  /** TLS: true for the system roots, or PEM CA / client certificate and key. Default: plaintext. */
  tls?: boolean | { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer };
  /** Channel credentials, instead of `tls`. */
  credentials?: ChannelCredentials;
  /**
   * A gRPC service config (object or JSON text), e.g.
   * {@link loadBalancingServiceConfig} with a `dns:///` target of a headless
   * Service to balance calls over replicas.
   */
  serviceConfig?: string | object;
  /**
   * Client-side retries (false: none). CallTool / CallToolStream are
   * retried only when the server says the call was not dispatched
   * ({@link notDispatched}; CIRCUIT_OPEN and RATE_LIMITED wait at least
   * their RetryInfo delay); ListTools and ListServers, which are read-only, on any
   * UNAVAILABLE. Retries stop at the call's deadline.
   */
  retry?: false | RetryOptions;
  /** Extra @grpc/grpc-js channel options. Defaults: maximum receive size 64 MiB, channelz off. */
  channelOptions?: ChannelOptions;
}

/** Per-call options. */
export interface CallOptions {
  /** The call's deadline, in milliseconds from now (over every retry). Without it, the server's callTimeout applies to tool calls. */
  timeoutMs?: number;
  /** Cancels the call (the upstream is sent notifications/cancelled). */
  signal?: AbortSignal;
  /**
   * For tool calls: the tool may safely run twice (read-only, or it takes
   * your own idempotency key), so any UNAVAILABLE is retried, not only the
   * ones the server says were not dispatched.
   */
  idempotent?: boolean;
}

/** Options of {@link Client.callTool}. */
export interface CallToolOptions extends CallOptions {
  /**
   * Answers a tool that asks (docs/interactive.md): the call offers
   * `inputKinds`, and each request of an `input_required` round is passed to
   * it in order; the call goes on with its answers until the result. What it
   * throws ends the call. With it, `timeoutMs` applies to each round, not to
   * the time onInput takes. Without it, the server's policy answers the tool.
   */
  onInput?: InputHandler;
  /** The kinds offered with onInput (default all: elicitation, elicitationUrl, sampling, roots). */
  inputKinds?: readonly InputKind[];
  /** The rounds answered before the call fails with ABORTED / INPUT_ROUNDS_EXCEEDED (default 16). */
  maxInputRounds?: number;
  /**
   * Ask for the call to run as an upstream task (docs/tasks.md): `true`, or
   * `{ ttlMs }`, the lifetime asked for (a hint the upstream may lower).
   * callTool then resolves with a {@link Task} when the upstream runs one,
   * else (an upstream or a tool without tasks) with the plain result.
   */
  task?: TaskRequest;
}

/** {@link CallToolOptions.task}. */
export type TaskRequest = true | { ttlMs?: number };

/** Options of {@link Client.listTools}. */
export interface ListToolsOptions extends CallOptions {
  /** Tools per page (default 1000, the server's maximum). */
  pageSize?: number;
}

/** Options of {@link Client.searchTools}. */
export interface SearchToolsOptions extends CallOptions {
  /** What the caller needs, in words. */
  query: string;
  /** Maximum number of results (default 10, at most 100). */
  limit?: number;
  /** Only tools of these servers. */
  servers?: string[];
  /** Only tools whose hints equal these (unset: any; unset hints have MCP's defaults). */
  hints?: { readOnly?: boolean; destructive?: boolean; idempotent?: boolean; openWorld?: boolean };
  /** Only tools whose exposed name matches this glob (`*`, `?`, `[...]`). */
  nameGlob?: string;
}

/** The result of {@link Client.searchTools}. */
export interface SearchResults {
  /** The tools found, best first (pass them to toOpenAITools / toAnthropicTools). */
  tools: Tool[];
  /** Each tool's score, by name (higher is better; comparable within one search). */
  scores: Map<string, number>;
  /** The catalog revision they were ranked on. */
  revision: string;
}

/**
 * Arguments of a tool call: a JSON object, sent as JSON text
 * (`arguments_json`, so numbers reach the upstream as written), or JSON
 * text itself (for integers beyond 2^53 that a JS number cannot hold).
 */
export type ToolArguments = Record<string, unknown> | string;

/** One message of {@link Client.callToolStream}: progress, then the result last. */
export type ToolStreamEvent =
  | { type: "progress"; progress: number; total: number | undefined; message: string }
  | { type: "result"; result: ToolResult };

const defaultRetry = { maxAttempts: 4, initialBackoffMs: 100, maxBackoffMs: 1000 };

/**
 * Client is a toolsvc client on one gRPC channel. It is safe to share one
 * between any number of concurrent callers; close() it when done.
 *
 * ```ts
 * const client = new Client("localhost:50051");
 * const tools = await client.listTools();
 * const res = await client.callTool("demo__add", { a: 2, b: 40 });
 * console.log(res.isError, res.text);
 * client.close();
 * ```
 */
export class Client {
  /** The generated @grpc/grpc-js client, for anything this class does not wrap. */
  readonly raw: ToolServiceClient;
  private readonly token: string | undefined;
  private readonly retry: Required<Omit<RetryOptions, "onRetry">> & Pick<RetryOptions, "onRetry">;
  private readonly retryEnabled: boolean;
  private readonly internals: ClientInternals;

  constructor(target: string, options: ClientOptions = {}) {
    let creds = options.credentials;
    if (!creds) {
      const tls = options.tls;
      if (tls === true) {
        creds = grpcCredentials.createSsl();
      } else if (tls) {
        const buf = (v: string | Buffer | undefined) => (v === undefined ? null : Buffer.from(v));
        creds = grpcCredentials.createSsl(buf(tls.ca), buf(tls.key), buf(tls.cert));
      } else {
        creds = grpcCredentials.createInsecure();
      }
    }
    // Channelz call tracking costs CPU on every call and serves only a
    // channelz server, which a client library does not run.
    const channelOptions: ChannelOptions = {
      "grpc.max_receive_message_length": 64 << 20,
      "grpc.enable_channelz": 0,
      ...options.channelOptions,
    };
    if (options.serviceConfig !== undefined) {
      channelOptions["grpc.service_config"] =
        typeof options.serviceConfig === "string" ? options.serviceConfig : JSON.stringify(options.serviceConfig);
    }
    this.raw = new ToolServiceClient(target, creds, channelOptions);
    this.token = options.token;
    this.retryEnabled = options.retry !== false;
    this.retry = { ...defaultRetry, ...(options.retry || {}) };
    this.internals = { raw: this.raw, metadata: () => this.metadata() };
  }

  private metadata(): Metadata {
    const md = new Metadata();
    if (this.token !== undefined) {
      md.set("authorization", `Bearer ${this.token}`);
    }
    return md;
  }

  /**
   * Lists the whole catalog, every page, sorted by name. Every page comes
   * from one catalog revision; if the replica serving a later page no
   * longer knows it, the listing starts over.
   */
  async listTools(options: ListToolsOptions = {}): Promise<Tool[]> {
    const deadline = deadlineOf(options);
    for (let restarts = 0; ; restarts++) {
      const tools: Tool[] = [];
      let pageToken = "";
      try {
        do {
          const req = ListToolsRequest.fromPartial({ pageSize: options.pageSize ?? 1000, pageToken });
          const page = await this.withRetry(isUnavailable, deadline, options.signal, () =>
            this.unary<ListToolsResponse>((md, o, cb) => this.raw.listTools(req, md, o, cb), deadline, options.signal),
          );
          tools.push(...page.tools);
          pageToken = page.nextPageToken;
        } while (pageToken !== "");
        return tools;
      } catch (err) {
        const e = fromError(err);
        const staleToken =
          pageToken !== "" && e.code === status.INVALID_ARGUMENT && e.fieldViolations.some((v) => v.field === "page_token");
        if (!staleToken || restarts >= 2) {
          throw e;
        }
      }
    }
  }

  /**
   * Ranks the catalog's tools against a free-text query and returns the
   * best, with their full definitions (only tools the caller may see).
   * The query is the first argument, as in the Python package
   * (`searchTools("open a pull request", { limit: 5 })`), or the `query`
   * of the options object.
   */
  async searchTools(query: string, options?: Omit<SearchToolsOptions, "query">): Promise<SearchResults>;
  async searchTools(options: SearchToolsOptions): Promise<SearchResults>;
  async searchTools(
    queryOrOptions: string | SearchToolsOptions,
    more: Omit<SearchToolsOptions, "query"> = {},
  ): Promise<SearchResults> {
    const options: SearchToolsOptions =
      typeof queryOrOptions === "string" ? { ...more, query: queryOrOptions } : queryOrOptions;
    const deadline = deadlineOf(options);
    const req = SearchToolsRequest.fromPartial({
      query: options.query,
      limit: options.limit ?? 0,
      servers: options.servers ?? [],
      hints: options.hints,
      nameGlob: options.nameGlob ?? "",
    });
    const r = await this.withRetry(isUnavailable, deadline, options.signal, () =>
      this.unary<SearchToolsResponse>((md, o, cb) => this.raw.searchTools(req, md, o, cb), deadline, options.signal),
    );
    const found = r.results.flatMap((x) => (x.tool ? [{ tool: x.tool, score: x.score }] : []));
    return {
      tools: found.map((x) => x.tool),
      scores: new Map(found.map((x) => [x.tool.name, x.score])),
      revision: r.revision,
    };
  }

  /** Reports every configured upstream and its state, and the configuration status (unset for the built-in demo). */
  async listServers(options: CallOptions = {}): Promise<ListServersResponse> {
    const deadline = deadlineOf(options);
    return this.withRetry(isUnavailable, deadline, options.signal, () =>
      this.unary<ListServersResponse>((md, o, cb) => this.raw.listServers({}, md, o, cb), deadline, options.signal),
    );
  }

  /**
   * Calls a tool by its exposed name. Resolves with the result (a tool's own
   * failure is `isError: true`); rejects with a {@link ToolsvcError}.
   * Retried only when the server says the call was not dispatched (any
   * UNAVAILABLE with `idempotent: true`).
   */
  callTool(name: string, args?: ToolArguments, options?: CallToolOptions & { task?: undefined }): Promise<ToolResult>;
  /**
   * With `task`: resolves with a {@link Task} when the upstream runs the call
   * as one (follow it with waitTask), else with the plain result; tell them
   * apart with `instanceof Task`.
   */
  callTool(name: string, args: ToolArguments, options: CallToolOptions & { task: TaskRequest }): Promise<ToolResult | Task>;
  async callTool(name: string, args: ToolArguments = {}, options: CallToolOptions = {}): Promise<ToolResult | Task> {
    try {
      return await this.callToolOnce(name, args, options);
    } catch (e) {
      throw namedAsGiven(e, args); // arguments.a for an object, arguments_json.a for JSON text
    }
  }

  private async callToolOnce(name: string, args: ToolArguments, options: CallToolOptions): Promise<ToolResult | Task> {
    const req = callRequest(name, args);
    if (options.task !== undefined) {
      const ttlMs = options.task === true ? undefined : options.task.ttlMs;
      if (ttlMs !== undefined && !(ttlMs > 0)) {
        throw new TypeError(`task.ttlMs must be positive, not ${ttlMs}`);
      }
      req.task = {
        ttl: ttlMs === undefined ? undefined : { seconds: Math.floor(ttlMs / 1000), nanos: Math.round((ttlMs % 1000) * 1e6) },
      };
    }
    if (options.onInput === undefined) {
      const res = await this.callOnce(req, options);
      return res.task !== undefined ? new Task(res.task) : new ToolResult(res);
    }
    req.inputCapabilities = capabilitiesOf(options.inputKinds);
    const maxRounds = options.maxInputRounds ?? defaultMaxInputRounds;
    for (let round = 0; round <= maxRounds; round++) {
      const res = await this.callOnce(req, options);
      if (res.task !== undefined) {
        return new Task(res.task);
      }
      const ir = res.inputRequired;
      if (ir === undefined) {
        return new ToolResult(res);
      }
      const answers: InputResponse[] = [];
      for (const m of ir.requests) {
        const q = inputRequestOf(m);
        answers.push(inputResponseOf(q, await options.onInput(q)));
        throwIfAborted(options.signal);
      }
      req.inputResponses = answers;
      req.requestState = ir.requestState;
    }
    throw roundsExceeded(name, maxRounds);
  }

  private async callOnce(req: CallToolRequest, options: CallOptions): Promise<CallToolResponse> {
    const deadline = deadlineOf(options);
    return this.withRetry(callRetryable(options), deadline, options.signal, () =>
      this.unary<CallToolResponse>((md, o, cb) => this.raw.callTool(req, md, o, cb), deadline, options.signal),
    );
  }

  /**
   * Calls a tool and yields its progress as it comes, then the result last.
   * Leaving the loop early (break, return, throw) cancels the call.
   */
  async *callToolStream(name: string, args: ToolArguments = {}, options: CallOptions = {}): AsyncGenerator<ToolStreamEvent, void, undefined> {
    const req = CallToolStreamRequest.fromPartial(callFields(name, args));
    const deadline = deadlineOf(options);
    for (let attempt = 1; ; attempt++) {
      throwIfAborted(options.signal);
      const call = this.raw.callToolStream(req, this.metadata(), grpcOptions(deadline));
      const cancel = () => call.cancel();
      options.signal?.addEventListener("abort", cancel, { once: true });
      let received = false;
      let ended = false;
      try {
        for await (const m of call as AsyncIterable<CallToolStreamResponse>) {
          received = true;
          const ev = m.event;
          if (ev?.$case === "progress") {
            yield { type: "progress", progress: ev.progress.progress, total: ev.progress.total, message: ev.progress.message };
          } else if (ev?.$case === "result") {
            yield { type: "result", result: new ToolResult(ev.result) };
          }
        }
        ended = true;
        return;
      } catch (err) {
        ended = true;
        const e = deadlineOrError(fromError(err), deadline, options.signal);
        const wait = received ? undefined : this.retryWait(callRetryable(options), e, attempt, deadline, options.signal);
        if (wait === undefined) {
          throw namedAsGiven(e, args);
        }
        this.retry.onRetry?.(e, attempt, wait);
        await sleep(wait, options.signal);
      } finally {
        options.signal?.removeEventListener("abort", cancel);
        if (!ended) {
          call.cancel();
        }
      }
    }
  }

  /** A task's state (by handle, or a Task); once it has ended, with its `result` or `error`. */
  async getTask(task: string | Task, options: CallOptions = {}): Promise<Task> {
    const deadline = deadlineOf(options);
    const req = GetTaskRequest.fromPartial({ handle: handleOf(task) });
    const r = await this.withRetry(isUnavailable, deadline, options.signal, () =>
      this.unary<GetTaskResponse>((md, o, cb) => this.raw.getTask(req, md, o, cb), deadline, options.signal),
    );
    return taskOf(r);
  }

  /** Asks the upstream to cancel the task; resolves with its state after. Cancelling an ended task is no error. */
  async cancelTask(task: string | Task, options: CallOptions = {}): Promise<Task> {
    const deadline = deadlineOf(options);
    const req = CancelTaskRequest.fromPartial({ handle: handleOf(task) });
    // A cancel is idempotent: any UNAVAILABLE is retried.
    const r = await this.withRetry(isUnavailable, deadline, options.signal, () =>
      this.unary<CancelTaskResponse>((md, o, cb) => this.raw.cancelTask(req, md, o, cb), deadline, options.signal),
    );
    return taskOf(r);
  }

  /** The caller's own tasks this replica created or served, newest first (only `server`'s when given). */
  async listTasks(options: CallOptions & { server?: string } = {}): Promise<Task[]> {
    const deadline = deadlineOf(options);
    const req = ListTasksRequest.fromPartial({ server: options.server ?? "" });
    const r = await this.withRetry(isUnavailable, deadline, options.signal, () =>
      this.unary<ListTasksResponse>((md, o, cb) => this.raw.listTasks(req, md, o, cb), deadline, options.signal),
    );
    return r.tasks.map((t) => new Task(t));
  }

  /**
   * Answers the input requests of a task whose status is input_required
   * (`task.inputRequests`): [request, answer] pairs; a partial answer is
   * allowed. Resolves with the task's state after; FAILED_PRECONDITION /
   * TASK_NOT_WAITING when it does not wait.
   */
  async updateTask(task: string | Task, answers: Iterable<[InputRequest, InputAnswer]>, options: CallOptions = {}): Promise<Task> {
    const responses = [...answers].map(([q, a]) => inputResponseOf(q, a));
    const r = await this.updateTaskRaw(handleOf(task), responses, deadlineOf(options), options.signal);
    return taskOf(r);
  }

  private updateTaskRaw(handle: string, responses: InputResponse[], deadline: number | undefined, signal: AbortSignal | undefined): Promise<UpdateTaskResponse> {
    const req = UpdateTaskRequest.fromPartial({ handle, inputResponses: responses });
    return this.unary<UpdateTaskResponse>((md, o, cb) => this.raw.updateTask(req, md, o, cb), deadline, signal);
  }

  /**
   * Follows a task with WatchTask until it ends and resolves with its result
   * (a tool's own failure is `isError`), or rejects with
   * {@link TaskFailedError} (the upstream's error, typed as the call's would
   * be), {@link TaskCancelledError}, or the {@link ToolsvcError} that
   * stopped the watch. A watch that breaks (UNAVAILABLE: a replica going
   * away, SHUTTING_DOWN, a dropped connection) is resumed by calling
   * WatchTask again with the same handle, on whichever replica the channel
   * picks, after a jittered backoff. See {@link WaitTaskOptions}.
   */
  waitTask(task: string | Task, options: WaitTaskOptions = {}): Promise<ToolResult> {
    return waitTask(this.taskInternals, handleOf(task), options);
  }

  private get taskInternals(): TaskInternals {
    return { ...this.internals, updateTask: (h, a, d, s) => this.updateTaskRaw(h, a, d, s) };
  }

  /**
   * Opens a catalog watch: iterate it for change events; its `catalog` Map
   * is the server's view at `revision` after every event. It resumes from
   * the last revision (on any replica) when a stream fails, with jittered
   * backoff. See {@link CatalogWatcher}.
   */
  watch(options: WatchOptions = {}): CatalogWatcher {
    return new CatalogWatcher(this.internals, options);
  }

  /** Closes the channel. Calls in flight fail with CANCELLED. */
  close(): void {
    this.raw.close();
  }

  private unary<Res>(
    start: (md: Metadata, o: GrpcCallOptions, cb: (err: ServiceError | null, res: Res) => void) => ClientUnaryCall,
    deadline: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Res> {
    throwIfAborted(signal);
    return new Promise((resolve, reject) => {
      const call = start(this.metadata(), grpcOptions(deadline), (err, res) => {
        signal?.removeEventListener("abort", cancel);
        if (err) {
          reject(deadlineOrError(fromError(err), deadline, signal));
        } else {
          resolve(res);
        }
      });
      const cancel = () => call.cancel();
      signal?.addEventListener("abort", cancel, { once: true });
    });
  }

  private async withRetry<Res>(
    retryable: (e: ToolsvcError) => boolean,
    deadline: number | undefined,
    signal: AbortSignal | undefined,
    attemptOnce: () => Promise<Res>,
  ): Promise<Res> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await attemptOnce();
      } catch (err) {
        const e = fromError(err);
        const wait = this.retryWait(retryable, e, attempt, deadline, signal);
        if (wait === undefined) {
          throw e;
        }
        this.retry.onRetry?.(e, attempt, wait);
        await sleep(wait, signal);
      }
    }
  }

  /** How long to wait before retrying e, or undefined not to retry. */
  private retryWait(
    retryable: (e: ToolsvcError) => boolean,
    e: ToolsvcError,
    attempt: number,
    deadline: number | undefined,
    signal: AbortSignal | undefined,
  ): number | undefined {
    if (!this.retryEnabled || attempt >= this.retry.maxAttempts || signal?.aborted || !retryable(e)) {
      return undefined;
    }
    const backoff = Math.min(this.retry.initialBackoffMs * 2 ** (attempt - 1), this.retry.maxBackoffMs);
    let wait = backoff / 2 + (Math.random() * backoff) / 2;
    if (e.retryDelayMs !== undefined) {
      wait = Math.max(wait, e.retryDelayMs);
    }
    if (deadline !== undefined && Date.now() + wait >= deadline) {
      return undefined;
    }
    return wait;
  }
}

function handleOf(task: string | Task): string {
  return typeof task === "string" ? task : task.handle;
}

function isUnavailable(e: ToolsvcError): boolean {
  return e.code === status.UNAVAILABLE;
}

function callRetryable(o: CallOptions): (e: ToolsvcError) => boolean {
  return o.idempotent ? isUnavailable : notDispatched;
}

// Requests are built with fromPartial so that fields the proto gains later
// get their defaults without a change here.
function callRequest(name: string, args: ToolArguments): CallToolRequest {
  return CallToolRequest.fromPartial(callFields(name, args));
}

function callFields(name: string, args: ToolArguments) {
  return { name, argumentsJson: typeof args === "string" ? args : JSON.stringify(args) };
}

/**
 * A call whose deadline passes can fail two ways in @grpc/grpc-js: its own
 * timer (DEADLINE_EXCEEDED), or first the server resetting the stream as
 * the deadline expires there, which grpc-js reports as CANCELLED "Call
 * cancelled". This client cancels a call only through its AbortSignal, so a
 * bare CANCELLED (no ErrorInfo) at the deadline without an aborted signal
 * is the deadline.
 */
function deadlineOrError(e: ToolsvcError, deadline: number | undefined, signal: AbortSignal | undefined): ToolsvcError {
  if (e.code !== status.CANCELLED || e.reason !== "" || signal?.aborted || deadline === undefined || Date.now() < deadline - 5) {
    return e;
  }
  return new ToolsvcError(status.DEADLINE_EXCEEDED, "the call's deadline passed (the server reset the stream as it expired)", {
    trailers: e.trailers,
    cause: e,
  });
}

function deadlineOf(o: CallOptions): number | undefined {
  return o.timeoutMs === undefined ? undefined : Date.now() + o.timeoutMs;
}

function grpcOptions(deadline: number | undefined): GrpcCallOptions {
  return deadline === undefined ? {} : { deadline };
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new ToolsvcError(status.CANCELLED, "the call was cancelled by its AbortSignal", { cause: signal.reason });
  }
}

/** Waits ms, or until signal aborts (then throws CANCELLED). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new ToolsvcError(status.CANCELLED, "the call was cancelled by its AbortSignal", { cause: signal.reason }));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ToolsvcError(status.CANCELLED, "the call was cancelled by its AbortSignal", { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
