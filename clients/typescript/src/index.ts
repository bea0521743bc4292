/**
 * @toolsvc/client: a TypeScript client for toolsvc (gRPC tool dispatch over
 * many MCP servers). See README.md.
 */
export {
  Client,
  loadBalancingServiceConfig,
  type CallOptions,
  type CallToolOptions,
  type ClientOptions,
  type ListToolsOptions,
  type RetryOptions,
  type SearchResults,
  type SearchToolsOptions,
  type TaskRequest,
  type ToolArguments,
  type ToolStreamEvent,
} from "./client.js";
export {
  inputKinds,
  defaultMaxInputRounds,
  type InputAnswer,
  type InputHandler,
  type InputKind,
  type InputRequest,
} from "./input.js";
export {
  ToolsvcError,
  notDispatched,
  fromError,
  ERROR_DOMAIN,
  type FieldViolation,
} from "./errors.js";
export {
  CatalogWatcher,
  Task,
  TaskFailedError,
  TaskCancelledError,
  type TaskStatusName,
  type WaitTaskOptions,
  type WatchEvent,
  type WatchEventKind,
  type WatchOptions,
} from "./watch.js";
export {
  toOpenAITools,
  toAnthropicTools,
  inputSchemaOf,
  type AnthropicTool,
  type JsonObject,
  type OpenAIChatTool,
  type OpenAIResponsesTool,
  type ToolLike,
  type ToolsInput,
} from "./llm.js";
export { ToolResult } from "./result.js";
export { status } from "@grpc/grpc-js";
export type {
  Tool,
  ToolAnnotations,
  Content,
  TextContent,
  ImageContent,
  AudioContent,
  ResourceLink,
  EmbeddedResource,
  ResourceContents,
  Annotations,
  Server,
  ConfigStatus,
  ListServersResponse,
  CallToolResponse,
  WatchCatalogResponse,
} from "./gen/toolsvc/v1/toolsvc.js";
export { Transport, ServerState, BreakerState, RefreshOutcome } from "./gen/toolsvc/v1/toolsvc.js";
