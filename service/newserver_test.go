package service

import (
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// serverOpts are a test server's settings in one literal: the gRPC wire's
// (Options) and the core's (core.Options), which newServer splits as the
// composition root (package server) does.
type serverOpts struct {
	// The wire's.
	Logger           *slog.Logger
	ProgressInterval time.Duration
	WatchSendTimeout time.Duration
	Config           ConfigSource
	Metrics          *Metrics
	// The core's.
	Authenticator              *core.Authenticator
	Authorizer                 *core.Authorizer
	RateLimits                 []core.RateLimit
	AuditLog                   *slog.Logger
	AuditArguments             bool
	MaxRequestBytes            int
	MaxResponseBytes           int
	StateKey                   []byte
	ReplicaID                  string
	InputTimeout               time.Duration
	MaxWaitingPerPrincipal     int
	MaxWaiting                 int
	MaxParkedPerCall           int
	MaxInputRequestBytes       int
	MaxParkedBytes             int64
	MaxParkedBytesPerPrincipal int64
	TaskPollInterval           time.Duration
	MaxTaskWatchesPerPrincipal int
}

// newServer builds the core over b, with the metrics (if any) as its
// observer, then the gRPC wire from it. o may be nil.
func newServer(b *mcpbridge.Bridge, o *serverOpts) *Server {
	if o == nil {
		o = &serverOpts{}
	}
	co := core.Options{Logger: o.Logger, MaxRequestBytes: o.MaxRequestBytes, MaxResponseBytes: o.MaxResponseBytes,
		StateKey: o.StateKey, ReplicaID: o.ReplicaID, InputTimeout: o.InputTimeout,
		MaxWaitingPerPrincipal: o.MaxWaitingPerPrincipal, MaxWaiting: o.MaxWaiting, TaskPollInterval: o.TaskPollInterval,
		MaxTaskWatchesPerPrincipal: o.MaxTaskWatchesPerPrincipal,
		MaxParkedPerCall:           o.MaxParkedPerCall, MaxInputRequestBytes: o.MaxInputRequestBytes,
		MaxParkedBytes: o.MaxParkedBytes, MaxParkedBytesPerPrincipal: o.MaxParkedBytesPerPrincipal,
		Auth: core.AuthConfig{Authenticator: o.Authenticator, Authorizer: o.Authorizer, RateLimits: o.RateLimits,
			AuditLog: o.AuditLog, AuditArguments: o.AuditArguments}}
	if o.Metrics != nil {
		co.Observer = o.Metrics
	}
	return New(core.New(b, co), &Options{Logger: o.Logger, ProgressInterval: o.ProgressInterval,
		WatchSendTimeout: o.WatchSendTimeout, Config: o.Config, Metrics: o.Metrics})
}
