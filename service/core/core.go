package core

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Core is what every wire of one toolsvc server shares: the bridge, the
// auth state (authentication, authorization, rate limits, audit), the
// request and response limits, argument validation, and the operation
// engine every upstream operation goes through (operation.go). It holds no
// wire state: the gRPC edge (package service) and the MCP front door
// (package mcpfront) each build their answers from what it returns.
type Core struct {
	bridge *mcpbridge.Bridge
	log    *slog.Logger
	opts   Options
	// schemas holds compiled inputSchemas for argument validation.
	schemas schemaCache
	// auth is the current auth state (authstate.go); authMu serialises
	// SetAuth.
	auth   atomic.Pointer[AuthState]
	authMu sync.Mutex
	// search is the tool search index (search.go).
	toolIndex toolIndex
}

// Paging limits of every listing (page_size on gRPC; the MCP front door
// pages with its own size, at most MaxPageSize).
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Default size limits of a call. 4 MiB is also gRPC's default maximum
// received message size, so a default client can read any result the
// server is willing to send.
const (
	DefaultMaxRequestBytes  = 4 << 20
	DefaultMaxResponseBytes = 4 << 20
)

// Options configure a Core. The zero value is usable.
type Options struct {
	Logger *slog.Logger
	// Auth is the initial auth configuration; SetAuth replaces it whole.
	// An Authenticator or an Authorizer turns authentication on: every
	// request without a principal is then refused (Core.Authenticate).
	Auth AuthConfig
	// Observer, if set, records the operations' metrics.
	Observer Observer
	// MaxRequestBytes caps the encoded size of a call's request (0:
	// DefaultMaxRequestBytes); MaxResponseBytes the encoded size of an
	// operation's result (0: DefaultMaxResponseBytes). Larger ones fail
	// with RESOURCE_EXHAUSTED, naming the limit.
	MaxRequestBytes  int
	MaxResponseBytes int
}

// Observer records what the operation engine does, for metrics. Calls are
// labelled by server and tool (configured names and catalog names only,
// "unknown" otherwise), other operations by server and MCP method.
type Observer interface {
	CallStarted()
	CallDone(server, tool, outcome string, took time.Duration)
	OperationDone(server, method, outcome string, took time.Duration)
	RateLimited(principal, limit string)
}

// New returns the core of a server over the bridge.
func New(b *mcpbridge.Bridge, o Options) *Core {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	c := &Core{bridge: b, log: o.Logger, opts: o}
	c.auth.Store(c.newAuthState(o.Auth, nil))
	return c
}

// Bridge is the bridge the core serves.
func (s *Core) Bridge() *mcpbridge.Bridge { return s.bridge }

// Logger is the core's logger.
func (s *Core) Logger() *slog.Logger { return s.log }

// MaxRequestBytes and MaxResponseBytes are the core's size limits.
func (s *Core) MaxRequestBytes() int  { return s.opts.MaxRequestBytes }
func (s *Core) MaxResponseBytes() int { return s.opts.MaxResponseBytes }
