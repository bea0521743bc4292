import { Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { Status } from "./gen/google/rpc/status.js";
import { BadRequest, ErrorInfo, RetryInfo } from "./gen/google/rpc/error_details.js";
import type { TaskError as TaskErrorMessage } from "./gen/toolsvc/v1/toolsvc.js";

/** The google.rpc.ErrorInfo domain of every error toolsvc returns. */
export const ERROR_DOMAIN = "toolsvc.dev";

/** A field a request got wrong, from the google.rpc.BadRequest detail. */
export interface FieldViolation {
  /**
   * The field, or the JSON path into a call's arguments: "arguments.count"
   * when they were given as an object, "arguments_json.count" as JSON text.
   */
  readonly field: string;
  readonly description: string;
}

const typePrefix = "type.googleapis.com/";

/**
 * ToolsvcError is every error the client throws: a gRPC status with the
 * google.rpc details toolsvc attaches to it (docs/errors.md).
 *
 * A tool's own failure is not an error: the call resolves with
 * `isError: true`.
 */
export class ToolsvcError extends Error {
  /** The gRPC status code (`status.UNAVAILABLE`, ... from @grpc/grpc-js). */
  readonly code: status;
  /** The ErrorInfo reason ("TOOL_NOT_FOUND", "UPSTREAM_UNAVAILABLE", ...); "" when the status carried none. */
  readonly reason: string;
  /** The ErrorInfo domain ("toolsvc.dev"); "" when the status carried none. */
  readonly domain: string;
  /** The ErrorInfo metadata ("tool", "server", "unavailable_reason", "upstream_code", ...). */
  readonly metadata: Readonly<Record<string, string>>;
  /** The fields the request got wrong (google.rpc.BadRequest). */
  readonly fieldViolations: readonly FieldViolation[];
  /** The server's google.rpc.RetryInfo delay, when it knows when a retry may succeed. */
  readonly retryDelayMs: number | undefined;
  /** The gRPC trailers of the failed call, if any. */
  readonly trailers: Metadata | undefined;

  constructor(
    code: status,
    message: string,
    init: {
      reason?: string;
      domain?: string;
      metadata?: Record<string, string>;
      fieldViolations?: FieldViolation[];
      retryDelayMs?: number;
      trailers?: Metadata;
      cause?: unknown;
    } = {},
  ) {
    super(`${status[code] ?? code}: ${message}${init.reason ? ` (${init.reason})` : ""}`, { cause: init.cause });
    this.name = "ToolsvcError";
    this.code = code;
    this.reason = init.reason ?? "";
    this.domain = init.domain ?? "";
    this.metadata = Object.freeze({ ...init.metadata });
    this.fieldViolations = Object.freeze([...(init.fieldViolations ?? [])]);
    this.retryDelayMs = init.retryDelayMs;
    this.trailers = init.trailers;
  }

  /** The gRPC code's name: "UNAVAILABLE", "NOT_FOUND", ... */
  get codeName(): string {
    return status[this.code] ?? String(this.code);
  }

  /**
   * True when the server says the call never reached the tool, so calling it
   * again cannot run it twice (see {@link notDispatched}).
   */
  get notDispatched(): boolean {
    return notDispatched(this);
  }
}

/**
 * The retry rule for calls: true only when the server says the call was not
 * dispatched to the upstream. That is `UNAVAILABLE` with ErrorInfo reason
 * `SHUTTING_DOWN` (this replica is draining: retry on another), `CIRCUIT_OPEN`
 * (the upstream's breaker failed it fast; retry after RetryInfo), or
 * `UPSTREAM_UNAVAILABLE` with metadata `unavailable_reason` `no_session` (no
 * ready session to send it on) or `starting` (the replica has not finished
 * its first discovery round); or `RESOURCE_EXHAUSTED` with `RATE_LIMITED`
 * (the caller's principal is over its rate limit: refused before anything
 * reached the upstream; retry after RetryInfo). Any other failure may have happened after the
 * tool started (`session_lost`, a broken connection, a deadline), so it is
 * never retried automatically.
 */
export function notDispatched(err: ToolsvcError): boolean {
  if (err.domain !== ERROR_DOMAIN) {
    return false;
  }
  if (err.code === status.RESOURCE_EXHAUSTED) {
    return err.reason === "RATE_LIMITED";
  }
  if (err.code !== status.UNAVAILABLE) {
    return false;
  }
  switch (err.reason) {
    case "SHUTTING_DOWN":
    case "CIRCUIT_OPEN":
      return true;
    case "UPSTREAM_UNAVAILABLE": {
      const why = err.metadata["unavailable_reason"];
      return why === "no_session" || why === "starting";
    }
  }
  return false;
}

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as Partial<ServiceError>).code === "number";
}

/**
 * fromError turns what @grpc/grpc-js rejected with into a ToolsvcError,
 * decoding the google.rpc.Status in the grpc-status-details-bin trailer.
 * A ToolsvcError is returned as is; anything that is not a gRPC status
 * becomes UNKNOWN.
 */
/**
 * err with its paths into a call's arguments named as the caller gave them.
 * The package sends an object as `arguments_json` text, so the server names
 * `arguments_json.a`; a caller that passed an object is told `arguments.a`.
 * JSON text given as a string keeps the server's name. Anything but a
 * ToolsvcError is returned as it is.
 */
export function namedAsGiven(err: unknown, args: unknown): unknown {
  if (!(err instanceof ToolsvcError) || typeof args === "string") {
    return err;
  }
  const rename = (path: string) =>
    path === "arguments_json" || path.startsWith("arguments_json.") || path.startsWith("arguments_json[")
      ? "arguments" + path.slice("arguments_json".length)
      : path;
  if (!err.fieldViolations.some((v) => rename(v.field) !== v.field)) {
    return err;
  }
  // The status message: the Error's message without the prefix and suffix
  // the constructor added.
  const prefix = `${status[err.code] ?? err.code}: `;
  const suffix = err.reason ? ` (${err.reason})` : "";
  let message = err.message.slice(prefix.length, err.message.length - suffix.length);
  if (message.startsWith("arguments_json")) {
    message = "arguments" + message.slice("arguments_json".length);
  }
  return new ToolsvcError(err.code, message, {
    reason: err.reason,
    domain: err.domain,
    metadata: { ...err.metadata },
    fieldViolations: err.fieldViolations.map((v) => ({ ...v, field: rename(v.field) })),
    retryDelayMs: err.retryDelayMs,
    trailers: err.trailers,
    cause: err.cause,
  });
}

export function fromError(err: unknown): ToolsvcError {
  if (err instanceof ToolsvcError) {
    return err;
  }
  if (!isServiceError(err)) {
    return new ToolsvcError(status.UNKNOWN, err instanceof Error ? err.message : String(err), { cause: err });
  }
  const trailers = err.metadata instanceof Metadata ? err.metadata : undefined;
  const init: ConstructorParameters<typeof ToolsvcError>[2] = { trailers, cause: err };
  const bin = trailers?.get("grpc-status-details-bin")[0];
  if (bin instanceof Uint8Array) {
    try {
      decodeDetails(Status.decode(bin), init);
    } catch {
      // A malformed details trailer leaves the code and message, which
      // are all a gRPC status is without it.
    }
  }
  return new ToolsvcError(err.code, err.details || err.message, init);
}

function decodeDetails(st: Status, init: NonNullable<ConstructorParameters<typeof ToolsvcError>[2]>): void {
  const violations: FieldViolation[] = [];
  for (const any of st.details) {
    if (!any.typeUrl.startsWith(typePrefix)) {
      continue;
    }
    switch (any.typeUrl.slice(typePrefix.length)) {
      case "google.rpc.ErrorInfo": {
        const info = ErrorInfo.decode(any.value);
        init.reason = info.reason;
        init.domain = info.domain;
        init.metadata = info.metadata;
        break;
      }
      case "google.rpc.RetryInfo": {
        const d = RetryInfo.decode(any.value).retryDelay;
        if (d) {
          init.retryDelayMs = d.seconds * 1000 + d.nanos / 1e6;
        }
        break;
      }
      case "google.rpc.BadRequest":
        for (const v of BadRequest.decode(any.value).fieldViolations) {
          violations.push({ field: v.field, description: v.description });
        }
        break;
    }
  }
  init.fieldViolations = violations;
}

/** @internal The message a ToolsvcError was made with (its `message` has the code and reason around it). */
export function messageOf(err: ToolsvcError): string {
  const head = `${status[err.code] ?? err.code}: `;
  const tail = err.reason ? ` (${err.reason})` : "";
  let m = err.message;
  if (m.startsWith(head)) {
    m = m.slice(head.length);
  }
  if (tail && m.endsWith(tail)) {
    m = m.slice(0, -tail.length);
  }
  return m;
}

/** @internal A TaskError (the upstream's failure of a task) as a ToolsvcError. */
export function fromTaskError(e: TaskErrorMessage): ToolsvcError {
  return new ToolsvcError(e.code as status, e.message, { reason: e.reason, domain: ERROR_DOMAIN, metadata: { ...e.metadata } });
}
