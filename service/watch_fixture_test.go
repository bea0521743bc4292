package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// memServer is a real go-sdk upstream reached over in-memory transports.
// setDown kills its sessions and refuses new ones, so the bridge marks its
// tools unavailable until setDown(false).
type memServer struct {
	name string
	srv  *mcp.Server

	mu    sync.Mutex
	down  bool
	ss    []*mcp.ServerSession
	tools map[string]string // name -> description, as the upstream has them
}

func newMemServer(name string) *memServer { return newMemServerWith(name, false) }

// newMemServerWith is newMemServer whose upstream also declares resources
// and prompts (withResources), so that the bridge lists them.
func newMemServerWith(name string, withResources bool) *memServer {
	// The capabilities are declared explicitly: the go-sdk infers them
	// from what is registered at initialize time, and the bridge does not
	// list a kind on a session whose upstream had none then.
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	if withResources {
		caps.Resources = &mcp.ResourceCapabilities{ListChanged: true}
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{Capabilities: caps})
	return &memServer{name: name, srv: srv, tools: map[string]string{}}
}

// putResource adds a resource or replaces its description.
func (m *memServer) putResource(uri, desc string) {
	m.srv.AddResource(&mcp.Resource{URI: uri, Name: uri, Description: desc}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: desc}}}, nil
	})
}

// putPrompt adds a prompt or replaces its description.
func (m *memServer) putPrompt(name, desc string) {
	m.srv.AddPrompt(&mcp.Prompt{Name: name, Description: desc}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
}

func noop(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

// put adds a tool or replaces its description (an update).
func (m *memServer) put(name, desc string) {
	m.mu.Lock()
	m.tools[name] = desc
	m.mu.Unlock()
	m.srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: map[string]any{"type": "object"}}, noop)
}

func (m *memServer) remove(name string) {
	m.mu.Lock()
	delete(m.tools, name)
	m.mu.Unlock()
	m.srv.RemoveTools(name)
}

func (m *memServer) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.tools {
		out = append(out, n)
	}
	return out
}

func (m *memServer) setDown(down bool) {
	m.mu.Lock()
	m.down = down
	var ss []*mcp.ServerSession
	if down {
		ss, m.ss = m.ss, nil
	}
	m.mu.Unlock()
	for _, s := range ss {
		_ = s.Close()
	}
}

func (m *memServer) isDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.down
}

func (m *memServer) config() mcpbridge.ServerConfig {
	return mcpbridge.ServerConfig{
		Name:            m.name,
		BackoffBase:     5 * time.Millisecond,
		BackoffMax:      20 * time.Millisecond,
		RefreshDebounce: 5 * time.Millisecond,
		RefreshMaxDelay: 50 * time.Millisecond,
		RefreshInterval: -1, // pushes only
		NewTransport: func() (mcp.Transport, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.down {
				return nil, errors.New("upstream down")
			}
			ct, st := mcp.NewInMemoryTransports()
			ss, err := m.srv.Connect(context.Background(), st, nil)
			if err != nil {
				return nil, err
			}
			m.ss = append(m.ss, ss)
			return ct, nil
		},
	}
}

func (m *memServer) closeAll() { m.setDown(true) }

type watchFixture struct {
	servers map[string]*memServer
	bridge  *mcpbridge.Bridge
	svc     *Server
	client  toolsvcv1.ToolServiceClient
}

// newWatchFixture runs one real go-sdk upstream per entry of servers (with
// the given tool names), a bridge, and the service over bufconn.
func newWatchFixture(tb testing.TB, opts *serverOpts, servers map[string][]string) *watchFixture {
	tb.Helper()
	return newWatchFixtureWith(tb, opts, servers, false)
}

// newWatchFixtureWith is newWatchFixture whose upstreams also declare
// resources and prompts (withResources; add them with putResource and
// putPrompt).
func newWatchFixtureWith(tb testing.TB, opts *serverOpts, servers map[string][]string, withResources bool) *watchFixture {
	tb.Helper()
	f := &watchFixture{servers: map[string]*memServer{}}
	var cfgs []mcpbridge.ServerConfig
	for name, tools := range servers {
		m := newMemServerWith(name, withResources)
		for _, tl := range tools {
			m.put(tl, "v0")
		}
		f.servers[name] = m
		cfgs = append(cfgs, m.config())
	}
	b, err := mcpbridge.New(mcpbridge.Config{Servers: cfgs})
	if err != nil {
		tb.Fatal(err)
	}
	<-b.Ready()
	f.bridge = b
	f.svc = newServer(b, opts)
	tb.Cleanup(func() { // after the server has stopped
		f.svc.Wait() // every watch message in flight has been sent or failed
		b.Close()
		for _, m := range f.servers {
			m.closeAll()
		}
	})
	// Stop (serveBufconn's cleanup) returns once every handler has
	// (ServerOptions; TestStopWaitsForWatchHandlers): a WatchCatalog handler
	// still starting its first pump would otherwise add to the sends the
	// cleanup above waits for, while it waits.
	gs := grpc.NewServer(f.svc.ServerOptions()...)
	f.svc.Register(gs)
	conn := serveBufconn(tb, gs)
	tb.Cleanup(f.svc.Shutdown) // before it stops: watch streams end first
	f.client = toolsvcv1.NewToolServiceClient(conn)
	return f
}

// waitCatalog waits until cond holds for the current snapshot.
func (f *watchFixture) waitCatalog(tb testing.TB, what string, cond func(*mcpbridge.Snapshot) bool) *mcpbridge.Snapshot {
	tb.Helper()
	cat := f.bridge.Catalog()
	sub := cat.Subscribe()
	defer sub.Close()
	deadline := time.After(defaultTestTimeout)
	for {
		if s := cat.Current(); cond(s) {
			return s
		}
		select {
		case <-sub.C():
		case <-deadline:
			var b strings.Builder
			for _, t := range cat.Current().Tools {
				fmt.Fprintf(&b, "\n  %s %q available=%v", t.Name, t.Description, t.Available)
			}
			for name, m := range f.servers {
				m.mu.Lock()
				fmt.Fprintf(&b, "\n  upstream %s down=%v sessions=%d tools=%v", name, m.down, len(m.ss), m.tools)
				m.mu.Unlock()
			}
			for _, st := range f.bridge.Servers() {
				fmt.Fprintf(&b, "\n  status %+v", st)
			}
			tb.Fatalf("timed out waiting for %s; catalog:%s", what, b.String())
		}
	}
}

// matchesUpstreams reports whether s holds exactly the upstreams' tools,
// all available.
func (f *watchFixture) matchesUpstreams(s *mcpbridge.Snapshot) bool {
	n := 0
	for name, m := range f.servers {
		m.mu.Lock()
		tools := make(map[string]string, len(m.tools))
		for k, v := range m.tools {
			tools[k] = v
		}
		m.mu.Unlock()
		n += len(tools)
		for tn, desc := range tools {
			t, ok := s.Lookup(mcpbridge.ServerPrefix(name) + "__" + tn)
			if !ok || t.Description != desc || !t.Available {
				return false
			}
		}
	}
	return len(s.Tools) == n
}

func toolNames(ts []*toolsvcv1.Tool) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.GetName() + " ")
	}
	return b.String()
}

// waitResources waits until cond holds for the current resource snapshot.
func (f *watchFixture) waitResources(tb testing.TB, what string, cond func(*mcpbridge.ResourceSnapshot) bool) *mcpbridge.ResourceSnapshot {
	tb.Helper()
	rcat := f.bridge.Resources()
	sub := rcat.Subscribe()
	defer sub.Close()
	deadline := time.After(defaultTestTimeout)
	for {
		if s := rcat.Current(); cond(s) {
			return s
		}
		select {
		case <-sub.C():
		case <-deadline:
			tb.Fatalf("timed out waiting for %s; resources %d, templates %d, prompts %d", what,
				len(rcat.Current().Resources), len(rcat.Current().Templates), len(rcat.Current().Prompts))
		}
	}
}
