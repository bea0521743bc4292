package tests

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/authtest"
)

// TestPerUserSubscribeUnsupported: a per-user upstream (tokenExchange; the
// go-sdk test server with resources but without resources.subscribe, a
// real process behind a real authorization server) answers a caller's
// SubscribeResource with FAILED_PRECONDITION SUBSCRIPTIONS_UNSUPPORTED,
// as a shared upstream does: on the caller's first request, which opens
// the caller's own session, and on the next, which finds it. Reads go
// through that same session.
func TestPerUserSubscribeUnsupported(t *testing.T) {
	t.Parallel() // its own toolsvc, upstream and authorization server
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver")), procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	cmd := exec.Command(bin.testserver, "-mode", "http", "-auth-issuer", issuer, "-auth-audience", "urn:test:upstream")
	cmd.Env = append(os.Environ(), "TESTSERVER_RESOURCES_FILE="+resourcesModeFile(t, "resources"))
	up := startProc(t, cmd).log.waitFor(t, urlLineRE, 30*time.Second)
	p := startToolsvc(t, cfg{
		Auth: &authCfg{JWT: &jwtCfg{JWKSURL: jwksURI(t, issuer), Issuer: issuer, Audience: "toolsvc"}},
		Servers: servers{"up": goHTTP(up, upstream{PingInterval: "1h", Credentials: &credsCfg{Mode: "tokenExchange",
			Issuer: issuer, ClientID: authToolsvc.ID, ClientSecret: authToolsvc.Secret, Audience: "urn:test:upstream"}})}})
	tok, err := authtest.Login(ctx, issuer, authAgent, "alice")
	if err != nil {
		t.Fatal(err)
	}
	alice := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok.AccessToken)
	for _, round := range []string{"first (no session of alice's yet)", "second (alice's session open)"} {
		st, err := p.client.SubscribeResource(alice, &toolsvcv1.SubscribeResourceRequest{Server: "up", Uri: "test://hello"})
		if err == nil {
			_, err = st.Recv()
		}
		t.Logf("%s subscription: %v", round, err)
		wantStatus(t, err, codes.FailedPrecondition, "SUBSCRIPTIONS_UNSUPPORTED", "up", "")
	}
	res, err := p.client.ReadResource(alice, &toolsvcv1.ReadResourceRequest{Server: "up", Uri: "test://hello"})
	if err != nil || len(res.GetContents()) != 1 || !strings.HasPrefix(res.GetContents()[0].GetText(), "hello from go") {
		t.Fatalf("ReadResource as alice = %v, %v; want hello from go", res, err)
	}
}
