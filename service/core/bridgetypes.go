package core

import "github.com/toolsvc/toolsvc/mcpbridge"

// The bridge's value types a wire maps onto its own messages. They are
// plain values (no handle back into the bridge), so the core passes them
// on as they are rather than copying each into a twin type; this file is
// the one place that names where they live. A wire reaches the bridge's
// behaviour only through the core's operations.
type (
	// Bridge is what the composition root builds the core over (New).
	// Wires hold the Core, never a Bridge.
	Bridge = mcpbridge.Bridge

	// Progress and Log are what an upstream sends during a call;
	// CallOptions is how a call's relay receives them (progress.go).
	Progress    = mcpbridge.Progress
	Log         = mcpbridge.Log
	CallOptions = mcpbridge.CallOptions
	// InputKinds are the kinds of input a caller can answer; Interaction
	// is how a call asks for it (interact.go).
	InputKinds  = mcpbridge.InputKinds
	Interaction = mcpbridge.Interaction
	// RawResults keeps an upstream's results as they were on the wire,
	// for a wire that passes them through (WithRawResults).
	RawResults = mcpbridge.RawResults

	// TaskStatus and TaskEra describe an upstream task.
	TaskStatus = mcpbridge.TaskStatus
	TaskEra    = mcpbridge.TaskEra

	// ServerStatus reports on one upstream: its Transport, State and
	// circuit breaker (BreakerState).
	ServerStatus = mcpbridge.ServerStatus
	State        = mcpbridge.State
	BreakerState = mcpbridge.BreakerState
	Transport    = mcpbridge.Transport
	// Login is one principal's stored login to a userOAuth upstream
	// (Logins): never its token.
	Login = mcpbridge.Login
)

const (
	TaskWorking       = mcpbridge.TaskWorking
	TaskInputRequired = mcpbridge.TaskInputRequired
	TaskCompleted     = mcpbridge.TaskCompleted
	TaskFailed        = mcpbridge.TaskFailed
	TaskCancelled     = mcpbridge.TaskCancelled

	TaskEraNone = mcpbridge.TaskEraNone
	TaskEra2025 = mcpbridge.TaskEra2025
	TaskEra2026 = mcpbridge.TaskEra2026

	TasksExtension       = mcpbridge.TasksExtension
	TaskSupportOptional  = mcpbridge.TaskSupportOptional
	TaskSupportRequired  = mcpbridge.TaskSupportRequired
	TaskSupportForbidden = mcpbridge.TaskSupportForbidden

	StateConnecting = mcpbridge.StateConnecting
	StateReady      = mcpbridge.StateReady
	StateDegraded   = mcpbridge.StateDegraded
	StateDown       = mcpbridge.StateDown

	BreakerClosed   = mcpbridge.BreakerClosed
	BreakerOpen     = mcpbridge.BreakerOpen
	BreakerHalfOpen = mcpbridge.BreakerHalfOpen

	TransportStdio          = mcpbridge.TransportStdio
	TransportStreamableHTTP = mcpbridge.TransportStreamableHTTP
	TransportSSE            = mcpbridge.TransportSSE
	TransportGRPC           = mcpbridge.TransportGRPC
)

// The bridge's errors a wire tells apart (errors.Is). Every other bridge
// error reaches a wire already classified (Classify, errors.go).
var (
	ErrClosed        = mcpbridge.ErrClosed
	ErrNotUserOAuth  = mcpbridge.ErrNotUserOAuth
	ErrTaskCancelled = mcpbridge.ErrTaskCancelled
)

// WithRawResults makes the upstream calls under ctx keep their raw
// results in r; DecodeInputResponse decodes a caller's answer to an
// upstream's input request.
var (
	WithRawResults      = mcpbridge.WithRawResults
	DecodeInputResponse = mcpbridge.DecodeInputResponse
)
