package mcpbridge

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is the supervision state of an upstream.
type State int

const (
	StateConnecting State = iota + 1
	StateReady
	StateDegraded
	StateDown
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateReady:
		return "ready"
	case StateDegraded:
		return "degraded"
	case StateDown:
		return "down"
	}
	return "unknown"
}

// ServerStatus is a point-in-time report on one upstream.
type ServerStatus struct {
	Name            string
	Transport       Transport
	State           State
	ToolCount       int
	ConnectCount    int64
	RefreshCount    int64
	LastRefreshTime time.Time
	// LastRefreshOK is meaningful only when LastRefreshTime is set.
	LastRefreshOK bool
	// LastListOK is when the last successful tools/list finished.
	LastListOK time.Time
	// LastError is the last connect, probe, list or call failure, with
	// configured secrets removed.
	LastError       string
	ProtocolVersion string
	// Tasks is the kind of tasks the current (or last) session runs
	// (tasks.go): TaskEraNone when it runs none.
	Tasks               TaskEra
	Warnings            []string
	Breaker             BreakerState
	BreakerRetryTime    time.Time // while open
	ConsecutiveFailures int
	InFlightCalls       int
	ConnectedTime       time.Time // of the current session
	// PushChannel is the state of the current session's list_changed push
	// channel: "up", "down" (lost; re-listing every PushlessRefresh and, on
	// 2026-07-28, re-opening it), "none" (the upstream has none), or ""
	// (no session, or not known yet). PushSince is when it took that state.
	PushChannel     string
	PushSince       time.Time
	NextConnectTime time.Time // while down
	// PerUser is set for an upstream with per-user credentials;
	// UserSessions is then its per-principal sessions open now.
	PerUser      bool
	UserSessions int
}

func (u *upstream) setState(st State, lastError string) {
	u.mu.Lock()
	u.status.State = st
	if lastError != "" {
		u.status.LastError = lastError
	}
	u.mu.Unlock()
}

func (u *upstream) statusSnapshot() ServerStatus {
	now := time.Now()
	u.mu.Lock()
	st := u.status
	listWarnings := u.listWarnings
	st.Breaker = u.breaker.state(now)
	if st.Breaker == BreakerOpen {
		st.BreakerRetryTime = u.breaker.until
	}
	u.mu.Unlock()
	st.InFlightCalls = int(u.inflight.Load())
	u.source.status(&st)
	st.Warnings = slices.Concat(u.b.catalog.Warnings(u.cfg.Name), listWarnings)
	if e := u.b.storeError(); e != "" && u.cfg.Credentials.mode() == CredentialsUserOAuth {
		// No login can be read: whatever the session says, every call fails.
		st.LastError = "token store: " + e
		st.Warnings = append(st.Warnings, "the token store could not be opened at start; every call and login fails until it is fixed and toolsvc restarted: "+e)
	}
	if s := u.sess.Load(); s != nil && s.cs != nil {
		ps, since, reason := s.push.status()
		if ps != pushUnknown {
			st.PushChannel, st.PushSince = ps.String(), since
		}
		if s.pushless() {
			st.Warnings = append(st.Warnings, fmt.Sprintf("no push channel since %s (%s): re-listing every %s",
				since.UTC().Format(time.TimeOnly), reason, u.cfg.PushlessRefresh))
		}
	}
	return st
}

// redact removes configured secrets (URL, header and env values) from a
// message before it is logged or reported, and clips it to 512 bytes.
func (u *upstream) redact(msg string) string {
	msg = u.redactAll(msg)
	const maxErrLen = 512
	if len(msg) > maxErrLen {
		msg = msg[:maxErrLen] + "…"
	}
	return msg
}

// redactAll is msg without configured secrets, whatever its length.
func (u *upstream) redactAll(msg string) string {
	if u.cfg.URL != "" {
		msg = strings.ReplaceAll(msg, u.cfg.URL, "<upstream-url>")
	}
	for _, v := range u.cfg.Headers {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "<redacted>")
		}
	}
	for _, v := range u.cfg.Env {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "<redacted>")
		}
	}
	for _, v := range u.cfg.Secrets {
		msg = strings.ReplaceAll(msg, v, "<redacted>")
	}
	return u.runtimeSecrets.redact(msg)
}
