package core

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/memupstream"
)

// TestAdminRuleWithoutWireCheck: the admin rule is the core's. A caller
// of the core that checks nothing itself (as a new wire could) still gets
// a non-admin refused with PERMISSION_DENIED / PERMISSION_DENIED: the
// action does not run (the upstream is not refreshed, reconnected or
// logged out), its methods return the refusal, and one audit line says
// so. A principal's own logout passes the rule (and fails on the server,
// which stores no logins); an admin's refresh runs.
func TestAdminRuleWithoutWireCheck(t *testing.T) {
	t.Parallel()
	u := memupstream.New(t, 1)
	audit := &bytes.Buffer{} // written by End, on this goroutine
	authn := NewAuthenticator(map[string]string{"tok-bob": "bob", "tok-root": "root"}, nil, false)
	c := New(u.Bridge, Options{Auth: AuthConfig{Authenticator: authn, Authorizer: NewAuthorizer(nil, []string{"root"}),
		AuditLog: slog.New(slog.NewTextHandler(audit, nil))}})
	as := func(tok string) context.Context {
		return WithCredentials(t.Context(), Credentials{Bearer: tok})
	}
	before, err := c.Server("mem")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tok, principal string
		kind           OpKind
		act            func(*AdminOp) error
		wantReason     string // "" : admitted
		wantErr        string // the action's own error, when admitted
		audit          string
	}{
		{"tok-bob", "", OpAdminRefresh, func(op *AdminOp) error { _, err := op.Refresh(); return err }, ReasonPermissionDenied, "",
			`principal=bob outcome=PermissionDenied duration=\S+ action=refresh target=mem$`},
		{"tok-bob", "", OpAdminReconnect, func(op *AdminOp) error { _, err := op.Reconnect(); return err }, ReasonPermissionDenied, "",
			`principal=bob outcome=PermissionDenied duration=\S+ action=reconnect target=mem$`},
		{"tok-bob", "", OpAdminReload, func(op *AdminOp) error {
			return op.Reload(func(context.Context) { t.Error("bob's reload ran") })
		}, ReasonPermissionDenied, "", `principal=bob outcome=PermissionDenied duration=\S+ action=reload target=config$`},
		{"tok-bob", "root", OpAdminLogout, (*AdminOp).Logout, ReasonPermissionDenied, "",
			`principal=bob outcome=PermissionDenied duration=\S+ action=logout target=mem for=root$`},
		// Nobody asks for another principal's login link, admins included.
		{"tok-root", "bob", OpAdminLogin, func(op *AdminOp) error { _, err := op.Login(false); return err }, ReasonPermissionDenied, "",
			`principal=root outcome=PermissionDenied duration=\S+ action=login target=mem for=bob$`},
		{"tok-bob", "", OpAdminLogout, (*AdminOp).Logout, "", "credentials mode userOAuth",
			`principal=bob outcome=InvalidArgument duration=\S+ action=logout target=mem$`},
		{"tok-root", "", OpAdminRefresh, func(op *AdminOp) error { _, err := op.Refresh(); return err }, "", "",
			`principal=root outcome=ok duration=\S+ action=refresh target=mem$`},
	} {
		server := "mem"
		if tc.kind == OpAdminReload {
			server = "" // the configuration
		}
		op, refusal := c.BeginAdmin(as(tc.tok), tc.kind, server, tc.principal)
		err := tc.act(op) // whatever BeginAdmin said: no wire check
		fail := op.Fail(err)
		op.End(fail)
		what := tc.tok + " " + tc.kind.action
		switch {
		case tc.wantReason != "":
			var e *Error
			if !errors.As(refusal, &e) || e.Code != PermissionDenied || e.Reason != tc.wantReason {
				t.Errorf("%s: BeginAdmin = %v, want PERMISSION_DENIED / %s", what, refusal, tc.wantReason)
			}
			if fail == nil || fail.Reason != tc.wantReason {
				t.Errorf("%s: the action without the wire's check = %v, want the refusal", what, fail)
			}
		case refusal != nil:
			t.Errorf("%s: BeginAdmin = %v, want admitted", what, refusal)
		case tc.wantErr == "" && err != nil, tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s = %v, want %q", what, err, tc.wantErr)
		}
		if !regexp.MustCompile(`(?m)msg="admin action" ` + tc.audit).MatchString(audit.String()) {
			t.Errorf("%s: no audit line %s in\n%s", what, tc.audit, audit)
		}
	}
	after, err := c.Server("mem")
	if err != nil {
		t.Fatal(err)
	}
	// Only root's refresh reached the upstream: one listing more, and
	// bob's reconnect did not start another session.
	if after.ConnectCount != before.ConnectCount || after.RefreshCount != before.RefreshCount+1 {
		t.Errorf("connects %d -> %d, refreshes %d -> %d: want the same connects and one refresh (root's)",
			before.ConnectCount, after.ConnectCount, before.RefreshCount, after.RefreshCount)
	}
}

// TestAdminRuleWithoutAuth: without an auth section nobody is
// authenticated, and the core admits an admin action only from a caller
// the wire places on this machine (Credentials.Peer); anyone else, a
// caller the wire placed nowhere included, is ADMIN_LOOPBACK_ONLY naming
// the peer.
func TestAdminRuleWithoutAuth(t *testing.T) {
	t.Parallel()
	u := memupstream.New(t, 1)
	c := New(u.Bridge, Options{})
	for _, tc := range []struct {
		peer     net.Addr
		wantPeer string // "" : admitted
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4000}, ""},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 4000}, ""},
		{&net.UnixAddr{Name: "/run/toolsvc.sock", Net: "unix"}, ""},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 4000}, "192.0.2.7:4000"},
		{nil, "unknown"},
	} {
		op, err := c.BeginAdmin(WithCredentials(t.Context(), Credentials{Peer: tc.peer}), OpAdminRefresh, "mem", "")
		if err == nil {
			_, err = op.Refresh()
		}
		op.End(op.Fail(err))
		var e *Error
		switch {
		case tc.wantPeer == "" && err != nil:
			t.Errorf("refresh from %v = %v, want admitted", tc.peer, err)
		case tc.wantPeer != "" && (!errors.As(err, &e) || e.Reason != ReasonAdminLoopbackOnly || e.Meta["peer"] != tc.wantPeer):
			t.Errorf("refresh from %v = %v, want %s naming peer %s", tc.peer, err, ReasonAdminLoopbackOnly, tc.wantPeer)
		}
	}
	// Logins need the principal named: nobody is authenticated.
	op, err := c.BeginAdmin(WithCredentials(t.Context(), Credentials{Peer: &net.UnixAddr{Net: "unix"}}), OpAdminLogout, "mem", "")
	if err == nil {
		err = op.Logout()
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail == nil || fail.Code != InvalidArgument || len(fail.Violations) != 1 || fail.Violations[0].Field != "principal" {
		t.Errorf("logout naming nobody without auth = %v, want INVALID_ARGUMENT on principal", fail)
	}
}
