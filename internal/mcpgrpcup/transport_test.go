package mcpgrpcup

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// toolsOnly serves ListTools and CallTool only (the other RPCs are
// UNIMPLEMENTED): echo, big (a text of -big bytes) and block (until the
// call is cancelled).
type toolsOnly struct {
	pb.UnimplementedMcpServer
	big       int
	started   chan struct{}
	cancelled chan struct{}
	auth      chan []string
}

func (s *toolsOnly) ListTools(ctx context.Context, _ *pb.ListToolsRequest) (*pb.ListToolsResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	select {
	case s.auth <- md.Get("authorization"):
	default:
	}
	return &pb.ListToolsResponse{Tools: []*pb.Tool{{Name: "echo"}, {Name: "big"}, {Name: "block"}}, Ttl: durationpb.New(1500 * time.Millisecond),
		CacheScope: pb.CacheScope_CACHE_SCOPE_PRIVATE}, nil
}

func (s *toolsOnly) CallTool(ctx context.Context, req *pb.CallToolRequest) (*pb.CallToolResponse, error) {
	switch req.GetRequest().GetName() {
	case "big":
		return &pb.CallToolResponse{Content: []*pb.CallToolResponse_Content{{Text: &pb.TextContent{Text: strings.Repeat("x", s.big)}}}}, nil
	case "block":
		close(s.started)
		<-ctx.Done()
		close(s.cancelled)
		return nil, ctx.Err()
	}
	t, _ := req.GetRequest().GetArguments().AsMap()["text"].(string)
	return &pb.CallToolResponse{Content: []*pb.CallToolResponse_Content{{Text: &pb.TextContent{Text: t}}}}, nil
}

// serve runs s on a loopback port (a real gRPC server) and returns its
// grpc:// URL and the server.
func serve(t *testing.T, s pb.McpServer) (string, *grpc.Server) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	pb.RegisterMcpServer(gs, s)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return "grpc://" + lis.Addr().String(), gs
}

func connect(t *testing.T, url string, headers map[string]string, maxMessage int) *mcp.ClientSession {
	t.Helper()
	tr, err := Factory(mcpbridge.ServerConfig{Name: "g", Transport: mcpbridge.TransportGRPC, URL: url, Headers: headers}, maxMessage)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: mcpbridge.DefaultProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestSessionOverTheBinding: a go-sdk client session over the transport
// initializes (answered locally, with only the capabilities the upstream
// serves), lists with the upstream's ttl and cache scope, calls, sends the
// configured headers as metadata, and a cancelled call cancels its RPC.
func TestSessionOverTheBinding(t *testing.T) {
	srv := &toolsOnly{started: make(chan struct{}), cancelled: make(chan struct{}), auth: make(chan []string, 1)}
	url, _ := serve(t, srv)
	cs := connect(t, url, map[string]string{"Authorization": "Bearer tok"}, 1<<20)
	ctx := t.Context()

	caps := cs.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Resources != nil || caps.Prompts != nil || caps.Completions != nil {
		t.Errorf("capabilities = %+v, want tools only (the upstream serves no resources or prompts)", caps)
	}
	if got := <-srv.auth; len(got) != 1 || got[0] != "Bearer tok" {
		t.Errorf("authorization metadata = %q", got)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 3 || lt.TTLMs != 1500 || lt.CacheScope != "private" {
		t.Fatalf("ListTools = %+v, %v; want 3 tools, ttlMs 1500, private", lt, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("CallTool(echo) = %+v, %v", res, err)
	}
	_, err = cs.ListResources(ctx, nil)
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("ListResources on an upstream without them = %v, want method not found", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		done <- err
	}()
	<-srv.started // the RPC runs upstream
	cancel()
	if err := <-done; err == nil {
		t.Error("a cancelled call returned no error")
	}
	<-srv.cancelled // go-sdk's notifications/cancelled cancelled the RPC
}

// TestMessageBound: an answer larger than the bridge's message bound is
// refused by the channel (it is never read whole) and the session stays
// usable.
func TestMessageBound(t *testing.T) {
	url, _ := serve(t, &toolsOnly{big: 64 << 10})
	cs := connect(t, url, nil, 16<<10)
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != mcpbridge.MessageTooLarge().Code || we.Message != mcpbridge.MessageTooLarge().Message {
		t.Fatalf("CallTool(big) = %v, want the bridge's message-limit refusal", err)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ok"}}); err != nil {
		t.Fatalf("CallTool after the refusal: %v", err)
	}
}

// TestUpstreamGone: a stopped upstream ends the session (the bridge then
// reconnects with its backoff), and a connect to it fails rather than
// waiting for the first call.
func TestUpstreamGone(t *testing.T) {
	url, gs := serve(t, &toolsOnly{})
	cs := connect(t, url, nil, 1<<20)
	gs.Stop()
	waitCtx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	select {
	case <-ended:
	case <-waitCtx.Done():
		t.Fatal("the session outlived its upstream")
	}
	tr, err := Factory(mcpbridge.ServerConfig{URL: url}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := tr.Connect(waitCtx); err == nil {
		c.Close()
		t.Fatal("Connect to a stopped upstream succeeded")
	}
}

// TestTargets: only grpc:// and grpcs:// host:port targets are accepted.
func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		url, target string
		tls         bool
		ok          bool
	}{
		{"grpc://127.0.0.1:5000", "127.0.0.1:5000", false, true},
		{"grpcs://mcp.example:443", "mcp.example:443", true, true},
		{"grpcs://mcp.example:443/", "mcp.example:443", true, true},
		{"http://mcp.example", "", false, false},
		{"grpc://", "", false, false},
		{"grpc://u:p@h:1", "", false, false},
		{"grpc://h:1/path", "", false, false},
	} {
		target, tlsOn, err := parseTarget(tc.url)
		if (err == nil) != tc.ok || target != tc.target || tlsOn != tc.tls {
			t.Errorf("parseTarget(%q) = %q, %v, %v", tc.url, target, tlsOn, err)
		}
	}
}

// TestStatusTextIsClipped: an upstream's status message reaches errors cut
// to maxStatusText bytes of valid UTF-8.
func TestStatusTextIsClipped(t *testing.T) {
	long := strings.Repeat("é", maxStatusText) + "\xff"
	we := wireError(status.Error(codes.Internal, long))
	if len(we.Message) > maxStatusText+64 || !utf8.ValidString(we.Message) || !strings.HasSuffix(we.Message, "…") {
		t.Errorf("message of %d bytes (valid UTF-8 %v): %.80q", len(we.Message), utf8.ValidString(we.Message), we.Message)
	}
	if we := wireError(status.Error(codes.InvalidArgument, "bad")); we.Code != jsonrpc.CodeInvalidParams || we.Message != "grpc upstream: InvalidArgument: bad" {
		t.Errorf("InvalidArgument = %d %q", we.Code, we.Message)
	}
}

// refusing answers ListTools with the status code it holds (OK: a list).
type refusing struct {
	pb.UnimplementedMcpServer
	code atomic.Uint32
}

func (s *refusing) ListTools(context.Context, *pb.ListToolsRequest) (*pb.ListToolsResponse, error) {
	if c := codes.Code(s.code.Load()); c != codes.OK {
		return nil, status.Error(c, "refused by the test server")
	}
	return &pb.ListToolsResponse{Tools: []*pb.Tool{{Name: "echo"}}}, nil
}

// TestAuthRejected: the transport reports a real server's UNAUTHENTICATED
// or PERMISSION_DENIED answer to the connect probe, or to a list later,
// as a refusal of its credentials (mcpbridge.AuthReporter), and forgets
// it after a list that succeeds; another failure is no refusal.
func TestAuthRejected(t *testing.T) {
	srv := &refusing{}
	url, _ := serve(t, srv)
	tr, err := Factory(mcpbridge.ServerConfig{Name: "g", Transport: mcpbridge.TransportGRPC, URL: url}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	gt := tr.(*Transport)
	for code, want := range map[codes.Code]string{
		codes.Unauthenticated:  "the upstream answered UNAUTHENTICATED",
		codes.PermissionDenied: "the upstream answered PERMISSION_DENIED",
	} {
		srv.code.Store(uint32(code))
		if _, err := gt.Connect(t.Context()); status.Code(errors.Unwrap(err)) != code {
			t.Fatalf("Connect with ListTools refused %v = %v", code, err)
		}
		if got := gt.AuthRejected(); got != want {
			t.Errorf("after a %v probe AuthRejected() = %q, want %q", code, got, want)
		}
	}
	// A session: its probe succeeds, a list later is refused.
	tr2, _ := Factory(mcpbridge.ServerConfig{Name: "g", Transport: mcpbridge.TransportGRPC, URL: url}, 1<<20)
	gt2 := tr2.(*Transport)
	srv.code.Store(uint32(codes.OK))
	cs2, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), gt2, &mcp.ClientSessionOptions{ProtocolVersion: mcpbridge.DefaultProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	if got := gt2.AuthRejected(); got != "" {
		t.Errorf("after a good probe AuthRejected() = %q, want none", got)
	}
	srv.code.Store(uint32(codes.PermissionDenied))
	if _, err := cs2.ListTools(t.Context(), nil); err == nil {
		t.Fatal("a refused list succeeded")
	}
	if got := gt2.AuthRejected(); got != "the upstream answered PERMISSION_DENIED" {
		t.Errorf("after a refused list AuthRejected() = %q", got)
	}
	srv.code.Store(uint32(codes.Unavailable))
	_, _ = cs2.ListTools(t.Context(), nil)
	if got := gt2.AuthRejected(); got != "the upstream answered PERMISSION_DENIED" {
		t.Errorf("an UNAVAILABLE list changed the record to %q", got)
	}
	srv.code.Store(uint32(codes.OK))
	if _, err := cs2.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got := gt2.AuthRejected(); got != "" {
		t.Errorf("after a good list AuthRejected() = %q, want none", got)
	}
}

// stuckHealth is a health service whose Check answers only once released:
// a process that is alive at the TCP level but does not answer.
type stuckHealth struct {
	healthpb.UnimplementedHealthServer
	release chan struct{}
}

func (h *stuckHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	select {
	case <-h.release:
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestPingIsARoundTrip: ping is answered by the upstream, not by the
// channel's state: an upstream without a health service answers
// UNIMPLEMENTED, which proves it alive; one that does not answer fails
// the ping when its context ends (the prober's timeout), and passes it
// once it answers.
func TestPingIsARoundTrip(t *testing.T) {
	url, _ := serve(t, &toolsOnly{})
	if err := connect(t, url, nil, 1<<20).Ping(t.Context(), nil); err != nil {
		t.Errorf("Ping of an upstream without a health service = %v, want nil (UNIMPLEMENTED is an answer)", err)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	pb.RegisterMcpServer(gs, &toolsOnly{})
	h := &stuckHealth{release: make(chan struct{})}
	healthpb.RegisterHealthServer(gs, h)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	cs := connect(t, "grpc://"+lis.Addr().String(), nil, 1<<20)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := cs.Ping(ctx, nil); err == nil {
		t.Error("Ping of an upstream that does not answer succeeded")
	}
	close(h.release)
	if err := cs.Ping(t.Context(), nil); err != nil {
		t.Errorf("Ping once the upstream answers = %v", err)
	}
}
