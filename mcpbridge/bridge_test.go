package mcpbridge

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const defaultTestTimeout = 20 * time.Second

// memUpstream is a real go-sdk server reached over in-memory transports; a
// new server session per bridge connect.
type memUpstream struct {
	t      *testing.T
	server *mcp.Server
	mu     sync.Mutex
	ss     []*mcp.ServerSession
}

func newMemUpstream(t *testing.T) *memUpstream {
	s := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("tool failed")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	return &memUpstream{t: t, server: s}
}

func (m *memUpstream) config(name string) ServerConfig {
	return ServerConfig{Name: name, BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		NewTransport: func() (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := m.server.Connect(context.Background(), st, nil)
			if err != nil {
				return nil, err
			}
			m.mu.Lock()
			m.ss = append(m.ss, ss)
			m.mu.Unlock()
			return ct, nil
		}}
}

// killSessions closes the server side of every session, as a dying
// upstream would.
func (m *memUpstream) killSessions() {
	m.mu.Lock()
	ss := m.ss
	m.ss = nil
	m.mu.Unlock()
	for _, s := range ss {
		_ = s.Close()
	}
}

func newTestBridge(t *testing.T, servers ...ServerConfig) *Bridge {
	t.Helper()
	b, err := New(Config{Servers: servers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	select {
	case <-b.Ready():
	case <-time.After(defaultTestTimeout):
		t.Fatal("bridge not ready")
	}
	return b
}

func waitFor(t *testing.T, b *Bridge, what string, cond func(*Snapshot) bool) {
	t.Helper()
	sub := b.Catalog().Subscribe()
	defer sub.Close()
	deadline := time.After(defaultTestTimeout)
	for !cond(b.Catalog().Current()) {
		select {
		case <-sub.C():
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestBridgeListsCallsAndRefreshes(t *testing.T) {
	t.Parallel()
	up := newMemUpstream(t)
	defer up.killSessions()
	b := newTestBridge(t, up.config("mem"))
	if _, ok := b.Catalog().Current().Lookup("mem__echo"); !ok {
		t.Fatalf("catalog = %v, want mem__echo", toolNames(b.Catalog().Current(), "mem"))
	}
	res, err := b.CallTool(t.Context(), "mem__echo", map[string]any{"text": "hi"}, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("CallTool(mem__echo) = %v, %v", res, err)
	}
	// A tool error is a result, not an error.
	res, err = b.CallTool(t.Context(), "mem__fail", nil, nil)
	if err != nil || !res.IsError {
		t.Fatalf("CallTool(mem__fail) = %v, %v; want IsError result", res, err)
	}
	if _, err := b.CallTool(t.Context(), "mem__nope", nil, nil); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("CallTool(unknown) = %v, want ErrToolNotFound", err)
	}
	// list_changed from the upstream refreshes the catalog.
	up.server.AddTool(&mcp.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	waitFor(t, b, "mem__late", func(s *Snapshot) bool { _, ok := s.Lookup("mem__late"); return ok })
	if st, _ := b.Server("mem"); st.ConnectCount != 1 || st.State != StateReady {
		t.Fatalf("status = %+v, want one connect and ready", st)
	}
}

func TestBridgeCallDeadlineAndCancel(t *testing.T) {
	t.Parallel()
	up := newMemUpstream(t)
	defer up.killSessions()
	b := newTestBridge(t, up.config("mem"))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := b.CallTool(ctx, "mem__block", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CallTool past deadline = %v, want DeadlineExceeded", err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := b.CallTool(ctx, "mem__block", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled CallTool = %v, want Canceled", err)
	}
}

func TestBridgeReconnectsAfterSessionDeath(t *testing.T) {
	t.Parallel()
	up := newMemUpstream(t)
	defer up.killSessions()
	b := newTestBridge(t, up.config("mem"))
	up.killSessions()
	waitStatus(t, b, "mem", "reconnect", func(st ServerStatus) bool {
		tl, ok := b.Catalog().Current().Lookup("mem__echo")
		return st.ConnectCount >= 2 && st.State == StateReady && ok && tl.Available
	})
	if _, err := b.CallTool(t.Context(), "mem__echo", map[string]any{"text": "again"}, nil); err != nil {
		t.Fatalf("CallTool after reconnect = %v", err)
	}
}

func TestBridgeRejectsBadConfig(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Servers: []ServerConfig{
		{Name: "a__b", Transport: TransportStdio, Command: "x"},
		{Name: "ok", Transport: TransportStdio},
		{Name: "h", Transport: TransportStreamableHTTP},
	}})
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("New(bad config) = %v, want FieldErrors", err)
	}
	for _, want := range []string{`server "a__b": field "name"`, `server "ok": field "command"`, `server "h": field "url"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestBridgeMaxConcurrentCalls(t *testing.T) {
	t.Parallel()
	up := newMemUpstream(t)
	defer up.killSessions()
	cfg := up.config("mem")
	cfg.MaxConcurrentCalls, cfg.MaxQueuedCalls = 1, 1
	b := newTestBridge(t, cfg)
	u := b.ups["mem"]
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(defaultTestTimeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	blocking := make(chan error, 2)
	go func() { _, err := b.CallTool(ctx, "mem__block", nil, nil); blocking <- err }()
	waitUntil("one call in flight", func() bool { return u.inflight.Load() == 1 })

	// A second caller waits for the slot within its own deadline.
	short, cancelShort := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancelShort()
	if _, err := b.CallTool(short, "mem__echo", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued call past its deadline = %v, want DeadlineExceeded", err)
	}
	// With the one queue place taken, a third caller is refused at once.
	go func() { _, err := b.CallTool(ctx, "mem__block", nil, nil); blocking <- err }()
	waitUntil("a queued call", func() bool { return u.queued.Load() == 1 })
	if _, err := b.CallTool(t.Context(), "mem__echo", nil, nil); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("call with a full queue = %v, want ErrOverloaded", err)
	}
	cancel()
	for i := 0; i < 2; i++ {
		if err := <-blocking; !errors.Is(err, context.Canceled) {
			t.Errorf("blocked call = %v, want Canceled", err)
		}
	}
}

func TestBridgeReconfigure(t *testing.T) {
	t.Parallel()
	a, bb, c := newMemUpstream(t), newMemUpstream(t), newMemUpstream(t)
	defer a.killSessions()
	defer bb.killSessions()
	defer c.killSessions()
	b := newTestBridge(t, a.config("a"), bb.config("b"))
	before := b.Catalog().Current()

	// Invalid: nothing changes.
	if _, err := b.Reconfigure(Config{Servers: []ServerConfig{{Name: "x__y"}}}); err == nil {
		t.Fatal("Reconfigure(invalid) = nil error")
	}
	if b.Catalog().Current() != before {
		t.Fatal("an invalid reconfigure changed the catalog")
	}

	// Remove a, keep b (configs with a transport func always restart;
	// unchanged real configs are covered end to end), add c.
	res, err := b.Reconfigure(Config{Servers: []ServerConfig{bb.config("b"), c.config("c")}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{"a"}) || !slices.Equal(res.Added, []string{"c"}) {
		t.Fatalf("Reconfigure = %+v", res)
	}
	waitFor(t, b, "c's tools and no a's", func(s *Snapshot) bool {
		_, hasA := s.Lookup("a__echo")
		_, hasC := s.Lookup("c__echo")
		return !hasA && hasC
	})
	if _, err := b.CallTool(t.Context(), "a__echo", nil, nil); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("call to a removed server = %v, want ErrToolNotFound", err)
	}
	if _, err := b.CallTool(t.Context(), "c__echo", map[string]any{"text": "x"}, nil); err != nil {
		t.Fatalf("call to an added server = %v", err)
	}
}

func TestBridgeRefreshAndReconnect(t *testing.T) {
	t.Parallel()
	up := newMemUpstream(t)
	defer up.killSessions()
	b := newTestBridge(t, up.config("mem"))
	up.server.AddTool(&mcp.Tool{Name: "quiet", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	if _, err := b.Refresh(t.Context(), "mem"); err != nil {
		t.Fatalf("Refresh = %v", err)
	}
	if _, ok := b.Catalog().Current().Lookup("mem__quiet"); !ok {
		t.Fatal("Refresh did not list the new tool")
	}
	st, err := b.Reconnect(t.Context(), "mem")
	if err != nil || st.ConnectCount != 2 || st.State != StateReady {
		t.Fatalf("Reconnect = %+v, %v; want connect 2, ready", st, err)
	}
	if _, err := b.Refresh(t.Context(), "nope"); !errors.Is(err, ErrServerNotFound) {
		t.Fatalf("Refresh(unknown) = %v", err)
	}
}

// TestResolveThenCallPinsTheEntry: a Target keeps the entry it resolved
// while the catalog moves on, Call dispatches that entry (its server and
// original name), and a Target whose server was removed since fails with
// ErrToolNotFound instead of reaching anything else.
func TestResolveThenCallPinsTheEntry(t *testing.T) {
	t.Parallel()
	up := newMemUpstream(t)
	defer up.killSessions()
	b := newTestBridge(t, up.config("mem"))
	target, err := b.Resolve("mem__echo")
	if err != nil {
		t.Fatal(err)
	}
	if target.Tool.Server != "mem" || target.Tool.OriginalName != "echo" || !target.ValidatesArguments() {
		t.Fatalf("target = %+v", target.Tool)
	}
	old := target.Tool
	mcp.AddTool(up.server, &mcp.Tool{Name: "echo", Description: "changed"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new " + in.Text}}}, nil, nil
	})
	waitFor(t, b, "the changed echo", func(s *Snapshot) bool { e, ok := s.Lookup("mem__echo"); return ok && e.Description == "changed" })
	if target.Tool != old || target.Tool.Description == "changed" {
		t.Fatal("the resolved entry changed under the caller")
	}
	res, err := b.Call(t.Context(), target, map[string]any{"text": "x"}, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "new x" {
		t.Fatalf("Call(resolved entry) = %v, %v", res, err)
	}
	if _, err := b.Reconfigure(Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Call(t.Context(), target, nil, nil); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("Call after the server was removed = %v, want ErrToolNotFound", err)
	}
	if _, err := b.Resolve("mem__echo"); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("Resolve after removal = %v, want ErrToolNotFound", err)
	}
}

// TestRestartingServerIsUnavailable: between a Reconfigure stopping a
// changed server and starting it again, its tools are still in the catalog
// but the server is in no supervisor map. A call then must get UNAVAILABLE
// (retryable), not NOT_FOUND; the soak caught NOT_FOUND there. Once the
// server is removed for good, NOT_FOUND is right.
func TestRestartingServerIsUnavailable(t *testing.T) {
	t.Parallel()
	m := newMemUpstream(t)
	b := newTestBridge(t, m.config("r"))
	waitFor(t, b, "r__echo", func(s *Snapshot) bool { _, ok := s.Lookup("r__echo"); return ok })
	b.mu.Lock()
	u := b.ups["r"]
	delete(b.ups, "r")
	b.restarting = map[string]bool{"r": true}
	b.mu.Unlock()
	_, err := b.Resolve("r__echo")
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Reason != ReasonNoSession {
		t.Fatalf("Resolve while restarting = %v, want UnavailableError{no_session}", err)
	}
	b.mu.Lock()
	delete(b.restarting, "r")
	b.mu.Unlock()
	if _, err := b.Resolve("r__echo"); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("Resolve once removed = %v, want ErrToolNotFound", err)
	}
	b.mu.Lock()
	b.ups["r"] = u // let Close stop its supervisor
	b.mu.Unlock()
}

// TestUnlistedServerToolIsUnavailable: a name under the prefix of a
// configured server that has not listed its tools yet (here: it cannot
// connect at all) is UNAVAILABLE, not NOT_FOUND: it may exist in a moment.
// A name under no server's prefix is NOT_FOUND.
func TestUnlistedServerToolIsUnavailable(t *testing.T) {
	t.Parallel()
	m := newMemUpstream(t)
	down := ServerConfig{Name: "down", BackoffBase: time.Hour, BackoffMax: time.Hour,
		NewTransport: func() (mcp.Transport, error) { return nil, errors.New("no transport") }}
	b := newTestBridge(t, m.config("up"), down)
	_, err := b.Resolve("down__anything")
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Server != "down" || ue.Reason != ReasonNoSession {
		t.Fatalf("Resolve(down__anything) = %v, want UnavailableError{down, no_session}", err)
	}
	if _, err := b.Resolve("up__nope"); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("Resolve(up__nope) = %v, want ErrToolNotFound (up has listed)", err)
	}
	if _, err := b.Resolve("other__x"); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("Resolve(other__x) = %v, want ErrToolNotFound", err)
	}
}

// TestRefusedServersReported: Config.Refused appear in Servers as down with
// their reason, after New and after each Reconfigure, and run nothing.
func TestRefusedServersReported(t *testing.T) {
	b, err := New(Config{Refused: []RefusedServer{{Name: "kubernetes:services/b/x", Reason: "two"}, {Name: "kubernetes:mcpservers/a/y", Reason: "one"}}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer b.Close()
	got := b.Servers()
	if len(got) != 2 || got[0].Name != "kubernetes:mcpservers/a/y" || got[0].State != StateDown || got[0].LastError != "one" || got[1].LastError != "two" {
		t.Fatalf("Servers() = %+v, want the two refused servers sorted, down, with their reasons", got)
	}
	if _, err := b.Server("kubernetes:mcpservers/a/y"); err == nil {
		t.Errorf("Server(refused) = nil error, want not found (a refused server is no upstream)")
	}
	if _, err := b.Reconfigure(Config{}); err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
	if got := b.Servers(); len(got) != 0 {
		t.Errorf("Servers() after a Reconfigure without refusals = %+v, want none", got)
	}
}
