package tests

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Resources and prompts end to end: server-everything (TypeScript SDK,
// written by others) and a Python SDK server (tests/python/
// resources_server.py) behind a real toolsvc, through the gRPC API. The
// ground truth for server-everything is a raw JSON-RPC session over its
// stdio, parsed by no SDK.

func listResources(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, servers ...string) ([]*toolsvcv1.Resource, string) {
	t.Helper()
	var out []*toolsvcv1.Resource
	tok, rev := "", ""
	for {
		resp, err := c.ListResources(ctx, &toolsvcv1.ListResourcesRequest{PageSize: 3, PageToken: tok, Servers: servers})
		if err != nil {
			t.Fatalf("ListResources: %v", err)
		}
		if rev != "" && resp.GetRevision() != rev {
			t.Fatalf("pages of one listing from revisions %s and %s", rev, resp.GetRevision())
		}
		rev = resp.GetRevision()
		out = append(out, resp.GetResources()...)
		if tok = resp.GetNextPageToken(); tok == "" {
			return out, rev
		}
	}
}

func listPrompts(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient) []*toolsvcv1.Prompt {
	t.Helper()
	resp, err := c.ListPrompts(ctx, &toolsvcv1.ListPromptsRequest{PageSize: 1000})
	if err != nil {
		t.Fatalf("ListPrompts: %v", err)
	}
	return resp.GetPrompts()
}

func findPrompt(ps []*toolsvcv1.Prompt, name string) *toolsvcv1.Prompt {
	for _, p := range ps {
		if p.GetName() == name {
			return p
		}
	}
	return nil
}

func TestResourcesEverything(t *testing.T) {
	t.Parallel()
	entry := nodePath(t, everythingEntry)
	raw := startRawMCP(t, "node", entry, "stdio")
	rawRes := raw.call(t, "resources/list", map[string]any{})["resources"].([]any)
	var rawURIs []string
	for _, r := range rawRes {
		rawURIs = append(rawURIs, r.(map[string]any)["uri"].(string))
	}
	slices.Sort(rawURIs)
	if len(rawURIs) == 0 {
		t.Fatal("server-everything listed no resources over raw stdio")
	}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			server := upstream{Command: "node", Args: []string{entry, "stdio"}}
			if transport == "http" {
				server = goHTTP(startEverythingHTTP(t), upstream{})
			}
			p := startToolsvc(t, cfg{Servers: servers{"everything": server}})
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			c := p.client

			// List: every resource the server lists, with its server.
			res, rev := listResources(t, ctx, c)
			var uris []string
			for _, r := range res {
				if r.GetServer() != "everything" {
					t.Errorf("resource %s: server %q", r.GetUri(), r.GetServer())
				}
				uris = append(uris, r.GetUri())
			}
			if !slices.Equal(uris, rawURIs) {
				t.Fatalf("ListResources URIs = %v\nserver lists %v", uris, rawURIs)
			}
			if len(rev) != 32 {
				t.Errorf("revision %q", rev)
			}

			// Templates.
			tr, err := c.ListResourceTemplates(ctx, &toolsvcv1.ListResourceTemplatesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var tmpls []string
			for _, tm := range tr.GetResourceTemplates() {
				tmpls = append(tmpls, tm.GetUriTemplate())
			}
			if !slices.Contains(tmpls, "demo://resource/dynamic/text/{resourceId}") || !slices.Contains(tmpls, "demo://resource/dynamic/blob/{resourceId}") {
				t.Fatalf("templates = %v", tmpls)
			}

			// Read a static text resource: byte for byte what the server
			// sends a raw client. The server is inferred (one lists it).
			want := raw.call(t, "resources/read", map[string]any{"uri": rawURIs[0]})["contents"].([]any)[0].(map[string]any)
			rr, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: rawURIs[0]})
			if err != nil {
				t.Fatalf("ReadResource(%s): %v", rawURIs[0], err)
			}
			if rr.GetServer() != "everything" || len(rr.GetContents()) != 1 {
				t.Fatalf("ReadResource = %v", rr)
			}
			if got := rr.GetContents()[0]; got.GetText() != want["text"] || got.GetMimeType() != want["mimeType"] || got.GetUri() != want["uri"] {
				t.Errorf("ReadResource(%s) = %q (%s), server sends %q (%s)", rawURIs[0], got.GetText(), got.GetMimeType(), want["text"], want["mimeType"])
			}

			// A templated binary resource, server inferred from the
			// template: the blob decoded from MCP base64, byte for byte
			// (its text carries a time of day, so compare with it masked).
			blobURI := "demo://resource/dynamic/blob/2"
			wantBlob := raw.call(t, "resources/read", map[string]any{"uri": blobURI})["contents"].([]any)[0].(map[string]any)
			wb, err := base64.StdEncoding.DecodeString(wantBlob["blob"].(string))
			if err != nil {
				t.Fatal(err)
			}
			rb, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: blobURI})
			if err != nil {
				t.Fatalf("ReadResource(%s): %v", blobURI, err)
			}
			gb := rb.GetContents()[0].GetBlob()
			clock := regexp.MustCompile(`\d{1,2}:\d{2}:\d{2}( [AP]M)?`)
			if gb == nil || clock.ReplaceAllString(string(gb), "T") != clock.ReplaceAllString(string(wb), "T") {
				t.Errorf("blob = %q, server sends %q", gb, wb)
			}

			// A resource_link from get-resource-links reads back with the
			// called tool's server and the link's URI.
			links := callJSON(t, ctx, c, "everything__get-resource-links", `{"count": 3}`)
			n := 0
			for _, ct := range links.GetContent() {
				l := ct.GetResourceLink()
				if l == nil {
					continue
				}
				n++
				lr, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: "everything", Uri: l.GetUri()})
				if err != nil {
					t.Fatalf("ReadResource(link %s): %v", l.GetUri(), err)
				}
				if len(lr.GetContents()) == 0 || lr.GetContents()[0].GetUri() != l.GetUri() {
					t.Errorf("link %s read as %v", l.GetUri(), lr)
				}
			}
			if n != 3 {
				t.Fatalf("get-resource-links(3) gave %d links", n)
			}

			// Prompts: listed under exposed names, rendered with arguments.
			ps := listPrompts(t, ctx, c)
			ap := findPrompt(ps, "everything__args-prompt")
			if ap == nil || ap.GetOriginalName() != "args-prompt" || ap.GetServer() != "everything" {
				t.Fatalf("ListPrompts lacks everything__args-prompt: %v", ps)
			}
			if len(ap.GetArguments()) != 2 || !ap.GetArguments()[0].GetRequired() {
				t.Errorf("args-prompt arguments = %v", ap.GetArguments())
			}
			gp, err := c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: "everything__args-prompt", Arguments: map[string]string{"city": "Paris", "state": "Île-de-France"}})
			if err != nil {
				t.Fatalf("GetPrompt: %v", err)
			}
			if len(gp.GetMessages()) != 1 || gp.GetMessages()[0].GetRole() != "user" || gp.GetMessages()[0].GetContent().GetText().GetText() != "What's weather in Paris, Île-de-France?" {
				t.Errorf("GetPrompt = %v", gp)
			}

			// Bad input: specific statuses with ErrorInfo.
			_, err = c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: "everything__args-prompt", Arguments: map[string]string{"state": "x"}})
			wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", "everything", "")
			if f := fieldViolations(err); !slices.Equal(f, []string{"arguments.city"}) {
				t.Errorf("missing argument: field violations %v, want arguments.city", f)
			}
			_, err = c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: "everything__no-such-prompt"})
			if ei := wantStatus(t, err, codes.NotFound, "PROMPT_NOT_FOUND", "", ""); ei.GetMetadata()["prompt"] != "everything__no-such-prompt" {
				t.Errorf("PROMPT_NOT_FOUND metadata %v", ei.GetMetadata())
			}
			_, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: "everything", Uri: "demo://no/such/resource"})
			if ei := wantStatus(t, err, codes.NotFound, "RESOURCE_NOT_FOUND", "everything", ""); ei.GetMetadata()["uri"] != "demo://no/such/resource" {
				t.Errorf("RESOURCE_NOT_FOUND metadata %v", ei.GetMetadata())
			}
			_, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "demo://no/such/resource"})
			wantStatus(t, err, codes.NotFound, "RESOURCE_NOT_FOUND", "", "")
			_, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: "nope", Uri: rawURIs[0]})
			wantStatus(t, err, codes.NotFound, "SERVER_NOT_FOUND", "", "")
			_, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: "everything"})
			wantStatus(t, err, codes.InvalidArgument, "REQUEST_INVALID", "", "")

			// A subscription sees an update: server-everything sends
			// resources/updated for subscribed URIs every 5 s once
			// toggle-subscriber-updates is on; the dynamic text resource
			// carries the time, so a later read differs.
			sctx, scancel := context.WithCancel(ctx)
			defer scancel()
			stream, err := c.SubscribeResource(sctx, &toolsvcv1.SubscribeResourceRequest{Server: "everything", Uri: "demo://resource/dynamic/text/1"})
			if err != nil {
				t.Fatal(err)
			}
			first, err := stream.Recv()
			if err != nil || first.GetContents() == nil {
				t.Fatalf("first subscription event = %v, %v; want contents", first, err)
			}
			callJSON(t, ctx, c, "everything__toggle-subscriber-updates", `{}`)
			upd, err := stream.Recv()
			if err != nil || upd.GetContents() == nil || upd.GetVersion() == first.GetVersion() {
				t.Fatalf("update = %v, %v", upd, err)
			}
			if !strings.HasPrefix(upd.GetContents().GetContents()[0].GetText(), "Resource 1: ") {
				t.Errorf("updated contents %v", upd.GetContents())
			}
			scancel()
		})
	}
}

// startResourcesPython starts tests/python/resources_server.py (over HTTP:
// now, on a free port, and again on that port with restart) and returns the
// server config with the settings of u.
func startResourcesPython(t *testing.T, transport string, u upstream) (server upstream, srv *proc, restart func() *proc) {
	t.Helper()
	script := filepath.Join(rootDir(t), "tests", "python", "resources_server.py")
	py := venvBin(t, "mcp", "python")
	if transport == "stdio" {
		u.Command, u.Args = py, []string{script, "stdio"}
		return u, nil, nil
	}
	port := freePort(t)
	restart = func() *proc {
		srv := startProc(t, exec.Command(py, script, "streamable-http", fmt.Sprint(port)))
		waitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 30*time.Second, srv)
		return srv
	}
	return goHTTP(fmt.Sprintf("http://127.0.0.1:%d/mcp", port), u), restart(), restart
}

// TestResourcesPython: the Python SDK server over stdio (2025-11-25) and
// streamable HTTP in the 2026-07-28 protocol, where subscriptions and
// list_changed ride subscriptions/listen.
func TestResourcesPython(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, transport, protocol string }{
		{"stdio", "stdio", ""},
		{"http-2026", "http", "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// (The backoff was written "backoffBase"/"backoffMax", keys
			// config ignores with a warning; the builder has only real keys.)
			// A killed HTTP upstream is found dead by the prober: a short
			// pingInterval finds it in a fraction of a second, not 15 s.
			up, srv, restart := startResourcesPython(t, tc.transport, upstream{ProtocolVersion: tc.protocol, RefreshDebounce: "50ms",
				Backoff: &backoff{Base: "50ms", Max: "200ms"}, PingInterval: "300ms"})
			p := startToolsvc(t, cfg{Servers: servers{"py": up}})
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			c := p.client

			res, _ := listResources(t, ctx, c, "py")
			var uris []string
			for _, r := range res {
				uris = append(uris, r.GetUri())
			}
			if !slices.Equal(uris, []string{"py://blob", "py://note"}) {
				t.Fatalf("resources = %v", uris)
			}
			tr, err := c.ListResourceTemplates(ctx, &toolsvcv1.ListResourceTemplatesRequest{Servers: []string{"py"}})
			if err != nil || len(tr.GetResourceTemplates()) != 1 || tr.GetResourceTemplates()[0].GetUriTemplate() != "py://items/{id}" {
				t.Fatalf("templates = %v, %v", tr, err)
			}

			// Binary, byte-exact; text; a template URI (server inferred).
			rb, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "py://blob"})
			if err != nil {
				t.Fatal(err)
			}
			want := make([]byte, 0, 258)
			for i := range 256 {
				want = append(want, byte(i))
			}
			want = append(want, 0x00, 0xff)
			if got := rb.GetContents()[0].GetBlob(); string(got) != string(want) {
				t.Errorf("py://blob = %x, want %x", got, want)
			}
			if rb.GetContents()[0].GetMimeType() != "application/octet-stream" {
				t.Errorf("blob mime type %q", rb.GetContents()[0].GetMimeType())
			}
			ri, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "py://items/42"})
			if err != nil || ri.GetContents()[0].GetText() != "item 42" || ri.GetServer() != "py" {
				t.Fatalf("py://items/42 = %v, %v", ri, err)
			}

			// An unknown URI: the Python SDK answers -32602 (SEP-2164).
			_, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: "py", Uri: "py://nope"})
			wantStatus(t, err, codes.NotFound, "RESOURCE_NOT_FOUND", "py", "")

			// A prompt with arguments; a missing required one.
			gp, err := c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: "py__greet", Arguments: map[string]string{"name": "Ada", "style": "warm"}})
			if err != nil || gp.GetMessages()[0].GetContent().GetText().GetText() != "Hello, Ada! (warm)" {
				t.Fatalf("GetPrompt(greet) = %v, %v", gp, err)
			}
			_, err = c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: "py__greet"})
			wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", "py", "")

			// A watch that includes resources and prompts starts with
			// them in its snapshot; a tools-only watch is exactly as before.
			wctx, wcancel := context.WithCancel(ctx)
			defer wcancel()
			ws, err := c.WatchCatalog(wctx, &toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := ws.Recv()
			if err != nil || snap.GetSnapshot() == nil || len(snap.GetRevision()) != 64 {
				t.Fatalf("first watch event = %v, %v", snap, err)
			}
			if len(snap.GetSnapshot().GetResources()) != 2 || len(snap.GetSnapshot().GetResourceTemplates()) != 1 ||
				len(snap.GetSnapshot().GetPrompts()) != 1 || len(snap.GetSnapshot().GetTools()) == 0 {
				t.Fatalf("snapshot = %v", snap.GetSnapshot())
			}
			toolsOnly := startWatch(t, ctx, c, "")
			if ev := toolsOnly.next(t, 10*time.Second); len(ev.GetSnapshot().GetPrompts())+len(ev.GetSnapshot().GetResources()) != 0 || len(ev.GetRevision()) != 32 {
				t.Fatalf("a tools-only watch got %v", ev)
			}

			// A runtime change reaches the prompt list and the watch
			// (list_changed → the same debounced refresh as tools).
			callJSON(t, ctx, c, "py__add_prompt", `{"name": "later"}`)
			ev, err := ws.Recv()
			for err == nil && ev.GetProgress() != nil {
				ev, err = ws.Recv()
			}
			if err != nil || ev.GetChanges() == nil || len(ev.GetChanges().GetUpsertedPrompts()) != 1 ||
				ev.GetChanges().GetUpsertedPrompts()[0].GetName() != "py__later" || len(ev.GetChanges().GetUpserted()) != 0 {
				t.Fatalf("watch event after add_prompt = %v, %v", ev, err)
			}
			// A resource added at runtime: resources/list_changed, the same
			// path.
			callJSON(t, ctx, c, "py__add_resource", `{"name": "late"}`)
			ev, err = ws.Recv()
			for err == nil && ev.GetProgress() != nil {
				ev, err = ws.Recv()
			}
			if err != nil || len(ev.GetChanges().GetUpsertedResources()) != 1 || ev.GetChanges().GetUpsertedResources()[0].GetUri() != "py://extra/late" {
				t.Fatalf("watch event after add_resource = %v, %v", ev, err)
			}
			if rr, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "py://extra/late"}); err != nil || rr.GetContents()[0].GetText() != "late resource" {
				t.Fatalf("reading the added resource = %v, %v", rr, err)
			}
			wcancel()
			ws2, err := c.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true, ResumeToken: ev.GetRevision()})
			if err != nil {
				t.Fatal(err)
			}
			if ev2, err := ws2.Recv(); err != nil || ev2.GetSynced() == nil {
				t.Fatalf("resumed watch = %v, %v; want synced", ev2, err)
			}
			ws3, err := c.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true, ResumeToken: snap.GetRevision()})
			if err != nil {
				t.Fatal(err)
			}
			if ev3, err := ws3.Recv(); err != nil || len(ev3.GetChanges().GetUpsertedPrompts()) != 1 || len(ev3.GetChanges().GetUpsertedResources()) != 1 || ev3.GetRevision() != ev.GetRevision() {
				t.Fatalf("watch resumed from the snapshot's revision = %v, %v; want the prompt and resource changes", ev3, err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for findPrompt(listPrompts(t, ctx, c), "py__later") == nil {
				if time.Now().After(deadline) {
					t.Fatal("py__later never appeared in ListPrompts after prompts/list_changed")
				}
				time.Sleep(50 * time.Millisecond)
			}

			if tc.transport == "stdio" {
				// The Python SDK serves resources/subscribe only in the
				// 2026-07-28 protocol (as subscriptions/listen).
				st, err := c.SubscribeResource(ctx, &toolsvcv1.SubscribeResourceRequest{Uri: "py://note"})
				if err == nil {
					_, err = st.Recv()
				}
				wantStatus(t, err, codes.FailedPrecondition, "SUBSCRIPTIONS_UNSUPPORTED", "py", "")
				return
			}

			// A subscription sees an update.
			sctx, scancel := context.WithCancel(ctx)
			defer scancel()
			stream, err := c.SubscribeResource(sctx, &toolsvcv1.SubscribeResourceRequest{Uri: "py://note"})
			if err != nil {
				t.Fatal(err)
			}
			first, err := stream.Recv()
			if err != nil || first.GetContents().GetContents()[0].GetText() != "first note" {
				t.Fatalf("first event = %v, %v", first, err)
			}
			callJSON(t, ctx, c, "py__set_note", `{"text": "second note"}`)
			upd, err := stream.Recv()
			if err != nil || upd.GetContents().GetContents()[0].GetText() != "second note" {
				t.Fatalf("update = %v, %v", upd, err)
			}
			// Resuming with the last version: "unchanged", then updates.
			scancel()
			stream2, err := c.SubscribeResource(ctx, &toolsvcv1.SubscribeResourceRequest{Uri: "py://note", ResumeToken: upd.GetVersion()})
			if err != nil {
				t.Fatal(err)
			}
			if ev, err := stream2.Recv(); err != nil || ev.GetUnchanged() == nil || ev.GetVersion() != upd.GetVersion() {
				t.Fatalf("resumed first event = %v, %v; want unchanged", ev, err)
			}

			// The upstream goes away (SIGKILL) and comes back (a new
			// process, its note reset): the stream outlives it (the core's
			// hub subscribes again) and brings the current contents
			// (docs/resources.md, "One subscription lifecycle"); resuming
			// with their version is "unchanged".
			if err := syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			restart()
			back, err := stream2.Recv()
			if err != nil || back.GetContents().GetContents()[0].GetText() != "first note" || back.GetVersion() == upd.GetVersion() {
				t.Fatalf("the subscription after the upstream's restart: %v, %v; want the new process's contents", back, err)
			}
			stream3, err := c.SubscribeResource(ctx, &toolsvcv1.SubscribeResourceRequest{Uri: "py://note", ResumeToken: back.GetVersion()})
			if err != nil {
				t.Fatal(err)
			}
			if ev, err := stream3.Recv(); err != nil || ev.GetUnchanged() == nil {
				t.Fatalf("resumed after the restart: %v, %v; want unchanged", ev, err)
			}
		})
	}
}

// TestResourcesPredecessorCases: case 41 (an upstream with resources but
// no resources/templates/list method connects with its resources) and case
// 42 (a capability lost on reconnect empties the stale resource and prompt
// lists, in a new revision; a tools-only connect changes nothing), against
// the Go SDK test server restarted by an operator reconnect.
func TestResourcesPredecessorCases(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "caps")
	if err := os.WriteFile(file, []byte("resources,no-templates\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startToolsvc(t, cfg{Servers: servers{"go": goStdio(upstream{Env: map[string]string{"TESTSERVER_RESOURCES_FILE": file}})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	c := p.client

	res, rev1 := listResources(t, ctx, c)
	if len(res) != 1 || res[0].GetUri() != "test://hello" {
		t.Fatalf("case 41: resources = %v", res)
	}
	tr, err := c.ListResourceTemplates(ctx, &toolsvcv1.ListResourceTemplatesRequest{})
	if err != nil || len(tr.GetResourceTemplates()) != 0 {
		t.Fatalf("case 41: templates = %v, %v", tr, err)
	}
	if st := serverStatus(t, ctx, c, "go"); st.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY {
		t.Fatalf("case 41: server %v", st)
	}
	rr, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "test://hello"})
	if err != nil || rr.GetContents()[0].GetText() != "hello from go" {
		t.Fatalf("case 41: read = %v, %v", rr, err)
	}
	if findPrompt(listPrompts(t, ctx, c), "go__hi") == nil {
		t.Fatal("case 41: prompt go__hi missing")
	}

	// Case 42: the restarted upstream no longer offers resources/prompts.
	if err := os.WriteFile(file, []byte("none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := toolsvcv1.NewAdminServiceClient(conn).ReconnectServer(ctx, &toolsvcv1.ReconnectServerRequest{Name: "go"}); err != nil {
		t.Fatalf("ReconnectServer: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, rev2 := listResources(t, ctx, c)
		if len(res) == 0 && len(listPrompts(t, ctx, c)) == 0 {
			if rev2 == rev1 {
				t.Fatal("case 42: the lists emptied without a new revision")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("case 42: stale lists after the capability was lost: %v", res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "test://hello"})
	wantStatus(t, err, codes.NotFound, "RESOURCE_NOT_FOUND", "", "")
}

// TestResourcesForwardPrincipal: with forwardPrincipal a read carries the
// caller in _meta as tools/call does (the Go test server echoes it).
func TestResourcesForwardPrincipal(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "caps")
	if err := os.WriteFile(file, []byte("resources\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const alice = "alice-token-0123456789"
	p := startToolsvc(t, cfg{Auth: &authCfg{Tokens: map[string]string{"alice": alice}}, Servers: servers{
		"fwd":   goStdio(upstream{Env: map[string]string{"TESTSERVER_RESOURCES_FILE": file}, ForwardPrincipal: true}),
		"plain": goStdio(upstream{Env: map[string]string{"TESTSERVER_RESOURCES_FILE": file}})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+alice)
	for server, want := range map[string]string{"fwd": "hello from go, asked by alice", "plain": "hello from go"} {
		rr, err := p.client.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: server, Uri: "test://hello"})
		if err != nil || rr.GetContents()[0].GetText() != want {
			t.Errorf("read on %s = %v, %v; want %q", server, rr, err, want)
		}
	}
}

// TestResourcesCLIDemo: the CLI's resources, read, prompts and prompt
// commands against the built-in demo upstream (toolsvc demo-server), as the
// README's first commands use them.
func TestResourcesCLIDemo(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"demo": demoServer()}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	run := func(wantOK bool, args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin.toolsvc, append(args[:1:1], append([]string{"--addr", p.addr}, args[1:]...)...)...).CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("toolsvc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got := run(true, "resources"); !strings.Contains(got, "demo://readme") || !strings.Contains(got, "text/plain") {
		t.Errorf("toolsvc resources:\n%s", got)
	}
	if got := run(true, "read", "demo://readme"); !strings.HasPrefix(got, "toolsvc demo upstream:") {
		t.Errorf("toolsvc read demo://readme:\n%s", got)
	}
	if got := run(true, "prompts"); !strings.Contains(got, "demo__greet") || !strings.Contains(got, "name*") {
		t.Errorf("toolsvc prompts:\n%s", got)
	}
	if got := run(true, "prompt", "demo__greet", "name=Ada"); strings.TrimSpace(got) != "user: Please greet Ada warmly, in one sentence." {
		t.Errorf("toolsvc prompt demo__greet name=Ada:\n%s", got)
	}
	if got := run(false, "prompt", "demo__greet"); !strings.Contains(got, "ARGUMENTS_INVALID") || !strings.Contains(got, "arguments.name") {
		t.Errorf("toolsvc prompt without its required argument:\n%s", got)
	}
	if got := run(false, "read", "demo://nothing"); !strings.Contains(got, "RESOURCE_NOT_FOUND") {
		t.Errorf("toolsvc read of an unknown URI:\n%s", got)
	}
	if got := run(true, "complete", "--prompt", "demo__greet", "--arg", "name", "--value", "a"); got != "Ada\nAlan\n(2 of 2)\n" {
		t.Errorf("toolsvc complete --prompt demo__greet --arg name --value a:\n%s", got)
	}
	metrics := scrape(t, p.adminAddr)
	for _, want := range []string{
		`toolsvc_resource_requests_total{method="resources/read",outcome="ok",server="demo"} 1`,
		`toolsvc_resource_requests_total{method="resources/read",outcome="NotFound",server="unknown"} 1`,
		`toolsvc_resource_requests_total{method="prompts/get",outcome="ok",server="demo"} 1`,
		`toolsvc_resource_requests_total{method="prompts/get",outcome="InvalidArgument",server="demo"} 1`,
		`toolsvc_resource_requests_total{method="completion/complete",outcome="ok",server="demo"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestResourcesAuth: the auth rules cover prompts (by exposed name) and a
// server's resources (by "<prefix>__@resources"), visible = usable, in
// lists, reads, prompts, server inference and the watch. Two demo
// upstreams list the same URI (demo://readme).
func TestResourcesAuth(t *testing.T) {
	t.Parallel()
	const alice, bob, carol = "alice-token-0123456789", "bob-token-0123456789ab", "carol-token-0123456789"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"alice": alice, "bob": bob, "carol": carol},
			Rules: []rule{{Principal: "alice", Allow: []string{"a__*"}}, {Principal: "bob"}, {Principal: "carol", Deny: []string{"b__@resources"}}}},
		Servers: servers{"a": demoServer(), "b": demoServer()}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	c := p.client
	servers := func(tok string) (res, prompts []string) {
		t.Helper()
		rs, _ := listResources(t, as(tok), c)
		for _, r := range rs {
			res = append(res, r.GetServer())
		}
		for _, pr := range listPrompts(t, as(tok), c) {
			prompts = append(prompts, pr.GetName())
		}
		return res, prompts
	}
	if _, err := c.ListResources(ctx, &toolsvcv1.ListResourcesRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListResources without credentials = %v", err)
	}
	for _, tc := range []struct {
		tok            string
		res, prompts   []string
		readB, promptB codes.Code
		inferred       string // the server demo://readme resolves to without one; "" ambiguous
	}{
		{alice, []string{"a"}, []string{"a__greet"}, codes.PermissionDenied, codes.PermissionDenied, "a"},
		{bob, []string{"a", "b"}, []string{"a__greet", "b__greet"}, codes.OK, codes.OK, ""},
		{carol, []string{"a"}, []string{"a__greet", "b__greet"}, codes.PermissionDenied, codes.OK, "a"},
	} {
		res, prompts := servers(tc.tok)
		if !slices.Equal(res, tc.res) || !slices.Equal(prompts, tc.prompts) {
			t.Errorf("%s sees resources of %v and prompts %v, want %v and %v", tc.tok[:5], res, prompts, tc.res, tc.prompts)
		}
		_, err := c.ReadResource(as(tc.tok), &toolsvcv1.ReadResourceRequest{Server: "b", Uri: "demo://readme"})
		if status.Code(err) != tc.readB {
			t.Errorf("%s reads b's resource: %v, want %v", tc.tok[:5], err, tc.readB)
		}
		_, err = c.GetPrompt(as(tc.tok), &toolsvcv1.GetPromptRequest{Name: "b__greet", Arguments: map[string]string{"name": "x"}})
		if status.Code(err) != tc.promptB {
			t.Errorf("%s gets b__greet: %v, want %v", tc.tok[:5], err, tc.promptB)
		}
		rr, err := c.ReadResource(as(tc.tok), &toolsvcv1.ReadResourceRequest{Uri: "demo://readme"})
		if tc.inferred == "" {
			ei := wantStatus(t, err, codes.InvalidArgument, "REQUEST_INVALID", "", "")
			if ei.GetMetadata()["candidates"] != "a,b" || !slices.Equal(fieldViolations(err), []string{"server"}) {
				t.Errorf("ambiguous read: metadata %v, fields %v", ei.GetMetadata(), fieldViolations(err))
			}
		} else if err != nil || rr.GetServer() != tc.inferred {
			t.Errorf("%s reads demo://readme without a server: %v, %v; want server %s", tc.tok[:5], rr, err, tc.inferred)
		}
	}
	_, err := c.ReadResource(as(alice), &toolsvcv1.ReadResourceRequest{Server: "b", Uri: "demo://readme"})
	wantStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED", "b", "")

	// The watch shows alice only what she may use.
	ws, err := c.WatchCatalog(as(alice), &toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ws.Recv()
	if err != nil {
		t.Fatal(err)
	}
	sn := ev.GetSnapshot()
	if len(sn.GetResources()) != 1 || sn.GetResources()[0].GetServer() != "a" || len(sn.GetPrompts()) != 1 || sn.GetPrompts()[0].GetName() != "a__greet" {
		t.Errorf("alice's watch snapshot: resources %v prompts %v", sn.GetResources(), sn.GetPrompts())
	}
}
