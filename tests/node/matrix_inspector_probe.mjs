// Preloaded (node --import) into the MCP Inspector's CLI by matrix_inspector.mjs: prints the
// protocol version the CLI's client negotiated ("MATRIX_PROTOCOL <version>" on stderr), which
// the CLI itself does not show. The client hands the version to its transport; the CLI's
// streamable HTTP transport is this package's one copy of the TypeScript SDK (ES modules are
// loaded once per URL), so patching its prototype here reaches the CLI's instance.
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const set = StreamableHTTPClientTransport.prototype.setProtocolVersion;
StreamableHTTPClientTransport.prototype.setProtocolVersion = function (version) {
  process.stderr.write(`MATRIX_PROTOCOL ${version}\n`);
  return set.call(this, version);
};
