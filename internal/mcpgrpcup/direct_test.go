package mcpgrpcup

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// countingTransport counts the responses its connection hands go-sdk, by
// way: through Read (go-sdk's reader goroutine) or delivered directly
// (mcp.DirectConnection), which it passes on as the bridge's taps do.
type countingTransport struct {
	mcp.Transport
	read, direct atomic.Int32
}

func (t *countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Connection: c, t: t}, nil
}

type countingConn struct {
	mcp.Connection
	t *countingTransport
}

func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if _, ok := m.(*jsonrpc.Response); ok {
		c.t.read.Add(1)
	}
	return m, err
}

func (c *countingConn) BindResponses(deliver func(*jsonrpc.Response) bool) {
	if d, ok := c.Connection.(mcp.DirectConnection); ok {
		d.BindResponses(func(r *jsonrpc.Response) bool {
			c.t.direct.Add(1)
			return deliver(r)
		})
	}
}

// TestResponsesSkipGoSDKReader: each answer of a real gRPC upstream is
// handed to its waiting call on the goroutine that made the RPC, never
// through go-sdk's reader goroutine (before: every one went through Read),
// for concurrent calls as for the session's initialize and pings; and a
// cancelled call still cancels its RPC and leaves the session usable.
func TestResponsesSkipGoSDKReader(t *testing.T) {
	srv := &toolsOnly{started: make(chan struct{}), cancelled: make(chan struct{}), auth: make(chan []string, 1)}
	url, _ := serve(t, srv)
	gt, err := Factory(mcpbridge.ServerConfig{Name: "g", Transport: mcpbridge.TransportGRPC, URL: url}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ct := &countingTransport{Transport: gt}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: mcpbridge.DefaultProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()

	const calls = 16
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := range calls {
		wg.Go(func() {
			text := fmt.Sprint("hi ", i)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			if err == nil && (len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text) {
				err = fmt.Errorf("echo %q answered %+v", text, res.Content)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// initialize, the calls, the ping
	if r, d := ct.read.Load(), ct.direct.Load(); r != 0 || d != calls+2 {
		t.Fatalf("responses through go-sdk's reader: %d, handed over directly: %d; want 0 and %d", r, d, calls+2)
	}

	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		done <- err
	}()
	<-srv.started
	stop()
	if err := <-done; err == nil {
		t.Error("a cancelled call returned no error")
	}
	<-srv.cancelled
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}}); err != nil {
		t.Fatalf("a call after a cancelled one: %v", err)
	}
	if r := ct.read.Load(); r != 0 {
		t.Fatalf("%d responses went through go-sdk's reader, want 0", r)
	}
}
