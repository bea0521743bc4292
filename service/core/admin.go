package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/toolsvc/toolsvc/internal/loopback"
)

// Administrative actions (AdminService, the console's actions): each is
// one operation of the engine (operation.go), so each is authenticated,
// authorized, admitted, classified once and ends with metrics and one
// audit line, like a tool call. The audit line is "admin action" with the
// principal, the action, its target (the server, or "config" for a
// reload), "for" when the action concerns another principal's login, and
// the outcome.
//
// Who may run one is the core's rule (adminRefusal), applied in
// BeginAdmin from the principal the core authenticated, and the actions
// themselves are methods of the admitted AdminOp: no wire can run one
// without the rule, or decide it differently from another wire.

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
	server string // as the caller named it
	target string // for the audit line: the server clipped, or "config"
	// who is whose login a Login or Logout concerns (the caller's own
	// unless it named another); forPrincipal is who, clipped, when it is
	// not the caller.
	who, forPrincipal string
	// refusal is BeginAdmin's refusal, nil once admitted: every action
	// returns it instead of acting, so a wire that ignored it still cannot
	// act.
	refusal error
}

// BeginAdmin authenticates the request of ctx for an admin action of kind
// on server (a server's name; "" for a reload, whose target is the
// configuration), concerning principal's login for OpAdminLogin and
// OpAdminLogout ("": the caller's own; ignored by the other kinds). It
// then applies the admin rule (adminRefusal) to the principal it
// authenticated and takes a slot of the principal's rate limit: an
// administrative action costs upstream work (a refresh lists, a reconnect
// restarts a session), so a principal's limit applies to it as to a call.
// It always returns the operation (so that End can observe a refusal);
// its actions run only when err is nil.
//
// Without an auth section nobody is authenticated, and an action is for
// callers on this machine only: the wire says where the caller is with
// Credentials.Peer.
func (s *Core) BeginAdmin(ctx context.Context, kind OpKind, server, principal string) (*AdminOp, error) {
	a := s.beginAdmin(ctx, kind, server, principal)
	return a, a.refusal
}

func (s *Core) beginAdmin(ctx context.Context, kind OpKind, server, principal string) *AdminOp {
	op, err := s.Begin(ctx, kind, Fields{})
	a := &AdminOp{op: op, server: server, target: Clip(server)}
	if server == "" {
		a.target = "config"
	} else if _, serr := s.bridge.Server(server); serr == nil {
		op.server = server // a configured name: a bounded label
	}
	if kind.action == OpAdminLogin.action || kind.action == OpAdminLogout.action {
		a.who = principal
		if a.who == "" {
			a.who = op.principal.Name
		}
		if a.who != op.principal.Name {
			a.forPrincipal = Clip(a.who)
		}
	}
	if err != nil {
		a.refusal = err
		return a
	}
	if refusal := adminRefusal(op.ctx, op.auth, op.principal, kind, a.who); refusal != nil {
		a.refusal = refusal
		return a
	}
	release, err := op.auth.limits.admitNow(op.principal.Name)
	if err != nil {
		a.refusal = err
		return a
	}
	op.release = release
	return a
}

// adminRefusal is the admin rule, nil when p may run the action of kind
// (who: whose login a Login or Logout concerns):
//   - without an auth section nobody is authenticated: callers on this
//     machine only (Credentials.Peer a loopback address or a Unix socket);
//     anyone else is ADMIN_LOOPBACK_ONLY, naming the peer;
//   - with one, refresh, reconnect and reload are for auth.admins; a
//     principal revokes its own logins, an admin anyone's; a principal asks
//     only for its own login link, admins included (a link logs in the
//     principal it names as whoever follows it, so an operator's for
//     another principal would put the operator's upstream account under
//     that principal's name). Anything else is PERMISSION_DENIED.
func adminRefusal(ctx context.Context, st *AuthState, p Principal, kind OpKind, who string) *Error {
	if !st.configured() {
		peer := credentialsFrom(ctx).Peer
		if peer != nil && loopback.Addr(peer) {
			return nil
		}
		return NewError(PermissionDenied, ReasonAdminLoopbackOnly,
			"without an auth section admin actions answer only callers on this machine; "+
				"configure auth (tokens, jwt or mtls) and list the operators in auth.admins to act remotely",
			map[string]string{"peer": peerString(peer)})
	}
	denied := func(msg string) *Error {
		return NewError(PermissionDenied, ReasonPermissionDenied, fmt.Sprintf(msg, p.Name), map[string]string{"principal": p.Name})
	}
	switch kind.action {
	case OpAdminLogin.action:
		if who != p.Name {
			return denied("principal %q may ask only for its own login link (a link logs in the principal it names as whoever follows it)")
		}
	case OpAdminLogout.action:
		if who != p.Name && !st.authz.AllowAdmin(p) {
			return denied("principal %q may revoke only its own logins; another principal's needs auth.admins")
		}
	default:
		if !st.authz.AllowAdmin(p) {
			return denied("principal %q may not " + kind.action + " (auth.admins)")
		}
	}
	return nil
}

// Operator reports whether the caller of ctx, principal p as the core
// authenticated it, is an operator: it sees operator details on every
// wire (every upstream's last error, the configuration's status, other
// principals' calls) and may run the server actions. It is adminRefusal's
// rule for refresh, in one place for the wires: without an auth section a
// caller on this machine (Credentials.Peer), with one a principal of
// auth.admins.
func (s *Core) Operator(ctx context.Context, p Principal) bool {
	return adminRefusal(ctx, s.AuthOf(ctx), p, OpAdminRefresh, "") == nil
}

func peerString(a net.Addr) string {
	if a == nil {
		return "unknown"
	}
	return a.String()
}

// Context is the request's context with its principal.
func (a *AdminOp) Context() context.Context { return a.op.ctx }

// Principal is the authenticated caller.
func (a *AdminOp) Principal() Principal { return a.op.principal }

// Who is whose login a Login or Logout concerns: the principal the caller
// named, else the caller.
func (a *AdminOp) Who() string { return a.who }

// Refresh re-lists the server's catalogs now and waits for the result.
func (a *AdminOp) Refresh() (ServerStatus, error) {
	if err := a.serverAction("name"); err != nil {
		return ServerStatus{}, err
	}
	return a.op.s.bridge.Refresh(a.op.ctx, a.server)
}

// Reconnect drops the server's session and connects again at once,
// clearing its backoff and circuit breaker.
func (a *AdminOp) Reconnect() (ServerStatus, error) {
	if err := a.serverAction("name"); err != nil {
		return ServerStatus{}, err
	}
	return a.op.s.bridge.Reconnect(a.op.ctx, a.server)
}

// Login is Who's login link to the userOAuth server ("" when a usable
// token is stored, unless force).
func (a *AdminOp) Login(force bool) (string, error) {
	if err := a.loginAction(); err != nil {
		return "", err
	}
	link, err := a.op.s.bridge.Login(a.op.ctx, a.who, a.server, force)
	if errors.Is(err, ErrNotUserOAuth) {
		return "", InvalidField("server", fmt.Sprintf("server %q is not in credentials mode userOAuth: it has no logins", Clip(a.server)))
	}
	return link, err
}

// Logout revokes Who's token for the userOAuth server and deletes it.
func (a *AdminOp) Logout() error {
	if err := a.loginAction(); err != nil {
		return err
	}
	err := a.op.s.bridge.Logout(a.op.ctx, a.who, a.server)
	if errors.Is(err, ErrNotUserOAuth) {
		return InvalidField("server", fmt.Sprintf("server %q is not in credentials mode userOAuth: it stores no logins", Clip(a.server)))
	}
	return err
}

// Reload runs reload, the wire's reading of the configuration file (the
// core does not read files), once the reload is admitted.
func (a *AdminOp) Reload(reload func(context.Context)) error {
	if a.refusal != nil {
		return a.refusal
	}
	reload(a.op.ctx)
	return nil
}

// serverAction checks that the action was admitted and names a server
// (field: the wire's name for it).
func (a *AdminOp) serverAction(field string) error {
	if a.refusal != nil {
		return a.refusal
	}
	if a.server == "" {
		return InvalidField(field, "required: a configured server name")
	}
	return nil
}

// loginAction checks that a Login or Logout was admitted and names a
// server and a principal.
func (a *AdminOp) loginAction() error {
	if a.refusal != nil {
		return a.refusal
	}
	if a.server == "" {
		return InvalidField("server", "required: a configured server in credentials mode userOAuth")
	}
	if a.who == "" {
		return InvalidField("principal", "required without an auth section: nobody is authenticated, so name whose login this is")
	}
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
