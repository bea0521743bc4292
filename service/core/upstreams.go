package core

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The operations on the upstreams and their catalogs a wire needs besides
// the operation engine (operation.go): reading the catalogs, the servers'
// status and logins, and what a task or a resource subscription needs of
// the bridge. A wire reaches the bridge through these only; the admin
// actions (refresh, reconnect, login, logout) are methods of an admitted
// AdminOp (admin.go), never of the Core, so none runs without the admin
// rule.

// Catalog is the shared tool catalog (every upstream with shared
// credentials; a principal's view adds its per-principal listings, Tools).
func (s *Core) Catalog() *Catalog { return s.bridge.Catalog() }

// IsCurrent reports whether snap is the shared catalog's current snapshot
// (a wire's caches keep only the current one's encodings).
func (s *Core) IsCurrent(snap *Snapshot) bool { return snap == s.bridge.Catalog().Current() }

// ToolsOf is principal's view of the tool catalog ("" : the shared one).
func (s *Core) ToolsOf(principal string) ToolView { return s.bridge.Tools(principal) }

// Resources is the resource catalog (resources, templates, prompts).
func (s *Core) Resources() *ResourceCatalog { return s.bridge.Resources() }

// SubscribeAllTools is signalled by the shared catalog's changes and by
// every principal's listings' changes; PrivateGen counts the latter, so
// that a loop woken by it tells them apart.
func (s *Core) SubscribeAllTools() *Subscription { return s.bridge.SubscribeAllTools() }

// PrivateGen counts the changes of principals' per-principal listings.
func (s *Core) PrivateGen() uint64 { return s.bridge.PrivateGen() }

// HasPerUser reports whether an upstream with per-user credentials runs
// (principals' views of the tool catalog can then differ).
func (s *Core) HasPerUser() bool { return s.bridge.HasPerUser() }

// Servers reports on every configured upstream, Server on one
// (ErrServerNotFound for a name not configured).
func (s *Core) Servers() []ServerStatus { return s.bridge.Servers() }

// Server reports on one configured upstream.
func (s *Core) Server(name string) (ServerStatus, error) { return s.bridge.Server(name) }

// ErrLoginsNotListable: Logins of every principal from a token store that
// cannot list them (Redis).
var ErrLoginsNotListable = mcpbridge.ErrLoginsNotListable

// Logins are the stored userOAuth logins, principal's ("": every
// principal's, when the token store can list them), at most limit, and
// whether there are more. The caller decides who may see whose.
func (s *Core) Logins(ctx context.Context, principal string, limit int) ([]Login, bool, error) {
	return s.bridge.Logins(ctx, principal, limit)
}

// TaskEra is the kind of tasks server's current session runs.
func (s *Core) TaskEra(server string) (TaskEra, error) { return s.bridge.TaskEra(server) }

// PolicyAnswer is the answer toolsvc gives server's input request for a
// caller that cannot answer it (the server's elicitation policy).
func (s *Core) PolicyAnswer(server string, r mcp.InputRequest) mcp.InputResponse {
	return s.bridge.PolicyAnswer(server, r)
}
