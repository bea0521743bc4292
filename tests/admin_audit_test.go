package tests

import (
	"context"
	"regexp"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

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
	const rootTok, bobTok = "audit-root-0123456789", "audit-bob-0123456789"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"root": rootTok, "bob": bobTok}, Admins: []string{"root"},
			Rules: []rule{{Principal: "root"}, {Principal: "bob"}}},
		Servers: servers{"up": goStdio(upstream{PingInterval: "1h", RefreshInterval: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	admin := toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr))

	if _, err := admin.RefreshServer(as(rootTok), &toolsvcv1.RefreshServerRequest{Name: "up"}); err != nil {
		t.Fatalf("root RefreshServer: %v", err)
	}
	if _, err := admin.ReconnectServer(as(rootTok), &toolsvcv1.ReconnectServerRequest{Name: "up"}); err != nil {
		t.Fatalf("root ReconnectServer: %v", err)
	}
	if _, err := admin.ReloadConfig(as(rootTok), &toolsvcv1.ReloadConfigRequest{}); err != nil {
		t.Fatalf("root ReloadConfig: %v", err)
	}
	if _, err := admin.RefreshServer(as(rootTok), &toolsvcv1.RefreshServerRequest{Name: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("root RefreshServer of no server = %v, want NOT_FOUND", err)
	}
	if _, err := admin.RefreshServer(as(bobTok), &toolsvcv1.RefreshServerRequest{Name: "up"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob RefreshServer = %v, want PERMISSION_DENIED", err)
	}
	if _, err := admin.ReloadConfig(as(bobTok), &toolsvcv1.ReloadConfigRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob ReloadConfig = %v, want PERMISSION_DENIED", err)
	}
	if _, err := admin.Logout(as(bobTok), &toolsvcv1.LogoutRequest{Server: "up", Principal: "root"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob Logout of root = %v, want PERMISSION_DENIED", err)
	}
	// up stores no logins: root's own Logout is refused after admission.
	if _, err := admin.Logout(as(rootTok), &toolsvcv1.LogoutRequest{Server: "up"}); status.Code(err) != codes.InvalidArgument {
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
