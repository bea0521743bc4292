package core

import (
	"crypto/rand"
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
	// input holds the interactive calls' key and flights (interact.go).
	input *interactive
	// tasks holds the task handles' cipher, watch polls and ledger
	// (tasks.go).
	tasks *taskCore
	// views remembers the views of the current snapshots (view.go).
	views viewMemo
	// subs is the resource subscription hub (subscriptions.go).
	subs *subHub
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
	// StateKey signs interactive calls' request states; replicas behind
	// one load balancer share it (nil: a random key, so only this process
	// can continue its calls). ReplicaID names this replica in a parked
	// call's state (empty: random).
	StateKey  []byte
	ReplicaID string
	// InputTimeout is how long an input_required waits for its answer
	// (0: DefaultInputTimeout); MaxInteractiveCall bounds an interactive
	// call's upstream call as a whole (0: DefaultMaxInteractiveCall).
	InputTimeout       time.Duration
	MaxInteractiveCall time.Duration
	// MaxWaitingPerPrincipal bounds a principal's interactive calls that
	// have asked their caller for input; MaxWaiting such calls on this
	// replica (a call that merely offers input counts in neither). 0: the
	// defaults.
	MaxWaitingPerPrincipal int
	MaxWaiting             int
	// Bounds of the server-to-client requests parked for a caller (0: the
	// defaults): MaxParkedPerCall requests waiting in one call;
	// MaxInputRequestBytes the encoded size of one; MaxParkedBytes and
	// MaxParkedBytesPerPrincipal the encoded size of all those waiting on
	// this replica, and of one principal's share of them.
	MaxParkedPerCall           int
	MaxInputRequestBytes       int
	MaxParkedBytes             int64
	MaxParkedBytesPerPrincipal int64
	// TaskPollInterval is how often a watched task's upstream is polled
	// (0: DefaultTaskPollInterval), one poll per task however many
	// watchers.
	TaskPollInterval time.Duration
	// MaxTaskWatchesPerPrincipal bounds the tasks one principal watches at
	// once on this replica (0: DefaultMaxTaskWatchesPerPrincipal); more are
	// RESOURCE_EXHAUSTED TOO_MANY_TASK_WATCHES.
	MaxTaskWatchesPerPrincipal int
	// SearchRanker is SearchTools' ranking: SearchHybrid ("": the
	// default) or SearchLexical (search.go).
	SearchRanker string
}

// Observer records what the operation engine does, for metrics. Calls are
// labelled by server and tool (configured names and catalog names only,
// "unknown" otherwise), other operations by server and MCP method. A
// finished call comes with the time it ended, which the engine read to
// time it, so that an observer that files calls by time (the console's
// traffic ring) need not read the clock again on every call.
type Observer interface {
	CallStarted()
	CallDone(server, tool, outcome string, end time.Time, took time.Duration)
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
	if o.InputTimeout <= 0 {
		o.InputTimeout = DefaultInputTimeout
	}
	if o.MaxInteractiveCall <= 0 {
		o.MaxInteractiveCall = DefaultMaxInteractiveCall
	}
	if o.MaxWaitingPerPrincipal <= 0 {
		o.MaxWaitingPerPrincipal = DefaultMaxWaitingPerPrincipal
	}
	if o.MaxWaiting <= 0 {
		o.MaxWaiting = DefaultMaxWaiting
	}
	if o.MaxParkedPerCall <= 0 {
		o.MaxParkedPerCall = DefaultMaxParkedPerCall
	}
	if o.MaxInputRequestBytes <= 0 {
		o.MaxInputRequestBytes = DefaultMaxInputRequestBytes
	}
	if o.MaxParkedBytes <= 0 {
		o.MaxParkedBytes = DefaultMaxParkedBytes
	}
	if o.MaxParkedBytesPerPrincipal <= 0 {
		o.MaxParkedBytesPerPrincipal = DefaultMaxParkedBytesPerPrincipal
	}
	if o.TaskPollInterval <= 0 {
		o.TaskPollInterval = DefaultTaskPollInterval
	}
	if o.MaxTaskWatchesPerPrincipal <= 0 {
		o.MaxTaskWatchesPerPrincipal = DefaultMaxTaskWatchesPerPrincipal
	}
	if len(o.StateKey) == 0 {
		// Without a shared key only this process can verify its states
		// and open its task handles.
		o.StateKey = make([]byte, 32)
		_, _ = rand.Read(o.StateKey)
	}
	c := &Core{bridge: b, log: o.Logger, opts: o, input: newInteractive(o.StateKey, o.ReplicaID, limitsOf(o)),
		tasks: newTaskCore(o.StateKey, o.TaskPollInterval, o.MaxTaskWatchesPerPrincipal)}
	c.subs = newSubHub(o.Logger, b)
	c.auth.Store(c.newAuthState(o.Auth, nil))
	return c
}

// Logger is the core's logger.
func (s *Core) Logger() *slog.Logger { return s.log }

// MaxRequestBytes and MaxResponseBytes are the core's size limits.
func (s *Core) MaxRequestBytes() int  { return s.opts.MaxRequestBytes }
func (s *Core) MaxResponseBytes() int { return s.opts.MaxResponseBytes }
