/**
 * The catalog in the tool formats of LLM APIs. Names are toolsvc's exposed
 * names (`<server>__<tool>`, already valid function names), so a model's
 * tool call goes straight to `client.callTool(call.name, call.arguments)`.
 */

/** A JSON object (a JSON Schema here). */
export type JsonObject = { [key: string]: unknown };

/**
 * What the converters read of a tool: a {@link Tool} of the catalog fits.
 * `inputSchemaJson` (the schema as JSON text, as a server that offers it
 * sends it) is preferred when present and not empty; otherwise the
 * `inputSchema` Struct is used.
 */
export interface ToolLike {
  name: string;
  description?: string;
  title?: string;
  inputSchema?: { [key: string]: any } | undefined;
  inputSchemaJson?: string;
}

/** An OpenAI Chat Completions tool. */
export interface OpenAIChatTool {
  type: "function";
  function: { name: string; description: string; parameters: JsonObject };
}

/** An OpenAI Responses API tool. `strict` is false: MCP schemas are not written for strict mode. */
export interface OpenAIResponsesTool {
  type: "function";
  name: string;
  description: string;
  parameters: JsonObject;
  strict: false;
}

/** An Anthropic Messages API tool. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: JsonObject;
  /** Set by toAnthropicTools' deferLoading: loaded only once Anthropic's tool search finds it. */
  defer_loading?: boolean;
}

/**
 * What the converters take: tools (such as `await client.listTools()`), or a
 * search's result as it is (`await client.searchTools({query})`, best first).
 */
export type ToolsInput = Iterable<ToolLike> | { tools: Iterable<ToolLike> };

function toolsOf(tools: ToolsInput): ToolLike[] {
  return Symbol.iterator in tools ? [...tools] : [...tools.tools];
}

/**
 * The tool's input JSON Schema as a fresh object (changing it does not
 * change the catalog). Struct numbers are doubles on the wire, but a JS
 * number has no separate integer type: `10.0` and `10` are the same value
 * and serialise as `10`, so integers stay integers in the JSON sent to a
 * model. A tool without a schema gets `{"type": "object", "properties": {}}`.
 */
export function inputSchemaOf(tool: ToolLike): JsonObject {
  if (tool.inputSchemaJson) {
    const parsed: unknown = JSON.parse(tool.inputSchemaJson);
    if (isObject(parsed)) {
      return parsed;
    }
  }
  if (tool.inputSchema) {
    return structuredClone(tool.inputSchema) as JsonObject;
  }
  return { type: "object", properties: {} };
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(tool: ToolLike): string {
  return tool.description || tool.title || "";
}

/**
 * Tools in OpenAI's function-calling format: Chat Completions
 * (`{type: "function", function: {name, description, parameters}}`) by
 * default, or the Responses API's flat form with `{api: "responses"}`.
 */
export function toOpenAITools(tools: ToolsInput, options?: { api?: "chat" }): OpenAIChatTool[];
export function toOpenAITools(tools: ToolsInput, options: { api: "responses" }): OpenAIResponsesTool[];
export function toOpenAITools(
  tools: ToolsInput,
  options: { api?: "chat" | "responses" } = {},
): OpenAIChatTool[] | OpenAIResponsesTool[] {
  if (options.api === "responses") {
    return toolsOf(tools).map((t) => ({
      type: "function" as const,
      name: t.name,
      description: describe(t),
      parameters: inputSchemaOf(t),
      strict: false as const,
    }));
  }
  return toolsOf(tools).map((t) => ({
    type: "function" as const,
    function: { name: t.name, description: describe(t), parameters: inputSchemaOf(t) },
  }));
}

/**
 * Tools in Anthropic's Messages API format: `{name, description, input_schema}`
 * (`tools` may be a searched subset: `await client.searchTools({query})`).
 * With `deferLoading`, every tool not named in `alwaysLoaded` carries
 * `defer_loading: true`, for Anthropic's tool search (which then loads a tool
 * only once a search finds it; the request also needs a tool-search tool).
 */
export function toAnthropicTools(
  tools: ToolsInput,
  options: { deferLoading?: boolean; alwaysLoaded?: Iterable<string> } = {},
): AnthropicTool[] {
  const keep = new Set(options.alwaysLoaded ?? []);
  return toolsOf(tools).map((t) => {
    const out: AnthropicTool = { name: t.name, description: describe(t), input_schema: inputSchemaOf(t) };
    if (options.deferLoading && !keep.has(t.name)) {
      out.defer_loading = true;
    }
    return out;
  });
}
