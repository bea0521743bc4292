package mcpfront

import (
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsvc/toolsvc/service/core"
)

// TestSetAuthFrontStreams: the MCP front door's long-lived streams follow
// SetAuth. A legacy SSE session's requests run in its GET stream's context;
// they are decided under the current auth state (a narrowed rule refuses
// the next call), and a GET stream whose credential the new state no
// longer accepts ends, on /sse and on /mcp alike.
func TestSetAuthFrontStreams(t *testing.T) {
	t.Parallel()
	gen := func(tokens map[string]string, allow string) core.AuthConfig {
		return core.AuthConfig{Authenticator: core.NewAuthenticator(tokens, nil, false),
			Authorizer: core.NewAuthorizer([]core.Rule{{Principal: "alice", Allow: []string{allow}}}, nil)}
	}
	both := map[string]string{"tok-alice-0123456789": "alice", "tok-bob-0123456789ab": "bob"}
	f := newFixture(t, 1, gen(both, "mem__*"))
	ctx, srv := startPerPrincipalFront(t, f.core)
	client := &http.Client{Transport: bearerTransport("tok-alice-0123456789")}
	mc := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sse, err := mc.Connect(ctx, &mcp.SSEClientTransport{Endpoint: srv.URL + "/sse", HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sse.Close() })
	streamable := connectFront(t, ctx, mc, srv.URL, "tok-alice-0123456789", "2025-11-25")
	echo := func() bool {
		res, err := sse.CallTool(ctx, &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{"text": "x"}})
		return err == nil && !res.IsError
	}
	if !echo() {
		t.Fatal("SSE call of mem__echo refused before any reload")
	}
	if err := f.core.SetAuth(gen(both, "mem__t*")); err != nil {
		t.Fatal(err)
	}
	if echo() {
		t.Error("SSE call of mem__echo allowed after SetAuth narrowed alice's rule to mem__t*")
	}
	if err := f.core.SetAuth(gen(map[string]string{"tok-bob-0123456789ab": "bob"}, "mem__*")); err != nil {
		t.Fatal(err)
	}
	for name, cs := range map[string]*mcp.ClientSession{"/sse": sse} {
		ended := make(chan struct{})
		go func() { _ = cs.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Errorf("%s session still open 5s after alice's token was removed", name)
			_ = cs.Close()
			<-ended
		}
	}
	if _, err := streamable.ListTools(ctx, nil); err == nil {
		t.Error("/mcp tools/list with a removed token succeeded")
	}
}
