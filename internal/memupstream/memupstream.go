// Package memupstream is a test helper: a real go-sdk MCP server reached
// by a bridge over in-memory transports, for the unit tests of the
// packages above the bridge (service, service/core, service/mcpfront).
// End-to-end tests use real processes (tests/).
package memupstream

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Upstream is the go-sdk server "mem" and a ready bridge to it.
type Upstream struct {
	Server *mcp.Server
	Bridge *mcpbridge.Bridge

	mu       sync.Mutex
	sessions []*mcp.ServerSession
}

// New starts an upstream with n tools named t0000, t0001, … (no
// arguments, empty results) and echo ({"text"} back as text), and a bridge
// to it that is ready. Cleanup closes the bridge, then the sessions.
func New(tb testing.TB, n int) *Upstream {
	tb.Helper()
	u := &Upstream{Server: mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)}
	for i := range n {
		u.Server.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%04d", i), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	mcp.AddTool(u.Server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	b, err := mcpbridge.New(mcpbridge.Config{Servers: []mcpbridge.ServerConfig{{
		Name: "mem",
		NewTransport: func() (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := u.Server.Connect(context.Background(), st, nil)
			u.mu.Lock()
			u.sessions = append(u.sessions, ss)
			u.mu.Unlock()
			return ct, err
		},
	}}})
	if err != nil {
		tb.Fatal(err)
	}
	<-b.Ready()
	u.Bridge = b
	tb.Cleanup(u.close)
	return u
}

func (u *Upstream) close() {
	u.Bridge.Close()
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, ss := range u.sessions {
		if ss != nil {
			ss.Close()
		}
	}
}
