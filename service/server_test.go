package service

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/memupstream"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const defaultTestTimeout = 20 * time.Second

type fixture struct {
	upstream *mcp.Server
	bridge   *mcpbridge.Bridge
	svc      *Server
	client   toolsvcv1.ToolServiceClient
}

// newFixture runs a real go-sdk upstream with n numbered tools (plus echo)
// over in-memory transports, a bridge, and the service over bufconn, on
// the gRPC server the binary serves on (NewGRPCServer: its codec,
// interceptor chain, recovery and limits), so that the tests pass through
// all of them.
func newFixture(t testing.TB, n int) *fixture {
	return newFixtureWith(t, n, GRPCOptions{})
}

// newFixtureWith is newFixture with the server's options.
func newFixtureWith(t testing.TB, n int, o GRPCOptions) *fixture {
	t.Helper()
	u := memupstream.New(t, n)
	svc := newServer(u.Bridge, &serverOpts{ProgressInterval: 200 * time.Millisecond})
	gs, _ := NewGRPCServer(svc, o)
	conn := serveBufconn(t, gs)
	t.Cleanup(svc.Shutdown) // before it stops: watch streams end first
	return &fixture{upstream: u.Server, bridge: u.Bridge, svc: svc, client: toolsvcv1.NewToolServiceClient(conn)}
}

// serveBufconn serves gs over an in-memory listener and returns a client
// connection to it. Cleanup closes the connection, stops gs and waits for
// Serve to return; cleanups the caller registered before the call run
// after that (t.Cleanup is last-in first-out), those registered after it
// run before.
func serveBufconn(tb testing.TB, gs *grpc.Server) *grpc.ClientConn {
	tb.Helper()
	lis := bufconn.Listen(1 << 20)
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		gs.Stop()
		<-served
	})
	return conn
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// wantInvalid checks for INVALID_ARGUMENT naming field in BadRequest.
func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("error = %v, want InvalidArgument", err)
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return
				}
			}
		}
	}
	t.Fatalf("error %v has no BadRequest field violation for %q", err, field)
}

func TestListToolsPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 250)
	ctx := ctxT(t)
	first, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.GetTools()) != 100 || first.GetNextPageToken() == "" {
		t.Fatalf("first page: %d tools, token %q; want 100 and a token", len(first.GetTools()), first.GetNextPageToken())
	}
	// The catalog changes between pages: the listing stays on its snapshot.
	f.upstream.AddTool(&mcp.Tool{Name: "a_new_first", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	sub := f.bridge.Catalog().Subscribe()
	defer sub.Close()
	for f.bridge.Catalog().Current().Revision == first.GetRevision() {
		select {
		case <-sub.C():
		case <-ctx.Done():
			t.Fatal("catalog did not change")
		}
	}
	all := first.GetTools()
	tok := first.GetNextPageToken()
	for tok != "" {
		resp, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 100, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetRevision() != first.GetRevision() {
			t.Fatalf("page revision %s, want the first page's %s", resp.GetRevision(), first.GetRevision())
		}
		all = append(all, resp.GetTools()...)
		tok = resp.GetNextPageToken()
	}
	if len(all) != 251 { // 250 + echo, without the new tool
		t.Fatalf("listing has %d tools, want 251", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].GetName() >= all[i].GetName() {
			t.Fatalf("not sorted or duplicated at %d: %s, %s", i, all[i-1].GetName(), all[i].GetName())
		}
	}
	// A fresh listing sees the new revision.
	fresh, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1})
	if err != nil || fresh.GetRevision() == first.GetRevision() || fresh.GetTools()[0].GetName() != "mem__a_new_first" {
		t.Fatalf("fresh listing = %v, %v", fresh, err)
	}
}

func TestListToolsBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	ctx := ctxT(t)
	rev := f.bridge.Catalog().Current().Revision
	_, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageToken: "not a token"})
	wantInvalid(t, err, "page_token")
	_, err = f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageToken: base64.RawURLEncoding.EncodeToString([]byte("p1:0123456789abcdef0123456789abcdef:x"))})
	wantInvalid(t, err, "page_token")
	_, err = f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: -1})
	wantInvalid(t, err, "page_size")
	if f.bridge.Catalog().Current().Revision != rev {
		t.Fatal("bad input changed the catalog")
	}
	big, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1 << 30})
	if err != nil || len(big.GetTools()) != 4 {
		t.Fatalf("huge page_size = %v, %v; want all 4 tools", big, err)
	}
}

func TestCallTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	ctx := ctxT(t)
	args, _ := structpb.NewStruct(map[string]any{"text": "hello"})
	res, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__echo", Arguments: args})
	if err != nil || res.GetContent()[0].GetText().GetText() != "hello" {
		t.Fatalf("CallTool(echo) = %v, %v", res, err)
	}
	res, err = f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__echo", ArgumentsJson: `{"text": "json"}`})
	if err != nil || res.GetContent()[0].GetText().GetText() != "json" {
		t.Fatalf("CallTool(echo, arguments_json) = %v, %v", res, err)
	}

	_, err = f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__nope"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("unknown tool: %v, want NotFound", err)
	}
	_, err = f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{})
	wantInvalid(t, err, "name")
	for _, bad := range []string{`[1]`, `"s"`, `null`, `{`, `3`} {
		_, err = f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__echo", ArgumentsJson: bad})
		wantInvalid(t, err, "arguments_json")
	}
	_, err = f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__echo", Arguments: args, ArgumentsJson: `{}`})
	wantInvalid(t, err, "arguments_json")
}

func TestWatchCatalog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	ctx := ctxT(t)
	recv := func(s grpc.ServerStreamingClient[toolsvcv1.WatchCatalogResponse]) *toolsvcv1.WatchCatalogResponse {
		t.Helper()
		ev, err := s.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		return ev
	}
	s1, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	snap := recv(s1)
	if snap.GetSnapshot() == nil || snap.GetSnapshot().GetReset_() || len(snap.GetSnapshot().GetTools()) != 3 {
		t.Fatalf("first event = %v, want a 3-tool snapshot", snap)
	}
	rev0 := snap.GetRevision()

	f.upstream.RemoveTools("t0000")
	ch := recv(s1)
	for ch.GetProgress() != nil && ch.GetRevision() == rev0 { // idle progress before the refresh lands (a loaded box)
		ch = recv(s1)
	}
	if ch.GetChanges() == nil || len(ch.GetChanges().GetRemoved()) != 1 || ch.GetChanges().GetRemoved()[0] != "mem__t0000" {
		t.Fatalf("change event = %v, want removal of mem__t0000", ch)
	}
	rev1 := ch.GetRevision()

	// Resume from the current revision: synced.
	s2, _ := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{ResumeToken: rev1})
	if ev := recv(s2); ev.GetSynced() == nil || ev.GetRevision() != rev1 {
		t.Fatalf("resume at current = %v, want synced at %s", ev, rev1)
	}
	// Resume from a known older revision: just the changes.
	s3, _ := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{ResumeToken: rev0})
	if ev := recv(s3); ev.GetChanges() == nil || ev.GetRevision() != rev1 || len(ev.GetChanges().GetRemoved()) != 1 {
		t.Fatalf("resume at known = %v, want the removal", ev)
	}
	// Unknown or malformed: reset snapshot, never an error.
	for _, tok := range []string{"0123456789abcdef0123456789abcdef", "garbage!"} {
		s4, _ := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{ResumeToken: tok})
		if ev := recv(s4); ev.GetSnapshot() == nil || !ev.GetSnapshot().GetReset_() {
			t.Fatalf("resume at %q = %v, want a reset snapshot", tok, ev)
		}
	}
	// Idle: progress with the current revision.
	if ev := recv(s2); ev.GetProgress() == nil || ev.GetRevision() != rev1 {
		t.Fatalf("idle event = %v, want progress at %s", ev, rev1)
	}
	// Shutdown ends streams with UNAVAILABLE.
	f.svc.Shutdown()
	for {
		if _, err := s1.Recv(); err != nil {
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("after Shutdown: %v, want Unavailable", err)
			}
			break
		}
	}
}

func TestToStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want codes.Code
	}{
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{fmt.Errorf("x: %w", context.Canceled), codes.Canceled},
		{fmt.Errorf("%w: %q", mcpbridge.ErrToolNotFound, "x"), codes.NotFound},
		{mcpbridge.ErrServerNotFound, codes.NotFound},
		{mcpbridge.ErrInvalidArguments, codes.InvalidArgument},
		{fmt.Errorf("%w: down", mcpbridge.ErrUnavailable), codes.Unavailable},
		{mcpbridge.ErrClosed, codes.Unavailable},
		{&mcpbridge.UpstreamError{Code: -32602, Message: "bad"}, codes.InvalidArgument},
		{&mcpbridge.UpstreamError{Code: -32601, Message: "no"}, codes.Unimplemented},
		{&mcpbridge.UpstreamError{Code: -32000, Message: "boom"}, codes.Internal},
		{errors.New("Post http://secret-host/mcp?token=abc: EOF"), codes.Internal},
	}
	for _, tt := range tests {
		got := status.Convert(toStatus(tt.err))
		if got.Code() != tt.want {
			t.Errorf("toStatus(%v) = %v, want %v", tt.err, got.Code(), tt.want)
		}
	}
	if msg := status.Convert(toStatus(errors.New("Post http://secret-host/mcp?token=abc: EOF"))).Message(); msg != "internal error" {
		t.Errorf("unknown error leaked as %q", msg)
	}
}

// TestListToolsPagesFitTheResponseLimit: a page holds page_size tools or as
// many as fit in the response limit, whichever is fewer, so a client with
// the limit as its receive limit can page any catalog; following
// next_page_token returns every tool exactly once.
func TestListToolsPagesFitTheResponseLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 600)
	const limit = 16 << 10
	svc := newServer(f.bridge, &serverOpts{MaxResponseBytes: limit})
	t.Cleanup(svc.Shutdown)
	seen := map[string]int{}
	token, pages := "", 0
	for {
		res, err := svc.ListTools(ctxT(t), &toolsvcv1.ListToolsRequest{PageSize: 1000, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		wire, err := proto.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if len(wire) > limit {
			t.Fatalf("page %d is %d bytes, over the %d-byte response limit", pages, len(wire), limit)
		}
		var page toolsvcv1.ListToolsResponse
		if err := proto.Unmarshal(wire, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.GetTools()) == 0 {
			t.Fatalf("page %d is empty", pages)
		}
		for _, tool := range page.GetTools() {
			seen[tool.GetName()]++
		}
		pages++
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(seen) != 601 || pages < 2 {
		t.Fatalf("%d distinct tools in %d pages, want 601 in several", len(seen), pages)
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", name, n)
		}
	}
}
