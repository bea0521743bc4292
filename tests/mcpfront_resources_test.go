package tests

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// frontResClient is a go-sdk client session on the front door with its
// resource and prompt notifications.
type frontResClient struct {
	cs              *mcp.ClientSession
	resourcesChange chan struct{}
	promptsChange   chan struct{}
	updated         chan string
}

func connectFrontRes(t *testing.T, ctx context.Context, endpoint, version string) *frontResClient {
	t.Helper()
	c := &frontResClient{resourcesChange: make(chan struct{}, 16), promptsChange: make(chan struct{}, 16), updated: make(chan string, 16)}
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "frontdoor-resources-test", Version: "1"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { signal(c.resourcesChange) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { signal(c.promptsChange) },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case c.updated <- r.Params.URI:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.cs = cs
	return c
}

func (c *frontResClient) resourceURIs(t *testing.T, ctx context.Context) []string {
	t.Helper()
	var uris []string
	for r, err := range c.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	return uris
}

func (c *frontResClient) promptNames(t *testing.T, ctx context.Context) []string {
	t.Helper()
	var names []string
	for p, err := range c.cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func (c *frontResClient) readText(t *testing.T, ctx context.Context, uri string) string {
	t.Helper()
	res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %v %+v", uri, err, res)
	}
	return res.Contents[0].Text
}

func waitSignal[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatalf("no %s within 15s", what)
		var zero T
		return zero
	}
}

// untilListed waits for list_changed notifications on ch until listed
// holds after one (an earlier change, e.g. the upstream's restart in the
// previous subtest, may be notified first).
func untilListed(t *testing.T, ch <-chan struct{}, what string, listed func() bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case <-ch:
			if listed() {
				return
			}
		case <-deadline:
			t.Fatalf("no %s within 15s", what)
		}
	}
}

func drain[T any](ch <-chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestMCPFrontResources: resources and prompts through the front door, for
// go-sdk's client in a 2025-11-25 session and in the 2026-07-28 protocol,
// against the Python SDK's resources server (streamable HTTP, 2026-07-28,
// the protocol in which it serves subscriptions): the lists equal the gRPC
// API's, reads are byte-exact, a template URI is read, an unknown URI is
// the spec's -32002, prompts render with their arguments (a missing
// required one is InvalidParams naming it), a subscription sees
// resources/updated, an added resource and prompt bring
// resources/list_changed and prompts/list_changed, and a subscription
// outlives the upstream's restart.
func TestMCPFrontResources(t *testing.T) {
	t.Parallel()
	// pingInterval: the killed upstream is found dead within a fraction of
	// a second (15 s by default).
	up, srv, restart := startResourcesPython(t, "http", upstream{ProtocolVersion: "2026-07-28", RefreshDebounce: "50ms",
		Backoff: &backoff{Base: "50ms", Max: "200ms"}, PingInterval: "300ms"})
	p := startToolsvc(t, cfg{Servers: servers{"py": up}}, "--mcp-listen", "127.0.0.1:0", "--mcp-page-size", "1")
	endpoint := "http://" + p.mcpAddr + "/mcp"
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	grpcURIs := func() []string {
		res, _ := listResources(t, ctx, p.client, "py")
		var uris []string
		for _, r := range res {
			uris = append(uris, r.GetUri())
		}
		slices.Sort(uris)
		return uris
	}
	grpcPrompts := func() []string {
		var names []string
		for _, pr := range listPrompts(t, ctx, p.client) {
			names = append(names, pr.GetName())
		}
		slices.Sort(names)
		return names
	}

	for _, tc := range []struct{ name, version string }{
		{"session-2025-11-25", "2025-11-25"},
		{"stateless-2026-07-28", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connectFrontRes(t, ctx, endpoint, tc.version)
			caps := c.cs.InitializeResult().Capabilities
			if caps.Resources == nil || !caps.Resources.ListChanged || !caps.Resources.Subscribe || caps.Prompts == nil || !caps.Prompts.ListChanged {
				t.Fatalf("capabilities %+v %+v: want resources (listChanged, subscribe) and prompts (listChanged)", caps.Resources, caps.Prompts)
			}

			// The lists (one item a page: every list pages) equal the gRPC API's.
			if got, want := c.resourceURIs(t, ctx), grpcURIs(); !slices.Equal(got, want) || !slices.Contains(got, "py://note") {
				t.Fatalf("resources/list = %v, ListResources = %v", got, want)
			}
			var tmpls []string
			for tm, err := range c.cs.ResourceTemplates(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				tmpls = append(tmpls, tm.URITemplate)
			}
			if !slices.Equal(tmpls, []string{"py://items/{id}"}) {
				t.Fatalf("resources/templates/list = %v", tmpls)
			}
			if got, want := c.promptNames(t, ctx), grpcPrompts(); !slices.Equal(got, want) || !slices.Contains(got, "py__greet") {
				t.Fatalf("prompts/list = %v, ListPrompts = %v", got, want)
			}

			// Reads: binary byte-exact, a template URI, an unknown URI.
			rb, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "py://blob"})
			if err != nil || len(rb.Contents) != 1 {
				t.Fatalf("py://blob: %v %+v", err, rb)
			}
			want := make([]byte, 0, 258)
			for i := range 256 {
				want = append(want, byte(i))
			}
			want = append(want, 0x00, 0xff)
			if string(rb.Contents[0].Blob) != string(want) || rb.Contents[0].MIMEType != "application/octet-stream" {
				t.Errorf("py://blob = %x (%s), want %x", rb.Contents[0].Blob, rb.Contents[0].MIMEType, want)
			}
			if got := c.readText(t, ctx, "py://items/42"); got != "item 42" {
				t.Errorf("py://items/42 = %q", got)
			}
			_, err = c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "py://nope"})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != -32002 || !strings.Contains(werr.Message, "py://nope") {
				t.Errorf("unknown URI: %v, want JSON-RPC -32002 naming it", err)
			}

			// Prompts.
			gp, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "py__greet", Arguments: map[string]string{"name": "Ada", "style": "warm"}})
			if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ada! (warm)" {
				t.Fatalf("prompts/get py__greet: %v %+v", err, gp)
			}
			_, err = c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "py__greet"})
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "name") {
				t.Errorf("prompts/get without the required argument: %v, want InvalidParams naming it", err)
			}
			_, err = c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "py__nope"})
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "py__nope") {
				t.Errorf("unknown prompt: %v, want InvalidParams naming it", err)
			}

			// A subscription sees resources/updated.
			if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "py://note"}); err != nil {
				t.Fatalf("resources/subscribe: %v", err)
			}
			note := "note of " + tc.name
			if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "py__set_note", Arguments: map[string]any{"text": note}}); err != nil {
				t.Fatal(err)
			}
			if uri := waitSignal(t, c.updated, "notifications/resources/updated"); uri != "py://note" {
				t.Fatalf("resources/updated for %q", uri)
			}
			if got := c.readText(t, ctx, "py://note"); got != note {
				t.Fatalf("py://note = %q after the update, want %q", got, note)
			}

			// Added at runtime: list_changed, then listed.
			drain(c.resourcesChange)
			drain(c.promptsChange)
			added := strings.ReplaceAll(tc.name, "-", "_")
			if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "py__add_resource", Arguments: map[string]any{"name": added}}); err != nil {
				t.Fatal(err)
			}
			untilListed(t, c.resourcesChange, "resources/list_changed listing py://extra/"+added, func() bool {
				return slices.Contains(c.resourceURIs(t, ctx), "py://extra/"+added)
			})
			if got := c.readText(t, ctx, "py://extra/"+added); got != added+" resource" {
				t.Errorf("added resource = %q", got)
			}
			if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "py__add_prompt", Arguments: map[string]any{"name": added}}); err != nil {
				t.Fatal(err)
			}
			untilListed(t, c.promptsChange, "prompts/list_changed listing py__"+added, func() bool {
				return slices.Contains(c.promptNames(t, ctx), "py__"+added)
			})

			if tc.version == "" {
				return
			}
			// The upstream is killed and comes back (its note reset): the
			// front door subscribes again and says so with one
			// resources/updated; later updates keep coming.
			drain(c.updated)
			if err := syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			srv = restart()
			if uri := waitSignal(t, c.updated, "resources/updated after the upstream came back"); uri != "py://note" {
				t.Fatalf("resources/updated for %q", uri)
			}
			if got := c.readText(t, ctx, "py://note"); got != "first note" {
				t.Fatalf("py://note = %q after the restart, want the new process's %q", got, "first note")
			}
			drain(c.updated)
			if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "py__set_note", Arguments: map[string]any{"text": "after restart"}}); err != nil {
				t.Fatal(err)
			}
			waitSignal(t, c.updated, "resources/updated after the restart")
			if got := c.readText(t, ctx, "py://note"); got != "after restart" {
				t.Fatalf("py://note = %q, want %q", got, "after restart")
			}
			// Unsubscribed: no more updates for this session.
			if err := c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "py://note"}); err != nil {
				t.Fatalf("resources/unsubscribe: %v", err)
			}
		})
	}
}
