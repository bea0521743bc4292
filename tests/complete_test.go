package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Completion (MCP completion/complete) end to end: real SDK servers in
// subprocesses behind a real toolsvc, through gRPC on loopback, the MCP
// front door (go-sdk's client) and the CLI. The go-sdk test server
// (tests/testserver, $TESTSERVER_RESOURCES_FILE) completes its prompt
// "trip" and its template test://items/{id}; another copy does not declare
// completions; a third declares them without a handler, and go-sdk itself
// answers MethodNotFound.

// resourcesModeFile writes a $TESTSERVER_RESOURCES_FILE with mode.
func resourcesModeFile(t *testing.T, mode string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "mode")
	if err := os.WriteFile(file, []byte(mode+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// goResourcesUpstream is the go-sdk test server in resources mode over
// transport ("stdio" or "http": streamable HTTP, started here).
func goResourcesUpstream(t *testing.T, transport, mode string) upstream {
	t.Helper()
	env := map[string]string{"TESTSERVER_RESOURCES_FILE": resourcesModeFile(t, mode)}
	if transport == "stdio" {
		return goStdio(upstream{Env: env})
	}
	cmd := exec.Command(bin.testserver, "-mode", "http", "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TESTSERVER_RESOURCES_FILE="+env["TESTSERVER_RESOURCES_FILE"])
	p := startProc(t, cmd)
	return goHTTP(p.log.waitFor(t, urlLineRE, 10*time.Second), upstream{})
}

func completePrompt(name, arg, value string, ctxArgs map[string]string) *toolsvcv1.CompleteRequest {
	return &toolsvcv1.CompleteRequest{Ref: &toolsvcv1.CompleteRequest_Prompt{Prompt: name}, ArgumentName: arg, ArgumentValue: value, ContextArguments: ctxArgs}
}

func completeTemplate(server, uri, arg, value string) *toolsvcv1.CompleteRequest {
	return &toolsvcv1.CompleteRequest{Ref: &toolsvcv1.CompleteRequest_ResourceTemplate{ResourceTemplate: &toolsvcv1.ResourceKey{Server: server, Uri: uri}},
		ArgumentName: arg, ArgumentValue: value}
}

// waitTemplates waits until ListResourceTemplates lists n templates.
func waitTemplates(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, n int) {
	t.Helper()
	eventually(t, defaultTestTimeout, fmt.Sprintf("%d resource templates listed", n), func() bool {
		r, err := c.ListResourceTemplates(ctx, &toolsvcv1.ListResourceTemplatesRequest{})
		return err == nil && len(r.GetResourceTemplates()) == n
	})
}

func TestCompleteGoSDK(t *testing.T) {
	t.Parallel()
	const (
		aliceToken = "alice-token-0123456789"
		rootToken  = "root-token-01234567890"
	)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			p := startToolsvc(t, cfg{
				Auth: &authCfg{Tokens: map[string]string{"alice": aliceToken, "root": rootToken},
					Rules: []rule{{Principal: "alice", Allow: []string{"go__*"}}, {Principal: "root", Allow: []string{"*"}}}},
				Servers: servers{
					"go":    goResourcesUpstream(t, transport, "resources,items,completions"),
					"plain": goResourcesUpstream(t, transport, "resources,items"),
					"decl":  goResourcesUpstream(t, transport, "resources,items,completions-undeclared-handler"),
				}}, "--mcp-listen", "127.0.0.1:0")
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			c := p.client
			root := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+rootToken)
			alice := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+aliceToken)
			waitTemplates(t, root, c, 3)

			// A prompt, by its exposed name, with and without context.
			resp, err := c.Complete(root, completePrompt("go__trip", "city", "Ber", nil))
			if err != nil || !slices.Equal(resp.GetValues(), []string{"Bergen", "Berlin", "Bern"}) || resp.GetTotal() != 3 || resp.GetHasMore() {
				t.Fatalf("Complete(go__trip city Ber) = %v, %v", resp, err)
			}
			resp, err = c.Complete(root, completePrompt("go__trip", "city", "Ber", map[string]string{"country": "CH"}))
			if err != nil || !slices.Equal(resp.GetValues(), []string{"Bern"}) {
				t.Fatalf("Complete(go__trip city Ber, country CH) = %v, %v", resp, err)
			}

			// A template: 150 ids, 100 values a completion, has_more.
			resp, err = c.Complete(root, completeTemplate("go", "test://items/{id}", "id", ""))
			if err != nil || len(resp.GetValues()) != 100 || resp.GetValues()[0] != "1" || !resp.GetHasMore() || resp.GetTotal() != 150 {
				t.Fatalf("Complete(go test://items/{id} id \"\") = %d values, total %d, has_more %v, %v", len(resp.GetValues()), resp.GetTotal(), resp.GetHasMore(), err)
			}
			resp, err = c.Complete(root, completeTemplate("go", "test://items/{id}", "id", "14"))
			if err != nil || !slices.Equal(resp.GetValues(), []string{"14", "140", "141", "142", "143", "144", "145", "146", "147", "148", "149"}) {
				t.Fatalf("Complete(go test://items/{id} id 14) = %v, %v", resp, err)
			}
			// Without a server: alice may use only go's resources.
			resp, err = c.Complete(alice, completeTemplate("", "test://items/{id}", "id", "150"))
			if err != nil || !slices.Equal(resp.GetValues(), []string{"150"}) {
				t.Fatalf("Complete(alice, test://items/{id}, no server) = %v, %v", resp, err)
			}
			_, err = c.Complete(root, completeTemplate("", "test://items/{id}", "id", "1"))
			wantStatus(t, err, codes.InvalidArgument, "REQUEST_INVALID", "", "")
			if f := fieldViolations(err); !slices.Equal(f, []string{"resource_template.server"}) {
				t.Errorf("a template three servers list: fields %v", f)
			}
			if got := errorInfo(t, err).GetMetadata()["candidates"]; got != "decl,go,plain" {
				t.Errorf("candidates %q", got)
			}

			// An upstream without the completions capability: no values.
			for _, req := range []*toolsvcv1.CompleteRequest{completePrompt("plain__trip", "city", "B", nil), completeTemplate("plain", "test://items/{id}", "id", "1")} {
				resp, err = c.Complete(root, req)
				if err != nil || len(resp.GetValues()) != 0 || resp.Total != nil || resp.GetHasMore() {
					t.Fatalf("Complete on plain = %v, %v; want no values", resp, err)
				}
			}

			// Declared without a handler: go-sdk answers MethodNotFound.
			_, err = c.Complete(root, completePrompt("decl__trip", "city", "B", nil))
			ei := wantStatus(t, err, codes.Unimplemented, "UPSTREAM_ERROR", "decl", "")
			if ei.GetMetadata()["upstream_code"] != "-32601" || ei.GetMetadata()["prompt"] != "decl__trip" {
				t.Errorf("metadata %v", ei.GetMetadata())
			}

			// Refusals name their field.
			for _, tc := range []struct {
				name   string
				who    context.Context
				req    *toolsvcv1.CompleteRequest
				code   codes.Code
				reason string
				field  string
			}{
				{"no argument", root, completePrompt("go__trip", "", "B", nil), codes.InvalidArgument, "REQUEST_INVALID", "argument_name"},
				{"no ref", root, &toolsvcv1.CompleteRequest{ArgumentName: "city"}, codes.InvalidArgument, "REQUEST_INVALID", "ref"},
				{"unknown prompt", root, completePrompt("go__nope", "city", "", nil), codes.NotFound, "PROMPT_NOT_FOUND", "prompt"},
				{"unknown template", root, completeTemplate("go", "test://nope/{x}", "x", ""), codes.NotFound, "RESOURCE_NOT_FOUND", "resource_template.uri"},
				{"unknown server", root, completeTemplate("nope", "test://items/{id}", "id", ""), codes.NotFound, "SERVER_NOT_FOUND", "resource_template.server"},
				{"outside the rules", alice, completePrompt("plain__trip", "city", "", nil), codes.PermissionDenied, "PERMISSION_DENIED", ""},
			} {
				_, err := c.Complete(tc.who, tc.req)
				wantStatus(t, err, tc.code, tc.reason, "", "")
				if f := fieldViolations(err); tc.field != "" && !slices.Equal(f, []string{tc.field}) {
					t.Errorf("%s: fields %v, want %s", tc.name, f, tc.field)
				}
			}

			// The MCP front door, in both protocol eras, with go-sdk's client.
			for _, version := range []string{"2025-11-25", ""} {
				connect := func(token string) *mcp.ClientSession {
					cs, err := mcp.NewClient(&mcp.Implementation{Name: "complete-test", Version: "1"}, nil).Connect(ctx,
						&mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp",
							HTTPClient: &http.Client{Transport: headerRoundTripper{"Authorization": "Bearer " + token}}},
						&mcp.ClientSessionOptions{ProtocolVersion: version})
					if err != nil {
						t.Fatalf("connect (%q): %v", version, err)
					}
					t.Cleanup(func() { _ = cs.Close() })
					return cs
				}
				fa, fr := connect(aliceToken), connect(rootToken)
				if caps := fa.InitializeResult().Capabilities; caps.Completions == nil {
					t.Fatalf("front door (%q): no completions capability: %+v", version, caps)
				}
				res, err := fa.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "go__trip"},
					Argument: mcp.CompleteParamsArgument{Name: "city", Value: "B"}, Context: &mcp.CompleteContext{Arguments: map[string]string{"country": "DE"}}})
				if err != nil || !slices.Equal(res.Completion.Values, []string{"Bergen", "Berlin", "Bremen"}) || res.Completion.Total != 3 {
					t.Fatalf("front door (%q) ref/prompt go__trip: %+v, %v", version, res, err)
				}
				res, err = fa.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "test://items/{id}"},
					Argument: mcp.CompleteParamsArgument{Name: "id", Value: "7"}})
				if err != nil || !slices.Equal(res.Completion.Values, []string{"7", "70", "71", "72", "73", "74", "75", "76", "77", "78", "79"}) {
					t.Fatalf("front door (%q) ref/resource for alice: %+v, %v", version, res, err)
				}
				for _, tc := range []struct {
					name   string
					cs     *mcp.ClientSession
					p      *mcp.CompleteParams
					code   int64
					reason string
					field  string
				}{
					{"a template three servers list", fr, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "test://items/{id}"}, Argument: mcp.CompleteParamsArgument{Name: "id"}},
						jsonrpc.CodeInvalidParams, "REQUEST_INVALID", "ref.uri"},
					{"no argument", fr, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "go__trip"}},
						jsonrpc.CodeInvalidParams, "REQUEST_INVALID", "argument.name"},
					// A server error, not -32601: the front door has the
					// method, its upstream has not (and go-sdk would send a
					// -32601 without its data: service/mcpfront/gosdk.go).
					{"declared without a handler", fr, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "decl__trip"}, Argument: mcp.CompleteParamsArgument{Name: "city"}},
						-32000, "UPSTREAM_ERROR", ""},
				} {
					_, err := tc.cs.Complete(ctx, tc.p)
					var werr *jsonrpc.Error
					if !errors.As(err, &werr) || werr.Code != tc.code {
						t.Errorf("front door (%q) %s: %v, want JSON-RPC %d", version, tc.name, err, tc.code)
						continue
					}
					var data struct {
						Reason string   `json:"reason"`
						Fields []string `json:"fields"`
					}
					if err := json.Unmarshal(werr.Data, &data); err != nil || data.Reason != tc.reason || (tc.field != "" && !slices.Equal(data.Fields, []string{tc.field})) {
						t.Errorf("front door (%q) %s: data %s, want %s with field %q", version, tc.name, werr.Data, tc.reason, tc.field)
					}
				}
			}

			if transport != "stdio" {
				return
			}
			// The CLI: values one a line; errors with their reason and field.
			run := func(args ...string) (string, error) {
				return execToolsvc(ctx, p.addr, append(args, "--token", rootToken)...)
			}
			out, err := run("complete", "--prompt", "go__trip", "--arg", "city", "--value", "Ber", "--context", "country=CH")
			if err != nil || out != "Bern\n(1 of 1)\n" {
				t.Errorf("toolsvc complete --prompt: %v\n%s", err, out)
			}
			out, err = run("complete", "--template", "go", "test://items/{id}", "--arg", "id", "--value", "1")
			if err != nil || !strings.HasPrefix(out, "1\n10\n11\n") || !strings.HasSuffix(out, "(62 of 62)\n") {
				t.Errorf("toolsvc complete --template:  %v\n%s", err, out)
			}
			out, err = run("complete", "--template", "plain", "test://items/{id}", "--arg", "id")
			if err != nil || out != "no completions\n" {
				t.Errorf("toolsvc complete on plain: %v\n%s", err, out)
			}
			out, err = run("complete", "--template", "go", "test://nope/{x}", "--arg", "x")
			if err == nil || !strings.Contains(out, "RESOURCE_NOT_FOUND") || !strings.Contains(out, "resource_template.uri") {
				t.Errorf("toolsvc complete on an unknown template: %v\n%s", err, out)
			}
			out, err = run("complete", "--prompt", "go__trip")
			if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, "usage: toolsvc complete") {
				t.Errorf("toolsvc complete without --arg: %v\n%s", err, out)
			}
		})
	}
}

// TestCompleteOtherSDKs: completion against servers written with the
// TypeScript SDK (server-everything, its completable prompt and resource
// templates) and the Python SDK (tests/python/resources_server.py), over
// stdio and streamable HTTP.
func TestCompleteOtherSDKs(t *testing.T) {
	t.Parallel()
	entry := nodePath(t, everythingEntry)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			ts := upstream{Command: "node", Args: []string{entry, "stdio"}}
			if transport == "http" {
				ts = goHTTP(startEverythingHTTP(t), upstream{})
			}
			py, _, _ := startResourcesPython(t, transport, upstream{})
			p := startToolsvc(t, cfg{Servers: servers{"everything": ts, "py": py}})
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			c := p.client
			waitTemplates(t, ctx, c, 3) // everything's two, py's one
			eventually(t, defaultTestTimeout, "the prompts listed", func() bool {
				ps := listPrompts(t, ctx, c)
				return findPrompt(ps, "everything__completable-prompt") != nil && findPrompt(ps, "py__greet") != nil
			})
			for _, tc := range []struct {
				name string
				req  *toolsvcv1.CompleteRequest
				want []string
			}{
				{"ts prompt", completePrompt("everything__completable-prompt", "department", "S", nil), []string{"Sales", "Support"}},
				{"ts prompt with context", completePrompt("everything__completable-prompt", "name", "", map[string]string{"department": "Sales"}), []string{"David", "Eve", "Frank"}},
				{"ts template", completeTemplate("everything", "demo://resource/dynamic/text/{resourceId}", "resourceId", "12"), []string{"12"}},
				{"ts template, server inferred", completeTemplate("", "demo://resource/dynamic/blob/{resourceId}", "resourceId", "x"), []string{}},
				{"python prompt", completePrompt("py__greet", "style", "f", nil), []string{"formal"}},
				{"python template", completeTemplate("py", "py://items/{id}", "id", ""), []string{"1", "2", "3"}},
			} {
				resp, err := c.Complete(ctx, tc.req)
				if err != nil || !slices.Equal(resp.GetValues(), tc.want) {
					t.Errorf("%s: %v, %v; want %v", tc.name, resp, err, tc.want)
				}
			}
		})
	}
}
