package core

import (
	"context"
	"log/slog"
	"time"
)

// Administrative actions (AdminService): each is one operation of the
// engine (operation.go), so each is authenticated, admitted, classified
// once and ends with metrics and one audit line, like a tool call. The
// audit line is "admin action" with the principal, the action, its target
// (the server, or "config" for a reload), "for" when the action concerns
// another principal's login, and the outcome.

// The admin operations.
var (
	OpAdminRefresh   = OpKind{method: "admin/refresh", audit: adminAudit, action: "refresh"}
	OpAdminReconnect = OpKind{method: "admin/reconnect", audit: adminAudit, action: "reconnect"}
	OpAdminReload    = OpKind{method: "admin/reload", audit: adminAudit, action: "reload"}
	OpAdminLogin     = OpKind{method: "admin/login", audit: adminAudit, action: "login"}
	OpAdminLogout    = OpKind{method: "admin/logout", audit: adminAudit, action: "logout"}
)

const adminAudit = "admin action"

// AdminOp is one administrative action moving through the operation
// engine. Used by one goroutine; End must be called exactly once.
type AdminOp struct {
	op     *Operation
	target string
	// forPrincipal is the principal whose login the action concerns, when
	// it is not the caller's own.
	forPrincipal string
}

// BeginAdmin authenticates the request of ctx for an admin action of kind
// on target (a server's name; "" for a reload, whose target is the
// configuration). It always returns the operation (so that End can
// observe a refusal).
func (s *Core) BeginAdmin(ctx context.Context, kind OpKind, target string) (*AdminOp, error) {
	op, err := s.Begin(ctx, kind, Fields{})
	a := &AdminOp{op: op, target: Clip(target)}
	if target == "" {
		a.target = "config"
	} else if _, serr := s.bridge.Server(target); serr == nil {
		op.server = target // a configured name: a bounded label
	}
	return a, err
}

// Context is the request's context with its principal.
func (a *AdminOp) Context() context.Context { return a.op.ctx }

// Principal is the authenticated caller.
func (a *AdminOp) Principal() Principal { return a.op.principal }

// For records that the action concerns principal who's login (Login,
// Logout), for the audit line when who is not the caller.
func (a *AdminOp) For(who string) {
	if who != a.op.principal.Name {
		a.forPrincipal = Clip(who)
	}
}

// Admit takes the action past its authorization, which the wire decides
// (refusal: nil when the caller may act; AdminService's rules need the
// caller's peer, which only the wire knows), then takes a slot of the
// principal's rate limit: an administrative action costs upstream work (a
// refresh lists, a reconnect restarts a session), so a principal's limit
// applies to it as to a call.
func (a *AdminOp) Admit(refusal *Error) error {
	if refusal != nil {
		return refusal
	}
	release, err := a.op.auth.limits.acquire(a.op.principal.Name, time.Now())
	if err != nil {
		return err
	}
	a.op.release = release
	return nil
}

// Fail classifies err once (nil: nil).
func (a *AdminOp) Fail(err error) *Error { return a.op.fail(err) }

// End observes the finished action once (fail: what the caller got) and
// writes its audit line.
func (a *AdminOp) End(fail *Error) {
	attrs := []slog.Attr{slog.String("action", a.op.kind.action), slog.String("target", a.target)}
	if a.forPrincipal != "" {
		attrs = append(attrs, slog.String("for", a.forPrincipal))
	}
	a.op.end(fail, false, attrs...)
}
