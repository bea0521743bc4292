package service

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

const (
	tokA = "tok-generation-a-0123"
	tokB = "tok-generation-b-0123"
)

// authGen is a generation of TestSetAuthAtomic: its token authenticates
// principal "p", whose rule allows only the tools of server prefix.
func authGen(tok, prefix string) core.AuthConfig {
	return core.AuthConfig{
		Authenticator: core.NewAuthenticator(map[string]string{tok: "p"}, nil, false),
		Authorizer:    core.NewAuthorizer([]core.Rule{{Principal: "p", Allow: []string{prefix + "__*"}}}, nil),
		RateLimits:    []core.RateLimit{{Principal: "p", MaxConcurrent: 1000}},
	}
}

// grpcClient serves svc with NewGRPCServer's interceptor chain over
// bufconn.
func grpcClient(t *testing.T, svc *Server) toolsvcv1.ToolServiceClient {
	t.Helper()
	gs, _ := NewGRPCServer(svc, GRPCOptions{StreamWorkers: -1})
	conn := serveBufconn(t, gs)
	t.Cleanup(svc.Shutdown)
	return toolsvcv1.NewToolServiceClient(conn)
}

// TestSetAuthAtomic: while SetAuth flips between two generations (A: token
// a authenticates p, who may use server a's tools; B: token b, server b's),
// concurrent requests through the gRPC interceptor and straight into the
// service are decided under one generation each: a request with token a is
// either refused UNAUTHENTICATED (generation B) or sees and calls server
// a's tools only (A). A request authenticated under one generation and
// authorized under the other would see b's tools, or be refused
// PERMISSION_DENIED.
func TestSetAuthAtomic(t *testing.T) {
	t.Parallel()
	a := authGen(tokA, "a")
	f := newWatchFixture(t, &serverOpts{Authenticator: a.Authenticator, Authorizer: a.Authorizer, RateLimits: a.RateLimits},
		map[string][]string{"a": {"x", "y"}, "b": {"x", "y"}})
	client := grpcClient(t, f.svc)
	gens := map[string]core.AuthConfig{tokA: a, tokB: authGen(tokB, "b")}
	ctx := t.Context()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	check := func(how, tok string, names string, err error) {
		prefix := map[string]string{tokA: "a__", tokB: "b__"}[tok]
		if err != nil {
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s with %s: %v, want OK or UNAUTHENTICATED", how, tok, err)
			}
			return
		}
		for _, n := range strings.Fields(names) {
			if !strings.HasPrefix(n, prefix) {
				t.Errorf("%s with %s returned %s: authenticated under one generation, authorized under the other", how, tok, n)
			}
		}
	}
	for i := range 4 {
		tok := []string{tokA, tokB}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			md := metadata.Pairs("authorization", "Bearer "+tok)
			out, in := metadata.NewOutgoingContext(ctx, md), metadata.NewIncomingContext(ctx, md)
			tool := strings.TrimSuffix(map[string]string{tokA: "a__", tokB: "b__"}[tok], "__") + "__x"
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := client.ListTools(out, &toolsvcv1.ListToolsRequest{})
				check("gRPC ListTools", tok, toolNames(r.GetTools()), err)
				r, err = f.svc.ListTools(in, &toolsvcv1.ListToolsRequest{})
				check("in-process ListTools", tok, toolNames(decodeList(t, r).GetTools()), err)
				_, err = client.CallTool(out, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: `{}`})
				check("gRPC CallTool", tok, "", err)
			}
		}()
	}
	for i := range 200 {
		if err := f.svc.core.SetAuth(gens[[]string{tokB, tokA}[i%2]]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
}

// decodeList decodes an in-process ListTools answer (its wire form rides
// as unknown fields; see Server.ListTools).
func decodeList(t *testing.T, r *toolsvcv1.ListToolsResponse) *toolsvcv1.ListToolsResponse {
	t.Helper()
	if r == nil {
		return nil
	}
	b, err := proto.Marshal(r)
	var out toolsvcv1.ListToolsResponse
	if err == nil {
		err = proto.Unmarshal(b, &out)
	}
	if err != nil {
		t.Error(err) // called from the test's goroutines: no Fatal
	}
	return &out
}

// TestSetAuthRefusesOnOff: SetAuth cannot turn authentication on or off,
// and a refusal changes nothing.
func TestSetAuthRefusesOnOff(t *testing.T) {
	t.Parallel()
	on := newServer(nil, &serverOpts{Authenticator: core.NewAuthenticator(map[string]string{tokA: "p"}, nil, false)})
	before := on.core.CurrentAuth()
	if err := on.core.SetAuth(core.AuthConfig{}); !errors.Is(err, core.ErrAuthOnOff) {
		t.Errorf("SetAuth(off) on an authenticating server = %v, want core.ErrAuthOnOff", err)
	}
	if on.core.CurrentAuth() != before {
		t.Error("a refused SetAuth replaced the auth state")
	}
	off := newServer(nil, nil)
	if err := off.core.SetAuth(authGen(tokA, "a")); !errors.Is(err, core.ErrAuthOnOff) {
		t.Errorf("SetAuth(on) on a server without auth = %v, want core.ErrAuthOnOff", err)
	}
}

// TestWatchFollowsSetAuth: an open watch stream moves to the view its new
// rules give it, the difference as its next event, and ends UNAUTHENTICATED
// when the new state no longer accepts its credentials.
func TestWatchFollowsSetAuth(t *testing.T) {
	t.Parallel()
	for _, withResources := range []bool{false, true} { // a tool view, and one with a resource part
		t.Run(fmt.Sprintf("include_resources=%v", withResources), func(t *testing.T) { testWatchFollowsSetAuth(t, withResources) })
	}
}

func testWatchFollowsSetAuth(t *testing.T, withResources bool) {
	a := authGen(tokA, "a")
	f := newWatchFixture(t, &serverOpts{Authenticator: a.Authenticator, Authorizer: a.Authorizer},
		map[string][]string{"a": {"x", "y"}, "b": {"x"}})
	client := grpcClient(t, f.svc)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tokA)
	stream, err := client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{IncludeResources: withResources})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := stream.Recv()
	if err != nil || toolNames(ev.GetSnapshot().GetTools()) != "a__x a__y " {
		t.Fatalf("first event = %v, %v; want a snapshot of a__x a__y", ev, err)
	}
	narrowed := a
	narrowed.Authorizer = core.NewAuthorizer([]core.Rule{{Principal: "p", Allow: []string{"a__x", "b__*"}}}, nil)
	if err := f.svc.core.SetAuth(narrowed); err != nil {
		t.Fatal(err)
	}
	ev, err = stream.Recv()
	if err != nil || strings.Join(ev.GetChanges().GetRemoved(), " ") != "a__y" || toolNames(ev.GetChanges().GetUpserted()) != "b__x " {
		t.Fatalf("after narrowing: %v, %v; want a__y removed and b__x upserted", ev, err)
	}
	if err := f.svc.core.SetAuth(authGen(tokB, "a")); err != nil { // token a removed
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Unauthenticated {
		t.Errorf("after the token was removed: %v, want UNAUTHENTICATED", err)
	}
}

// TestWatchEndsWhenCredentialNamesAnotherPrincipal: a reload that maps a
// watch's token to another principal ends the stream UNAUTHENTICATED; it
// does not carry on as the new principal.
func TestWatchEndsWhenCredentialNamesAnotherPrincipal(t *testing.T) {
	t.Parallel()
	a := authGen(tokA, "a")
	f := newWatchFixture(t, &serverOpts{Authenticator: a.Authenticator, Authorizer: a.Authorizer},
		map[string][]string{"a": {"x"}})
	client := grpcClient(t, f.svc)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tokA)
	stream, err := client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	other := core.AuthConfig{
		Authenticator: core.NewAuthenticator(map[string]string{tokA: "q"}, nil, false),
		Authorizer:    core.NewAuthorizer([]core.Rule{{Principal: "q", Allow: []string{"*"}}}, nil),
	}
	if err := f.svc.core.SetAuth(other); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("after the token was given to principal q: %v, want UNAUTHENTICATED", err)
	}
}
