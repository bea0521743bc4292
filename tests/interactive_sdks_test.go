package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Tools that ask (docs/interactive.md) against the other SDKs' servers
// and clients: tests/node/ask_server.mjs (@modelcontextprotocol/sdk 1.32.2,
// low-level Server: elicitInput form and URL, createMessage, listRoots, each
// with relatedRequestId) and tests/python/ask_server.py (mcp 2.3.0,
// MCPServer: ctx.elicit, ctx.elicit_url, ctx.session.create_message,
// ctx.session.list_roots, and the SDK's resolver, Resolve(Elicit)), reached
// over gRPC (raw, the Python package's call_tool(on_input=...), the
// TypeScript package's callTool({onInput})) and through the MCP front door
// (go-sdk's, the TypeScript and the Python SDK clients). The go-sdk server's cells are
// TestInteractiveCalls and TestInteractiveFrontDoor (interactive_test.go).
// The cell table is docs/interactive-cells.md.
//
// What the SDKs do, as measured here (not as documented):
//   - TypeScript SDK 1.32.2 speaks 2025-11-25 at most: a server asked for
//     2026-07-28 (protocolVersion pinned, on stdio or stateless HTTP, or
//     auto) answers 2025-11-25, and its tools ask as below. It sends
//     form and URL elicitation (url only when the client declared
//     elicitation.url), sampling and roots mid-call; with relatedRequestId they
//     ride the call's POST response stream. Over stdio and stateful HTTP every
//     kind works. Stateless HTTP (a Server per POST, the SDK's own pattern)
//     cannot: elicitInput throws "Client does not support form elicitation."
//     (the fresh Server never saw initialize, so it knows no client
//     capabilities) and createMessage/listRoots, which check nothing, do ask,
//     but the answer is POSTed to another fresh Server, which logs "Received a
//     response for an unknown message ID" while the asking call waits forever.
//   - Python SDK 2.3.0 speaks 2026-07-28 too. On a 2025-era session
//     (stdio, stateful HTTP) ctx.elicit, ctx.elicit_url, create_message and
//     list_roots ask mid-call; list_roots takes no related request id, so over
//     HTTP its request comes on the standalone GET stream, and toolsvc can give
//     it to a call only while that call is the session's only one in flight
//     (a second call's roots request gets the policy). On 2026-07-28 (auto
//     moves its stateless server there; or pinned) those four raise
//     NoBackChannelError, a JSON-RPC error -32600 "no back-channel for
//     server-initiated requests" (gRPC INTERNAL), on stdio as over HTTP;
//     only the resolver (Annotated[..., Resolve(fn)], fn returning Elicit
//     or Sample) asks, as an input_required result that toolsvc relays
//     (replica_bound false). The resolver's ListRoots is sent as
//     {"method": "roots/list"} without params, which go-sdk v1.8.0 cannot
//     decode (InputRequestMap.UnmarshalJSON): INTERNAL UPSTREAM_MALFORMED
//     (the session stays). Its
//     stateless HTTP pinned to 2025-11-25 has no back channel at all: every
//     tool, the resolver's too, fails the same way.
//   - Front door: go-sdk's and the TypeScript SDK's clients (2025-11-25) and the Python SDK
//     client in legacy mode (2025-11-25) declare the capabilities and are
//     asked with server-to-client requests, whatever the upstream's SDK or
//     era. The Python SDK client in auto mode speaks 2026-07-28, for which the
//     front door does not yet return input_required: it gets the policy's
//     answers (docs/interactive.md, "Not yet").

// askServers are the asking upstreams of one toolsvc, by server name; procs
// holds the HTTP servers' processes (the test reads their logs).
type askServers struct {
	servers servers
	procs   map[string]*proc
}

// startAskServers starts the TypeScript and Python ask servers over HTTP
// (stateful and stateless) and returns them, with the stdio ones, as
// toolsvc upstreams named <sdk>-<transport>[<pinned era>]:
//
//	ts-stdio ts-http ts-stateless py-stdio py-http py-stateless
//	py-http26 (py-http's server, pinned to 2026-07-28)
//	py-stateless25 (py-stateless's server, pinned to 2025-11-25)
//	ts-stdio26, py-stdio26 (their stdio servers, pinned to 2026-07-28)
func startAskServers(t *testing.T, names ...string) askServers {
	t.Helper()
	ts := nodePath(t, "ask_server.mjs")
	py := venvBin(t, "mcp", "python")
	pyScript := filepath.Join(rootDir(t), "tests", "python", "ask_server.py")
	a := askServers{servers: servers{}, procs: map[string]*proc{}}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, n := range names {
		switch n {
		case "ts-stdio":
			a.servers[n] = upstream{Command: "node", Args: []string{ts, "stdio"}}
		case "py-stdio":
			a.servers[n] = upstream{Command: py, Args: []string{pyScript, "stdio"}}
		case "ts-http", "ts-stateless":
			mode := map[string]string{"ts-http": "http", "ts-stateless": "http-stateless"}[n]
			p := startProc(t, exec.Command("node", ts, mode))
			a.procs[n] = p
			a.servers[n] = upstream{URL: p.log.waitFor(t, urlLineRE, 30*time.Second)}
		case "py-http", "py-stateless":
			mode := map[string]string{"py-http": "streamable-http", "py-stateless": "stateless-http"}[n]
			port := freePort(t)
			p := startProc(t, exec.Command(py, pyScript, mode, fmt.Sprint(port)))
			waitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 30*time.Second, p)
			a.procs[n] = p
			a.servers[n] = upstream{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
		}
	}
	for pinned, of := range map[string]struct{ server, version string }{
		"py-http26": {"py-http", "2026-07-28"}, "py-stateless25": {"py-stateless", "2025-11-25"},
		"ts-stdio26": {"ts-stdio", "2026-07-28"}, "py-stdio26": {"py-stdio", "2026-07-28"}} {
		if want[pinned] {
			u, ok := a.servers[of.server]
			if !ok {
				t.Fatalf("%s needs %s started too", pinned, of.server)
			}
			u.ProtocolVersion = of.version
			a.servers[pinned] = u
		}
	}
	return a
}

// askKinds are the ask tools both SDK servers have: the kind each asks for
// and its result once answer() (interactive_test.go) has answered.
var askKinds = []struct{ tool, kind, want string }{
	{"ask_name", "elicitation", "hello Ada"},
	{"ask_url", "elicitation_url", "url accept"},
	{"ask_sample", "sampling", "model=hi there"},
	{"ask_roots", "roots", "roots=file:///work"},
}

// resolvedKinds are the Python server's resolver tools (either era).
var resolvedKinds = []struct{ tool, kind, want string }{
	{"ask_resolved", "elicitation", "hello Ada"},
	{"ask_resolved_sample", "sampling", "model=hi there"},
	{"ask_resolved_roots", "roots", "roots=file:///work"},
}

// inputKind names the kind of an input request.
func inputKind(r *toolsvcv1.InputRequest) string {
	switch r.GetRequest().(type) {
	case *toolsvcv1.InputRequest_Elicitation:
		return "elicitation"
	case *toolsvcv1.InputRequest_ElicitationUrl:
		return "elicitation_url"
	case *toolsvcv1.InputRequest_Sampling:
		return "sampling"
	case *toolsvcv1.InputRequest_Roots:
		return "roots"
	}
	return fmt.Sprintf("%T", r.GetRequest())
}

// askOnce calls tool offering every kind, wants one round asking for one
// request of kind (replica-bound as bound), answers it with answer(), and
// returns the result's text.
func askOnce(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, tool, kind string, bound bool) string {
	t.Helper()
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	ir := res.GetInputRequired()
	if ir == nil || len(ir.GetRequests()) != 1 || inputKind(ir.GetRequests()[0]) != kind {
		t.Fatalf("%s = %v, want input_required with one %s request", tool, res, kind)
	}
	if ir.GetReplicaBound() != bound {
		t.Errorf("%s: replica_bound = %v, want %v", tool, ir.GetReplicaBound(), bound)
	}
	res, err = c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput,
		InputResponses: answer(t, ir.GetRequests(), "Ada"), RequestState: ir.GetRequestState()})
	if err != nil {
		t.Fatalf("%s retry: %v", tool, err)
	}
	if res.GetInputRequired() != nil || res.GetIsError() {
		t.Fatalf("%s retry = %v, want the tool's result", tool, res)
	}
	return resultText(res)
}

// wantNoBackChannel checks a Python SDK server's refusal to ask on a
// connection without a back channel: its JSON-RPC error -32600, INTERNAL.
func wantNoBackChannel(t *testing.T, err error, server, tool string) {
	t.Helper()
	ei := wantStatus(t, err, codes.Internal, "UPSTREAM_ERROR", server, tool)
	if ei.GetMetadata()["upstream_code"] != "-32600" || !strings.Contains(status.Convert(err).Message(), "no back-channel for server-initiated requests") {
		t.Errorf("%s: %v (metadata %v), want the SDK's -32600 no back-channel error", tool, err, ei.GetMetadata())
	}
}

// TestInteractiveSDKServers: over gRPC, each SDK server × transport asks
// for each kind and the answer comes back in its result; a caller without
// input_capabilities gets the policy's answers; the cells an SDK cannot
// serve fail the way measured (see the comment at the top).
func TestInteractiveSDKServers(t *testing.T) {
	t.Parallel()
	a := startAskServers(t, "ts-stdio", "ts-http", "ts-stateless", "py-stdio", "py-http", "py-stateless", "py-http26", "py-stateless25", "ts-stdio26", "py-stdio26")
	// connectTimeout: Python and Node interpreters start together on a
	// loaded 2-core box.
	p := startToolsvc(t, cfg{ConnectTimeout: "20s", Servers: a.servers})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	for server, want := range map[string]string{"ts-stdio": "2025-11-25", "ts-http": "2025-11-25", "ts-stateless": "2025-11-25",
		"py-stdio": "2025-11-25", "py-http": "2025-11-25", "py-stateless": "2026-07-28", "py-http26": "2026-07-28", "py-stateless25": "2025-11-25",
		"ts-stdio26": "2025-11-25", "py-stdio26": "2026-07-28"} {
		if got := serverStatus(t, ctx, p.client, server).GetProtocolVersion(); got != want {
			t.Errorf("%s negotiated %q, want %q", server, got, want)
		}
	}

	// The cells that ask mid-call (2025-11-25): every kind, parked.
	for _, server := range []string{"ts-stdio", "ts-http", "py-stdio", "py-http", "ts-stdio26"} {
		t.Run(server, func(t *testing.T) {
			for _, k := range askKinds {
				if got := askOnce(t, ctx, p.client, server+"__"+k.tool, k.kind, true); got != k.want {
					t.Errorf("%s__%s = %q, want %q", server, k.tool, got, k.want)
				}
			}
			if strings.HasPrefix(server, "py-") {
				for _, k := range resolvedKinds {
					if got := askOnce(t, ctx, p.client, server+"__"+k.tool, k.kind, true); got != k.want {
						t.Errorf("%s__%s = %q, want %q", server, k.tool, got, k.want)
					}
				}
			}
			t.Run("no input_capabilities: the policy", func(t *testing.T) {
				for tool, want := range map[string]string{"ask_name": "declined", "ask_url": "url decline", "ask_roots": "roots="} {
					res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__" + tool})
					if err != nil || res.GetInputRequired() != nil || resultText(res) != want {
						t.Errorf("%s__%s without input_capabilities = %v, %v; want %q", server, tool, res, err, want)
					}
				}
				// Sampling has no policy answer: the upstream is refused,
				// and says so its own way (TypeScript: the tool's error
				// result; Python: the exception becomes a JSON-RPC error).
				tool := server + "__ask_sample"
				res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool})
				const refused = "no caller of this gateway can answer this request now"
				if strings.HasPrefix(server, "ts-") {
					if err != nil || !res.GetIsError() || !strings.Contains(resultText(res), refused) {
						t.Errorf("%s without input_capabilities = %v, %v; want a tool error %q", tool, res, err, refused)
					}
				} else {
					ei := wantStatus(t, err, codes.Internal, "UPSTREAM_ERROR", server, tool)
					if !strings.Contains(status.Convert(err).Message(), refused) || ei.GetMetadata()["upstream_code"] != "-32600" {
						t.Errorf("%s without input_capabilities: %v, want the refusal %q as -32600", tool, err, refused)
					}
				}
			})
		})
	}

	// Two interactive calls at once on one HTTP session: ask_name's request
	// rides its call's response stream on both SDKs, so both are asked.
	// Python's list_roots has no related request: it comes on the GET
	// stream, and toolsvc, with two calls in flight, cannot tell whose it is,
	// so the second call gets the policy's (empty) roots; TypeScript's rides
	// the call's stream and is asked.
	t.Run("concurrent on one HTTP session", func(t *testing.T) {
		for _, tc := range []struct{ server, tool, wantSecond string }{
			{"ts-http", "ask_name", ""}, {"py-http", "ask_name", ""}, {"ts-http", "ask_roots", ""}, {"py-http", "ask_roots", "roots="},
		} {
			name := tc.server + "__" + tc.tool
			first, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: name, InputCapabilities: allInput})
			if err != nil || first.GetInputRequired() == nil {
				t.Fatalf("%s: %v, %v", name, first, err)
			}
			second, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: name, InputCapabilities: allInput})
			if err != nil {
				t.Fatalf("%s, second: %v", name, err)
			}
			if tc.wantSecond != "" {
				if second.GetInputRequired() != nil || resultText(second) != tc.wantSecond {
					t.Errorf("%s, second while the first waits = %v; want the policy's %q", name, second, tc.wantSecond)
				}
			} else if second.GetInputRequired() == nil {
				t.Errorf("%s, second while the first waits = %v; want input_required", name, second)
			} else {
				res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: name, InputCapabilities: allInput,
					InputResponses: answer(t, second.GetInputRequired().GetRequests(), "Second"), RequestState: second.GetInputRequired().GetRequestState()})
				if want := map[string]string{"ask_name": "hello Second", "ask_roots": "roots=file:///work"}[tc.tool]; err != nil || resultText(res) != want {
					t.Errorf("%s, second answered: %v, %v; want %q", name, res, err, want)
				}
			}
			ir := first.GetInputRequired()
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: name, InputCapabilities: allInput,
				InputResponses: answer(t, ir.GetRequests(), "First"), RequestState: ir.GetRequestState()})
			if want := map[string]string{"ask_name": "hello First", "ask_roots": "roots=file:///work"}[tc.tool]; err != nil || resultText(res) != want {
				t.Errorf("%s, first answered: %v, %v; want %q", name, res, err, want)
			}
		}
	})

	// Python on 2026-07-28: only the resolver asks (relayed, not parked);
	// ctx.elicit and the session's requests have no back channel.
	for _, server := range []string{"py-stateless", "py-http26", "py-stdio26"} {
		t.Run(server, func(t *testing.T) {
			for _, k := range resolvedKinds[:2] {
				if got := askOnce(t, ctx, p.client, server+"__"+k.tool, k.kind, false); got != k.want {
					t.Errorf("%s__%s = %q, want %q", server, k.tool, got, k.want)
				}
			}
			// The resolver's roots request is {"method": "roots/list"}, no
			// params (optional in the spec); go-sdk v1.8.0's
			// InputRequestMap.UnmarshalJSON unmarshals the absent params and
			// fails ("unexpected end of JSON input"), so toolsvc never sees
			// the result: INTERNAL UPSTREAM_MALFORMED, and the session
			// stays. A go-sdk bug; when it is fixed this fails, and roots
			// joins resolvedKinds above.
			_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_resolved_roots", InputCapabilities: allInput})
			wantStatus(t, err, codes.Internal, "UPSTREAM_MALFORMED", server, server+"__ask_resolved_roots")
			p.log.waitFor(t, regexp.MustCompile(`server=`+server+` request="call \\"ask_resolved_roots\\"" error=".*unexpected end of JSON input`), 10*time.Second)
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_resolved"})
			if err != nil || res.GetInputRequired() != nil || resultText(res) != "declined" {
				t.Errorf("%s__ask_resolved without input_capabilities = %v, %v; want the policy's decline", server, res, err)
			}
			for _, k := range askKinds {
				_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__" + k.tool, InputCapabilities: allInput})
				wantNoBackChannel(t, err, server, server+"__"+k.tool)
			}
		})
	}
	// Python's stateless HTTP on 2025-11-25: no back channel for anything.
	t.Run("py-stateless25", func(t *testing.T) {
		for _, tool := range []string{"ask_name", "ask_url", "ask_sample", "ask_roots", "ask_resolved", "ask_resolved_sample", "ask_resolved_roots"} {
			_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "py-stateless25__" + tool, InputCapabilities: allInput})
			wantNoBackChannel(t, err, "py-stateless25", "py-stateless25__"+tool)
		}
	})

	// TypeScript's stateless HTTP: a Server per POST.
	t.Run("ts-stateless", func(t *testing.T) {
		for tool, want := range map[string]string{"ask_name": "ask_name: Client does not support form elicitation.",
			"ask_url": "ask_url: Client does not support url elicitation."} {
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "ts-stateless__" + tool, InputCapabilities: allInput})
			if err != nil || !res.GetIsError() || resultText(res) != want {
				t.Errorf("ts-stateless__%s = %v, %v; want the tool error %q", tool, res, err, want)
			}
		}
		// Sampling is asked, but its answer reaches a Server that never
		// asked; the call waits until its caller gives up.
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "ts-stateless__ask_sample", InputCapabilities: allInput})
		if err != nil || res.GetInputRequired() == nil || inputKind(res.GetInputRequired().GetRequests()[0]) != "sampling" {
			t.Fatalf("ts-stateless__ask_sample = %v, %v; want input_required for sampling", res, err)
		}
		ir := res.GetInputRequired()
		retry := &toolsvcv1.CallToolRequest{Name: "ts-stateless__ask_sample", InputCapabilities: allInput,
			InputResponses: answer(t, ir.GetRequests(), "Ada"), RequestState: ir.GetRequestState()}
		retryCtx, retryCancel := context.WithCancel(ctx)
		defer retryCancel()
		retried := make(chan error, 1)
		go func() {
			_, err := p.client.CallTool(retryCtx, retry)
			retried <- err
		}()
		a.procs["ts-stateless"].log.waitFor(t, regexp.MustCompile(`ask-ts: Received a response for an unknown message ID`), 30*time.Second)
		retryCancel()
		if err := <-retried; status.Code(err) != codes.Canceled {
			t.Errorf("the retry whose answer went astray = %v, want it still waiting (cancelled by its caller)", err)
		}
	})
}

// TestInteractiveSDKClientPackages: the Python package's
// call_tool(on_input=...) and the TypeScript package's
// callTool({onInput}) answer the SDK servers' questions over gRPC; each
// answer comes back in its tool's result.
func TestInteractiveSDKClientPackages(t *testing.T) {
	t.Parallel()
	a := startAskServers(t, "ts-stdio", "ts-http", "py-stdio", "py-http", "py-stateless")
	// go-sdk's ask_twice asks twice mid-call (two rounds); ask_all asks
	// three kinds in one round.
	a.servers["go"] = upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}}
	p := startToolsvc(t, cfg{ConnectTimeout: "20s", Servers: a.servers})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	root := rootDir(t)
	py, pyEnv := pythonClient(t, root)
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal(err)
	}
	type report struct {
		Asked   []string          `json:"asked"`
		Results map[string]string `json:"results"`
	}
	for _, tc := range []struct {
		name  string
		cmd   []string
		env   []string
		tools []string
		asked []string // in order
		then  []string // then these, sorted (go-sdk's ask_all asks from a map)
		want  map[string]string
	}{
		{"python", []string{py, filepath.Join(root, "tests", "python", "ask_grpc_client.py")}, pyEnv,
			[]string{"py-http__ask_name", "py-http__ask_url", "py-http__ask_sample", "py-http__ask_roots", "ts-stdio__ask_name", "py-stateless__ask_resolved", "go__ask_twice"},
			[]string{"elicitation", "elicitation_url", "sampling", "roots", "elicitation", "elicitation", "elicitation", "elicitation"}, nil,
			map[string]string{"go__ask_twice": "Py+Py", "py-http__ask_name": "hello Py", "py-http__ask_url": "url accept", "py-http__ask_sample": "model=hi from py",
				"py-http__ask_roots": "roots=file:///py", "ts-stdio__ask_name": "hello Py", "py-stateless__ask_resolved": "hello Py"}},
		{"typescript", []string{"node", filepath.Join(root, "tests", "node", "ask_grpc_client.mjs")}, nil,
			[]string{"ts-http__ask_name", "ts-http__ask_url", "ts-http__ask_sample", "ts-http__ask_roots", "py-stdio__ask_sample", "py-stateless__ask_resolved", "go__ask_all"},
			[]string{"elicitation", "elicitationUrl", "sampling", "roots", "sampling", "elicitation"}, []string{"elicitation", "roots", "sampling"},
			map[string]string{"go__ask_all": "name=Ts model=hi from ts roots=file:///ts", "ts-http__ask_name": "hello Ts", "ts-http__ask_url": "url accept", "ts-http__ask_sample": "model=hi from ts",
				"ts-http__ask_roots": "roots=file:///ts", "py-stdio__ask_sample": "model=hi from ts", "py-stateless__ask_resolved": "hello Ts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(ctx, tc.cmd[0], append(tc.cmd[1:], append([]string{p.addr}, tc.tools...)...)...)
			cmd.Env = append(cmd.Environ(), tc.env...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s client: %v\nstdout:\n%s\nstderr:\n%s", tc.name, err, out, stderr.String())
			}
			var r report
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("report %q: %v", out, err)
			}
			if len(r.Asked) != len(tc.asked)+len(tc.then) || !slices.Equal(r.Asked[:len(tc.asked)], tc.asked) ||
				!slices.Equal(slices.Sorted(slices.Values(r.Asked[len(tc.asked):])), tc.then) {
				t.Errorf("%s client was asked %v, want %v then %v in any order", tc.name, r.Asked, tc.asked, tc.then)
			}
			for tool, want := range tc.want {
				if r.Results[tool] != want {
					t.Errorf("%s client: %s = %q, want %q", tc.name, tool, r.Results[tool], want)
				}
			}
		})
	}
}

// TestInteractiveSDKFrontDoor: go-sdk's, the TypeScript SDK's and the
// Python SDK's clients (2025-11-25, declaring elicitation, sampling and roots with
// handlers) are asked on their sessions by tools of every SDK server and
// both eras, and the calls complete with their answers; the Python client
// on 2026-07-28 gets the policy's answers.
func TestInteractiveSDKFrontDoor(t *testing.T) {
	t.Parallel()
	a := startAskServers(t, "ts-http", "py-stdio", "py-stateless")
	a.servers["go"] = upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}}
	p := startToolsvc(t, cfg{ConnectTimeout: "20s", Servers: a.servers}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	base := "http://" + p.mcpAddr
	tools := []string{"ts-http__ask_name", "ts-http__ask_url", "ts-http__ask_sample", "ts-http__ask_roots",
		"py-stdio__ask_name", "py-stdio__ask_url", "py-stdio__ask_sample", "py-stdio__ask_roots", "py-stateless__ask_resolved", "go__ask_all"}
	asked := map[string]string{
		"ts-http__ask_name": "hello Front", "ts-http__ask_url": "url accept", "ts-http__ask_sample": "model=hi there", "ts-http__ask_roots": "roots=file:///front",
		"py-stdio__ask_name": "hello Front", "py-stdio__ask_url": "url accept", "py-stdio__ask_sample": "model=hi there", "py-stdio__ask_roots": "roots=file:///front",
		"py-stateless__ask_resolved": "hello Front", "go__ask_all": "name=Front model=hi there roots=file:///front"}
	askedKinds := "elicitation elicitation_url sampling roots elicitation elicitation_url sampling roots elicitation"
	py := venvBin(t, "mcp", "python")
	for _, tc := range []struct {
		name, protocol string
		cmd            []string // nil: go-sdk's client, in this process
	}{
		{"go-sdk", "2025-11-25", nil},
		{"ts-sdk", "2025-11-25", []string{nodePath(t, node22), filepath.Join(bin.nodeDir, "ask_front_client.mjs"), base}},
		{"py-sdk-legacy", "2025-11-25", []string{py, filepath.Join(rootDir(t), "tests", "python", "ask_front_client.py"), base + "/mcp", "legacy"}},
		// A 2026-07-28 client gets input_required and retries with its
		// answers (the Python SDK's client does so with the same handlers).
		{"py-sdk-auto", "2026-07-28", []string{py, filepath.Join(rootDir(t), "tests", "python", "ask_front_client.py"), base + "/mcp", "auto"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r askFrontReport
			if tc.cmd == nil {
				r = goAskFront(t, ctx, base+"/mcp", tools)
			} else {
				cmd := exec.CommandContext(ctx, tc.cmd[0], append(tc.cmd[1:], tools...)...)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", tc.name, err, out, stderr.String())
				}
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
					t.Fatalf("report %q: %v", out, err)
				}
			}
			t.Logf("%s: protocol %s, asked %v, results %v", tc.name, r.Protocol, r.Asked, r.Results)
			if r.Protocol != tc.protocol {
				t.Errorf("protocol = %q, want %q", r.Protocol, tc.protocol)
			}
			// go__ask_all asks its three at once, in a map: their order is not
			// fixed.
			if got := strings.Join(r.Asked, " "); !strings.HasPrefix(got, askedKinds+" ") || len(r.Asked) != 12 ||
				!slices.Equal(slices.Sorted(slices.Values(r.Asked[9:])), []string{"elicitation", "roots", "sampling"}) {
				t.Errorf("asked %v, want %s then go's three", r.Asked, askedKinds)
			}
			for tool, want := range asked {
				if r.Results[tool] != want {
					t.Errorf("%s = %q, want %q", tool, r.Results[tool], want)
				}
			}
		})
	}
}

// askFrontReport is what the front-door clients that answer (ask_front_client.mjs,
// ask_front_client.py, goAskFront) report.
type askFrontReport struct {
	Protocol string            `json:"protocol"`
	Asked    []string          `json:"asked"`
	Results  map[string]string `json:"results"`
}

// goAskFront is go-sdk's client doing what ask_front_client.mjs does: a
// 2025-11-25 session that declares elicitation (form and URL), sampling and
// roots, answers as that script does, and calls tools in order.
func goAskFront(t *testing.T, ctx context.Context, endpoint string, tools []string) askFrontReport {
	t.Helper()
	r := askFrontReport{Results: map[string]string{}}
	var mu sync.Mutex // handlers run on the session's goroutines
	note := func(kind string) {
		mu.Lock()
		r.Asked = append(r.Asked, kind)
		mu.Unlock()
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "ask-front-go", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}, Sampling: &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode == "url" {
				note("elicitation_url")
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			note("elicitation")
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Front"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			note("sampling")
			return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi there"}, Model: "front-model"}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///front", Name: "front"})
	// go-sdk answers roots/list itself from AddRoots: count the requests on
	// the way in.
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "roots/list" {
				note("roots")
			}
			return next(ctx, method, req)
		}
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r.Protocol = cs.InitializeResult().ProtocolVersion
	for _, name := range tools {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		switch {
		case err != nil:
			r.Results[name] = "error: " + err.Error()
		case res.IsError:
			r.Results[name] = "error: " + callText(t, res)
		default:
			r.Results[name] = callText(t, res)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return r
}
