// Tools that ask (docs/interactive.md): the typed requests an upstream
// sends its caller mid-call, the answers a caller gives, and their
// conversion to and from the API's messages.
import { status } from "@grpc/grpc-js";
import {
  InputCapabilities,
  type InputRequest as InputRequestMessage,
  type InputResponse as InputResponseMessage,
} from "./gen/toolsvc/v1/toolsvc.js";
import { ToolsvcError } from "./errors.js";

type JsonObject = { [key: string]: unknown };

/** The kinds of input a caller can give. */
export type InputKind = "elicitation" | "elicitationUrl" | "sampling" | "roots";

/** Every kind, offered by default. */
export const inputKinds: readonly InputKind[] = Object.freeze(["elicitation", "elicitationUrl", "sampling", "roots"]);

/** The rounds of input callTool answers before it gives up (reason INPUT_ROUNDS_EXCEEDED). */
export const defaultMaxInputRounds = 16;

/** What a tool asks its caller; `id` is the server's, for logs. */
export type InputRequest =
  /** Fill in a form: show `message`, ask for the fields of `requestedSchema` (flat, primitive properties). Answer `{ kind: "elicitation" }`. */
  | { kind: "elicitation"; id: string; message: string; requestedSchema: JsonObject }
  /** Send the user to `url` (to log in, to pay); answer `{ kind: "elicitation", action: "accept" }` once they went. */
  | { kind: "elicitationUrl"; id: string; message: string; url: string; elicitationId: string }
  /** Run the caller's model: `params` are the MCP sampling/createMessage params (messages, maxTokens, ...). Answer `{ kind: "sampling" }`. */
  | { kind: "sampling"; id: string; params: JsonObject }
  /** List the caller's roots. Answer `{ kind: "roots" }`. */
  | { kind: "roots"; id: string };

/** The caller's answer to an {@link InputRequest}. */
export type InputAnswer =
  /** An elicitation's (form or URL) answer; `content` is the form's values (accept of a form only). */
  | { kind: "elicitation"; action: "accept" | "decline" | "cancel"; content?: JsonObject }
  /** The MCP sampling/createMessage result: `{ role, content: { type: "text", text }, model, stopReason }`. */
  | { kind: "sampling"; result: JsonObject }
  /** The caller's roots (file:// URIs). */
  | { kind: "roots"; roots: Array<{ uri: string; name?: string }> };

/** Called once per request of a round, in order; returns (or resolves to) its answer. What it throws ends the call. */
export type InputHandler = (request: InputRequest) => InputAnswer | Promise<InputAnswer>;

/** @internal */
export function capabilitiesOf(kinds: readonly InputKind[] | undefined): InputCapabilities {
  const ks = kinds ?? inputKinds;
  const bad = ks.filter((k) => !inputKinds.includes(k));
  if (bad.length > 0) {
    throw new TypeError(`inputKinds: unknown kind(s) ${bad.join(", ")}; known: ${inputKinds.join(", ")}`);
  }
  if (ks.length === 0) {
    throw new TypeError("inputKinds: empty (leave onInput unset to let the server's policy answer)");
  }
  return InputCapabilities.fromPartial(Object.fromEntries(ks.map((k) => [k, true])));
}

function jsonObject(text: string, what: string): JsonObject {
  if (text === "") {
    return {};
  }
  const v: unknown = JSON.parse(text);
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new ToolsvcError(status.INTERNAL, `${what} is not a JSON object`);
  }
  return v as JsonObject;
}

/** @internal */
export function inputRequestOf(m: InputRequestMessage): InputRequest {
  const r = m.request;
  switch (r?.$case) {
    case "elicitation":
      return { kind: "elicitation", id: m.id, message: r.elicitation.message, requestedSchema: jsonObject(r.elicitation.requestedSchemaJson, "requested_schema_json") };
    case "elicitationUrl":
      return { kind: "elicitationUrl", id: m.id, message: r.elicitationUrl.message, url: r.elicitationUrl.url, elicitationId: r.elicitationUrl.elicitationId };
    case "sampling":
      return { kind: "sampling", id: m.id, params: jsonObject(r.sampling.paramsJson, "params_json") };
    case "roots":
      return { kind: "roots", id: m.id };
    default:
      throw new ToolsvcError(status.UNIMPLEMENTED, `input request ${JSON.stringify(m.id)}: unknown kind (a newer server?)`);
  }
}

const answerKind: Record<InputRequest["kind"], InputAnswer["kind"]> = {
  elicitation: "elicitation",
  elicitationUrl: "elicitation",
  sampling: "sampling",
  roots: "roots",
};

/** @internal The InputResponse answering req; a TypeError when the answer is of another kind. */
export function inputResponseOf(req: InputRequest, a: InputAnswer): InputResponseMessage {
  const want = answerKind[req.kind];
  if (a?.kind !== want) {
    throw new TypeError(`onInput answered a ${req.kind} request with ${JSON.stringify(a?.kind)}; want kind "${want}"`);
  }
  switch (a.kind) {
    case "elicitation":
      return {
        id: req.id,
        response: { $case: "elicitation", elicitation: { action: a.action, contentJson: a.content === undefined ? "" : JSON.stringify(a.content) } },
      };
    case "sampling":
      return { id: req.id, response: { $case: "sampling", sampling: { resultJson: JSON.stringify(a.result) } } };
    case "roots":
      return { id: req.id, response: { $case: "roots", roots: { roots: a.roots.map((r) => ({ uri: r.uri, name: r.name ?? "" })) } } };
  }
}

/** @internal */
export function roundsExceeded(name: string, rounds: number): ToolsvcError {
  return new ToolsvcError(status.ABORTED, `callTool ${name}: the tool still asks for input after ${rounds} rounds (maxInputRounds)`, {
    reason: "INPUT_ROUNDS_EXCEEDED",
  });
}
