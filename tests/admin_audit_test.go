package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// The tokens of startAdminPair's principals: root (auth.admins) and bob.
const auditRootTok, auditBobTok = "audit-root-0123456789", "audit-bob-0123456789"

// startAdminPair starts a toolsvc whose admin is root and whose other
// principal is bob, each allowed every tool, over one stdio upstream "up";
// it returns a context bounded by defaultTestTimeout, a function putting a
// token on it, and an AdminService client.
func startAdminPair(t *testing.T) (*toolsvcProc, context.Context, func(tok string) context.Context, toolsvcv1.AdminServiceClient) {
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"root": auditRootTok, "bob": auditBobTok}, Admins: []string{"root"},
			Rules: []rule{{Principal: "root"}, {Principal: "bob"}}},
		Servers: servers{"up": goStdio(upstream{PingInterval: "1h", RefreshInterval: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	return p, ctx, as, toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr))
}

// TestAdminActionsAudited: every AdminService action is an operation of the
// core's engine and writes one audit line to the log of the real toolsvc
// process — principal, action, target, the principal acted for when it is
// another's login, outcome — whether it succeeded (root refreshes,
// reconnects and reloads) or was refused (bob, no admin, tries the same,
// and to revoke root's login). The login and logout of a userOAuth server
// with real logins, another principal's included, are in
// TestUserOAuthEndToEnd.
func TestAdminActionsAudited(t *testing.T) {
	t.Parallel()
	p, _, as, admin := startAdminPair(t)

	if _, err := admin.RefreshServer(as(auditRootTok), &toolsvcv1.RefreshServerRequest{Name: "up"}); err != nil {
		t.Fatalf("root RefreshServer: %v", err)
	}
	if _, err := admin.ReconnectServer(as(auditRootTok), &toolsvcv1.ReconnectServerRequest{Name: "up"}); err != nil {
		t.Fatalf("root ReconnectServer: %v", err)
	}
	if _, err := admin.ReloadConfig(as(auditRootTok), &toolsvcv1.ReloadConfigRequest{}); err != nil {
		t.Fatalf("root ReloadConfig: %v", err)
	}
	if _, err := admin.RefreshServer(as(auditRootTok), &toolsvcv1.RefreshServerRequest{Name: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("root RefreshServer of no server = %v, want NOT_FOUND", err)
	}
	if _, err := admin.RefreshServer(as(auditBobTok), &toolsvcv1.RefreshServerRequest{Name: "up"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob RefreshServer = %v, want PERMISSION_DENIED", err)
	}
	if _, err := admin.ReloadConfig(as(auditBobTok), &toolsvcv1.ReloadConfigRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob ReloadConfig = %v, want PERMISSION_DENIED", err)
	}
	if _, err := admin.Logout(as(auditBobTok), &toolsvcv1.LogoutRequest{Server: "up", Principal: "root"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob Logout of root = %v, want PERMISSION_DENIED", err)
	}
	// up stores no logins: root's own Logout is refused after admission.
	if _, err := admin.Logout(as(auditRootTok), &toolsvcv1.LogoutRequest{Server: "up"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("root Logout of up = %v, want INVALID_ARGUMENT (not userOAuth)", err)
	}

	for _, line := range []string{
		`principal=root outcome=ok duration=\S+ action=refresh target=up$`,
		`principal=root outcome=ok duration=\S+ action=reconnect target=up$`,
		`principal=root outcome=ok duration=\S+ action=reload target=config$`,
		`principal=root outcome=NotFound duration=\S+ action=refresh target=nope$`,
		`principal=bob outcome=PermissionDenied duration=\S+ action=refresh target=up$`,
		`principal=bob outcome=PermissionDenied duration=\S+ action=reload target=config$`,
		`principal=bob outcome=PermissionDenied duration=\S+ action=logout target=up for=root$`,
		`principal=root outcome=InvalidArgument duration=\S+ action=logout target=up$`,
	} {
		p.log.waitFor(t, regexp.MustCompile(`msg="admin action" audit=true `+line), 30*time.Second)
	}
}

// TestAdminRuleEveryWire: every wire that runs admin actions (AdminService
// on gRPC, the console's actions on the admin listener) gets them through
// the core's admin rule, so a non-admin is refused identically on each —
// PERMISSION_DENIED with reason PERMISSION_DENIED naming the principal —
// and each refusal writes its own audit line to the real toolsvc's log.
// An admin asking for another principal's login link is refused too (a
// link logs in whoever follows it). Without an auth section a
// non-loopback caller is ADMIN_LOOPBACK_ONLY on both: tests send no
// traffic beyond loopback, so that is core.TestAdminRuleWithoutAuth and
// service.TestAdminLoopbackOnlyWithoutAuth.
func TestAdminRuleEveryWire(t *testing.T) {
	t.Parallel()
	p, ctx, as, admin := startAdminPair(t)
	// Each wire's name for the code: gRPC's, and the console's JSON.
	grpcRefusal := func(err error) (string, string) {
		code := status.Code(err).String()
		if status.Code(err) == codes.PermissionDenied {
			code = "PERMISSION_DENIED"
		}
		return code, errorInfo(t, err).GetReason()
	}
	// console posts an action as tok, with the CSRF token its page would
	// have, and returns the refusal's code name and reason.
	console := func(tok, path, body string) func() (string, string) {
		return func() (string, string) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.adminAddr+"/ui/api/me", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			var me struct{ CSRF string }
			getJSON(t, req, &me)
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.adminAddr+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("X-Toolsvc-CSRF", me.CSRF)
			req.Header.Set("Content-Type", "application/json")
			var refusal struct{ Code, Reason string }
			getJSON(t, req, &refusal)
			return refusal.Code, refusal.Reason
		}
	}
	for _, tc := range []struct {
		wire, what string
		do         func() (code, reason string)
		audit      string
	}{
		{"grpc", "bob RefreshServer", func() (string, string) {
			_, err := admin.RefreshServer(as(auditBobTok), &toolsvcv1.RefreshServerRequest{Name: "up"})
			return grpcRefusal(err)
		}, `principal=bob outcome=PermissionDenied duration=\S+ action=refresh target=up$`},
		{"grpc", "bob ReconnectServer", func() (string, string) {
			_, err := admin.ReconnectServer(as(auditBobTok), &toolsvcv1.ReconnectServerRequest{Name: "up"})
			return grpcRefusal(err)
		}, `principal=bob outcome=PermissionDenied duration=\S+ action=reconnect target=up$`},
		{"grpc", "bob ReloadConfig", func() (string, string) {
			_, err := admin.ReloadConfig(as(auditBobTok), &toolsvcv1.ReloadConfigRequest{})
			return grpcRefusal(err)
		}, `principal=bob outcome=PermissionDenied duration=\S+ action=reload target=config$`},
		{"grpc", "bob Logout of root", func() (string, string) {
			_, err := admin.Logout(as(auditBobTok), &toolsvcv1.LogoutRequest{Server: "up", Principal: "root"})
			return grpcRefusal(err)
		}, `principal=bob outcome=PermissionDenied duration=\S+ action=logout target=up for=root$`},
		{"grpc", "root Login for bob", func() (string, string) {
			_, err := admin.Login(as(auditRootTok), &toolsvcv1.LoginRequest{Server: "up", Principal: "bob"})
			return grpcRefusal(err)
		}, `principal=root outcome=PermissionDenied duration=\S+ action=login target=up for=bob$`},
		{"console", "bob refresh", console(auditBobTok, "/ui/api/upstreams/up/refresh", ""),
			`principal=bob outcome=PermissionDenied duration=\S+ action=refresh target=up$`},
		{"console", "bob reconnect", console(auditBobTok, "/ui/api/upstreams/up/reconnect", ""),
			`principal=bob outcome=PermissionDenied duration=\S+ action=reconnect target=up$`},
		{"console", "bob logout of root", console(auditBobTok, "/ui/api/logins/logout", `{"server": "up", "principal": "root"}`),
			`principal=bob outcome=PermissionDenied duration=\S+ action=logout target=up for=root$`},
	} {
		re := regexp.MustCompile(`(?m)msg="admin action" audit=true ` + tc.audit)
		before := len(re.FindAllString(p.log.String(), -1))
		code, reason := tc.do()
		if code != "PERMISSION_DENIED" || reason != "PERMISSION_DENIED" {
			t.Errorf("%s: %s = %s / %s, want PERMISSION_DENIED / PERMISSION_DENIED", tc.wire, tc.what, code, reason)
		}
		eventually(t, 30*time.Second, tc.wire+" "+tc.what+"'s audit line", func() bool {
			return len(re.FindAllString(p.log.String(), -1)) == before+1
		})
	}
}

// getJSON does req and decodes its JSON answer into v, whatever its status.
func getJSON(t *testing.T, req *http.Request, v any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s %s: %s, %v", req.Method, req.URL.Path, resp.Status, err)
	}
}
