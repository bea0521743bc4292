import type { Metadata } from "@grpc/grpc-js";
import type { CallToolResponse, Content, ToolServiceClient } from "./gen/toolsvc/v1/toolsvc.js";

// What the client and the watcher (watch.ts) share, in a module of its own
// so that neither imports the other: the client builds watchers and tasks,
// and they need only a call's result and the client's raw stub.

/** The result of a tool call. */
export class ToolResult {
  /** The unstructured result, in upstream order. */
  readonly content: Content[];
  /** The structured result, if the tool returned one. */
  readonly structuredContent: { [key: string]: any } | undefined;
  /** True when the tool itself reports failure: data for the model, not an error. */
  readonly isError: boolean;
  /** The result's _meta object, if any. */
  readonly meta: { [key: string]: any } | undefined;
  /** The message as received. */
  readonly raw: CallToolResponse;

  constructor(raw: CallToolResponse) {
    this.raw = raw;
    this.content = raw.content;
    this.structuredContent = raw.structuredContent;
    this.isError = raw.isError;
    this.meta = raw.meta;
  }

  /** The text items of the content, one per line (images, audio and resources left out). */
  get text(): string {
    const out: string[] = [];
    for (const c of this.content) {
      if (c.content?.$case === "text") {
        out.push(c.content.text.text);
      }
    }
    return out.join("\n");
  }
}

/** What the watcher needs of a client. @internal */
export interface ClientInternals {
  readonly raw: ToolServiceClient;
  metadata(): Metadata;
}
