package mcpbridge

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// orderTap records, in the order the taps were shown them, the progress
// notifications and the tools/call responses a session read, and for each
// response whether it was read on go-sdk's reader goroutine (jsonrpc2's
// readIncoming on the stack). hold, when set, is called for the first
// progress notification, on the goroutine that read it.
type orderTap struct {
	noTap
	mu        sync.Mutex
	calls     map[jsonrpc.ID]bool // tools/call requests written
	seen      []string            // "progress" or "response <id>", in tap order
	onReader  int                 // tools/call responses read on go-sdk's reader
	onCaller  int                 // tools/call responses read on the goroutine of a CallTool
	responses map[jsonrpc.ID]int  // tools/call responses shown, by id
	hold      func()
	held      bool
}

func newOrderTap() *orderTap {
	return &orderTap{calls: map[jsonrpc.ID]bool{}, responses: map[jsonrpc.ID]int{}}
}

func (o *orderTap) wrote(_ context.Context, m jsonrpc.Message) jsonrpc.Message {
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "tools/call" {
		o.mu.Lock()
		o.calls[r.ID] = true
		o.mu.Unlock()
	}
	return nil
}

func (o *orderTap) read(m jsonrpc.Message, _ *msgOrigin) {
	switch m := m.(type) {
	case *jsonrpc.Request:
		if m.Method != "notifications/progress" {
			return
		}
		o.mu.Lock()
		o.seen = append(o.seen, "progress")
		hold := o.hold != nil && !o.held
		o.held = true
		o.mu.Unlock()
		if hold {
			o.hold()
		}
	case *jsonrpc.Response:
		buf := make([]byte, 64<<10)
		stack := string(buf[:runtime.Stack(buf, false)])
		onReader := strings.Contains(stack, "jsonrpc2.(*Connection).readIncoming")
		onCaller := strings.Contains(stack, "mcp.(*ClientSession).CallTool")
		o.mu.Lock()
		defer o.mu.Unlock()
		if !o.calls[m.ID] {
			return
		}
		o.seen = append(o.seen, fmt.Sprintf("response %v", m.ID.Raw()))
		o.responses[m.ID]++
		if onReader {
			o.onReader++
		}
		if onCaller {
			o.onCaller++
		}
	}
}

// progressServer is a go-sdk server whose tool "steps" sends n progress
// notifications for its request (on the request's own stream) before it
// answers.
func progressServer(n int) *mcp.Server {
	s := goSDKServer()
	mcp.AddTool(s, &mcp.Tool{Name: "steps"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		for i := range n {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(),
				Progress: float64(i + 1), Total: float64(n)}); err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	return s
}

// grabConn is a transport that keeps the connection it made (a test
// looks into its queue); the connection itself is returned, so the taps
// wrap it as they wrap the bridge's.
type grabConn struct {
	*streamableTransport
	mu sync.Mutex
	c  *streamConn
}

func (g *grabConn) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := g.streamableTransport.Connect(ctx)
	g.mu.Lock()
	g.c, _ = c.(*streamConn)
	g.mu.Unlock()
	return c, err
}

func (g *grabConn) queued() int {
	g.mu.Lock()
	c := g.c
	g.mu.Unlock()
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return len(c.queue)
}

// TestResponseSkipsGoSDKReader: against a real go-sdk server over
// loopback HTTP, a tools/call response, whether the server answers with
// one JSON body or an SSE stream, is read on the caller's own goroutine
// (the one that wrote the call) and handed to its waiting call there, not
// through go-sdk's reader goroutine; the taps see each response exactly
// once. (Before, every response went through the reader, and an SSE
// answer was read by a goroutine of its own.)
func TestResponseSkipsGoSDKReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		json bool
	}{{"sse", false}, {"json", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return progressServer(3) },
				&mcp.StreamableHTTPOptions{JSONResponse: tc.json})
			tp := newOrderTap()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).
				Connect(t.Context(), withTaps(testStreamable(serveHTTP(t, h)), []tap{tp}), sessionOptions(DefaultProtocolVersion))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cs.Close() }()
			const calls = 20
			var wg sync.WaitGroup
			errs := make(chan error, calls)
			for i := range calls {
				wg.Go(func() {
					text := fmt.Sprint("hi ", i)
					res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
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
			tp.mu.Lock()
			defer tp.mu.Unlock()
			if len(tp.calls) != calls || len(tp.responses) != calls {
				t.Fatalf("the tap saw %d calls written and responses to %d, want %d each", len(tp.calls), len(tp.responses), calls)
			}
			for id, n := range tp.responses {
				if n != 1 {
					t.Errorf("response %v shown to the taps %d times, want once", id.Raw(), n)
				}
			}
			// With concurrent calls an answer can find go-sdk's reader busy
			// with another message and take the queue; most must not.
			if tp.onReader > calls/4 || tp.onCaller < calls-calls/4 {
				t.Errorf("of %d responses, %d were handed to their calls by go-sdk's reader goroutine and %d on their callers' goroutines; want most on the callers'", calls, tp.onReader, tp.onCaller)
			}
		})
	}
}

// TestResponseKeepsStreamOrder: progress notifications an upstream sends
// on a call's SSE stream before its response reach the taps and go-sdk's
// dispatch before the response retires the call, as when every message
// went through go-sdk's reader: go-sdk's reader is held inside the taps on
// the first notification until the rest and the response have been read,
// and the response waits for it. (go-sdk guarantees this order: its reader
// dispatches each notification, in order, before it reads the next
// message; handOver keeps it by handing a response over only when the
// reader has nothing read before it.) The progress handler then sees all
// of them before CallTool returns.
func TestResponseKeepsStreamOrder(t *testing.T) {
	t.Parallel()
	const steps = 5
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return progressServer(steps) }, nil)
	gc := &grabConn{streamableTransport: testStreamable(serveHTTP(t, h))}
	tp := newOrderTap()
	released := make(chan struct{})
	tp.hold = func() {
		// The rest of the notifications and the response are read while
		// go-sdk's reader is held here: queued, or (the defect) handed
		// over past it.
		defer close(released)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			tp.mu.Lock()
			answered := len(tp.responses) > 0
			tp.mu.Unlock()
			if answered || gc.queued() >= steps { // steps-1 notifications and the response
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	var mu sync.Mutex
	var progress []float64
	client := mcp.NewClient(&mcp.Implementation{Name: "order", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			mu.Unlock()
		}})
	cs, err := client.Connect(t.Context(), withTaps(gc, []tap{tp}), sessionOptions(DefaultProtocolVersion))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	params := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
	params.SetProgressToken("tok")
	if _, err := cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	<-released
	tp.mu.Lock()
	seen := strings.Join(tp.seen, ", ")
	tp.mu.Unlock()
	want := strings.Repeat("progress, ", steps) + "response "
	if !strings.HasPrefix(seen, want) || strings.Count(seen, "response") != 1 {
		t.Fatalf("the taps saw %s; want %d progress notifications, then the response", seen, steps)
	}
	// go-sdk runs notification handlers in order on one goroutine; all
	// were dispatched before the call returned, so they all arrive.
	eventually(t, "every progress notification handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) >= steps
	})
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != steps {
		t.Fatalf("the progress handler saw %v, want %d notifications", progress, steps)
	}
	for i, p := range progress {
		if p != float64(i+1) {
			t.Fatalf("the progress handler saw %v, want 1..%d in order", progress, steps)
		}
	}
}
