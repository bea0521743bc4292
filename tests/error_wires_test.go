package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/toolsvc/toolsvc/config"
	mcpgrpcpb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Issue #24: the same failure carries the same reason and metadata on every
// wire. Each row provokes one failure with real peers (a real unknown
// name, a real inputSchema, real auth rules and rate limits, a killed HTTP
// upstream, a breaker opened by that kill, a real result over the limit, a
// real upstream that outlives callTimeout) and sends the same tools/call
// over gRPC (CallTool), over the MCP front door (a go-sdk client) and over
// the MCP gRPC binding (model_context_protocol.Mcp's CallTool),
// then compares what each wire says.

// wireError is what one wire said about a failure, in common terms.
type wireError struct {
	code     string            // canonical code name: codes.Code.String() / data.code
	reason   string            // ErrorInfo.reason / data.reason
	meta     map[string]string // ErrorInfo.metadata / data.metadata
	retry    time.Duration     // RetryInfo.retry_delay / data.retryAfterSeconds
	hasRetry bool
	fields   []string // BadRequest field paths / data.fields
	message  string   // status message / JSON-RPC message (or the isError text)
}

func (w wireError) String() string {
	return fmt.Sprintf("code=%s reason=%s meta=%v retry=%v(%v) fields=%q message=%q", w.code, w.reason, w.meta, w.retry, w.hasRetry, w.fields, w.message)
}

// grpcWireError reads a gRPC status: ErrorInfo (domain toolsvc.dev),
// RetryInfo and BadRequest.
func grpcWireError(t *testing.T, err error) wireError {
	t.Helper()
	st, ok := status.FromError(err)
	if err == nil || !ok {
		t.Fatalf("gRPC: got %v, want a status error", err)
	}
	w := wireError{code: st.Code().String(), message: st.Message()}
	sawInfo := false
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			sawInfo = true
			if d.GetDomain() != "toolsvc.dev" {
				t.Errorf("gRPC ErrorInfo domain = %q, want toolsvc.dev", d.GetDomain())
			}
			w.reason, w.meta = d.GetReason(), d.GetMetadata()
		case *errdetails.RetryInfo:
			w.retry, w.hasRetry = d.GetRetryDelay().AsDuration(), true
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				w.fields = append(w.fields, v.GetField())
			}
		case error:
			t.Errorf("gRPC status detail does not decode: %v", d)
		}
	}
	if !sawInfo {
		t.Errorf("gRPC status %v carries no google.rpc.ErrorInfo", err)
	}
	return w
}

// frontErrorData is the front door's error data: a JSON-RPC error's data,
// or an isError result's _meta["dev.toolsvc/error"].
type frontErrorData struct {
	Code              string            `json:"code"`
	Reason            string            `json:"reason"`
	Metadata          map[string]string `json:"metadata"`
	RetryAfterSeconds *float64          `json:"retryAfterSeconds"`
	Fields            []string          `json:"fields"`
}

// mcpWireError reads the front door's answer to a failed tools/call: a
// JSON-RPC error (rpcCode its code), or an isError result carrying the
// same data in _meta (rpcCode 0).
func mcpWireError(t *testing.T, res *mcp.CallToolResult, err error) (w wireError, rpcCode int64) {
	t.Helper()
	var raw []byte
	switch {
	case err != nil:
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			t.Fatalf("MCP: got %v (%T), want a JSON-RPC error", err, err)
		}
		raw, rpcCode, w.message = werr.Data, werr.Code, werr.Message
	case res != nil && res.IsError:
		v, ok := res.Meta["dev.toolsvc/error"]
		if !ok {
			t.Fatalf("MCP: isError result without _meta[\"dev.toolsvc/error\"]: %+v", res)
		}
		var merr error
		if raw, merr = json.Marshal(v); merr != nil {
			t.Fatal(merr)
		}
		w.message = callText(t, res)
	default:
		t.Fatalf("MCP: the call succeeded (%+v), want a failure", res)
	}
	var d frontErrorData
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("MCP: error data %s does not decode as {code, reason, metadata, retryAfterSeconds, fields}: %v", raw, err)
	}
	w.code, w.reason, w.meta, w.fields = d.Code, d.Reason, d.Metadata, d.Fields
	if d.RetryAfterSeconds != nil {
		w.hasRetry = true
		w.retry = time.Duration(*d.RetryAfterSeconds * float64(time.Second))
	}
	return w, rpcCode
}

// errorRow is one failure, provoked the same way on both wires.
type errorRow struct {
	name      string
	principal string         // whose bearer token both wires send
	tool      string         // the exposed tool name
	args      map[string]any // the same arguments on both wires
	// argsJSON sends the gRPC arguments as arguments_json text instead of
	// the Struct: the field paths then differ by the documented mapping
	// (arguments_json.<path> on gRPC for arguments.<path> on MCP).
	argsJSON bool
	// provoke brings the failure about (a kill, a spent burst) and waits
	// until it holds; nil: nothing to do.
	provoke func(t *testing.T)
	// settled is a snapshot of any state that could move between the two
	// calls (nil: none); when it moved, the pair is sent again.
	settled func() string

	code    codes.Code
	reason  string
	rpcCode int64             // the JSON-RPC error code; 0: an isError result
	meta    map[string]string // metadata that must be there, with these values
	// perWire are metadata keys whose value is legitimately the wire's own
	// (checked by check instead of by equality).
	perWire []string
	retry   bool          // a retry delay is expected (on both wires)
	retryLo time.Duration // ... at least this long
	retryHi time.Duration // ... and at most this long
	fields  []string      // MCP field paths expected (nil: none)
	// repeat sends the pair this many times (0: once); every answer on
	// either wire must be the same.
	repeat int
	// sameMessage: the message is deterministic, so it must be the same.
	sameMessage bool
	// check asserts anything row-specific about the two answers.
	check func(t *testing.T, g, m wireError)

	// grpcReq and mcpReq send the row's request when it is not the
	// tools/call of tool and args (a task's ttl, a search); nil: that call.
	grpcReq func(t *testing.T) error
	mcpReq  func(t *testing.T) (wireError, int64)
	// mcpArguments: on MCP the request's fields are a tool's arguments
	// (search_tools), so its refusal is the gRPC one as bad arguments of a
	// tool: INVALID_ARGUMENT, ARGUMENTS_INVALID, an isError result, on
	// field "arguments." + the gRPC field; code, reason and rpcCode are
	// the gRPC ones, fields the MCP ones.
	mcpArguments bool
}

// TestErrorsSameOnBothWires: unknown tool, bad arguments, permission
// denied, rate limited, upstream down, circuit open, result too large and
// deadline each carry the same canonical code, reason, metadata, retry
// delay and field paths on gRPC, on the MCP front door and on the MCP gRPC
// binding, against one toolsvc with four real upstreams.
func TestErrorsSameOnBothWires(t *testing.T) {
	t.Parallel()
	const (
		mainTok      = "errwires-main-0123456789"
		limitedTok   = "errwires-limited-0123456789"
		throttledTok = "errwires-throttled-0123456789"
		maxResponse  = 8192
		bigBytes     = 20000
	)
	const searcherTok = "errwires-searcher-0123456789"
	tokens := map[string]string{"main": mainTok, "limited": limitedTok, "throttled": throttledTok, "searcher": searcherTok}

	// down: killed; its next connect attempt is at a random time within
	// the hour (backoff 1h, full jitter), so the retry delay, derived from
	// it, almost always holds still across a pair of calls (the pair is
	// sent again if an attempt fell between them); its breaker never
	// opens. brk: killed; its breaker opens at the first failure for a
	// minute.
	down, brk := newHTTPUpstream(t), newHTTPUpstream(t)
	c := cfg{
		Auth: &authCfg{
			Tokens:     tokens,
			Rules:      []rule{{Principal: "main"}, {Principal: "limited", Allow: []string{"up__echo"}}, {Principal: "throttled"}, {Principal: "searcher"}},
			RateLimits: []config.RateLimit{{Principal: "throttled", CallsPerSecond: 0.01, Burst: 1}},
		},
		Servers: servers{
			"up":   goStdio(upstream{PingInterval: "1h", RefreshInterval: "1h"}),
			"slow": goStdio(upstream{PingInterval: "1h", RefreshInterval: "1h", CallTimeout: "1s", Breaker: &breaker{Failures: -1}}),
			"down": goHTTP(down.url(), upstream{PingInterval: "200ms", PingTimeout: "300ms", RefreshInterval: "1h",
				Backoff: &backoff{Base: "1h", Max: "1h"}, Breaker: &breaker{Failures: -1}}),
			"brk": goHTTP(brk.url(), fastSupervision(upstream{Breaker: &breaker{Failures: 1, Cooldown: "1m", MaxCooldown: "1m"}})),
		}}
	// searcher lists progressively: its front door has search_tools.
	p := startToolsvc(t, c, "--mcp-listen", "127.0.0.1:0", "--max-response-bytes", strconv.Itoa(maxResponse),
		"--mcp-discovery", "progressive", "--mcp-discovery-principals", "searcher")
	base := "http://" + p.mcpAddr

	// Contexts without a deadline: a gRPC deadline would make the deadline
	// row the caller's (and the front door has none to send). A timer
	// cancels them instead, so that nothing hangs.
	root, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := time.AfterFunc(3*time.Minute, cancel)
	defer stop.Stop()
	as := func(principal string) context.Context {
		return metadata.AppendToOutgoingContext(root, "authorization", "Bearer "+tokens[principal])
	}
	fronts := map[string]*goFrontClient{}
	for principal, tok := range tokens {
		hc := &http.Client{Transport: headerRoundTripper{"Authorization": "Bearer " + tok}}
		fronts[principal] = connectGoFront(t, root, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, "")
	}
	for _, s := range []string{"up", "slow", "down", "brk"} {
		if st := serverStatus(t, as("main"), p.client, s); st.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY {
			t.Fatalf("server %s is %v before the rows, want READY", s, st.GetState())
		}
	}

	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	mcpGRPC := mcpgrpcpb.NewMcpClient(conn)
	// mcpGRPCCall is the row's request on the MCP gRPC binding: the
	// arguments as a Struct, the routing header as its clients send it.
	mcpGRPCCall := func(t *testing.T, r errorRow) error {
		t.Helper()
		req := &mcpgrpcpb.CallToolRequest{Request: &mcpgrpcpb.CallToolRequest_Request{Name: r.tool}}
		if r.args != nil {
			req.Request.Arguments = args(t, r.args)
		}
		_, err := mcpGRPC.CallTool(metadata.AppendToOutgoingContext(as(r.principal), "mcp_tool", r.tool), req)
		return err
	}

	// grpcCall is the row's request on gRPC.
	grpcCall := func(t *testing.T, r errorRow) error {
		t.Helper()
		req := &toolsvcv1.CallToolRequest{Name: r.tool}
		if r.argsJSON {
			b, err := json.Marshal(r.args)
			if err != nil {
				t.Fatal(err)
			}
			req.ArgumentsJson = string(b)
		} else if r.args != nil {
			req.Arguments = args(t, r.args)
		}
		_, err := p.client.CallTool(as(r.principal), req)
		return err
	}
	// unavailableWith probes a tool on gRPC until it fails with reason
	// (and, if set, unavailable_reason).
	unavailableWith := func(t *testing.T, tool, reason, why string) func() bool {
		return func() bool {
			_, err := p.client.CallTool(as("main"), &toolsvcv1.CallToolRequest{Name: tool, Arguments: args(t, map[string]any{"text": "probe"})})
			if status.Code(err) != codes.Unavailable {
				return false
			}
			ei := errorInfo(t, err)
			return ei.GetReason() == reason && (why == "" || ei.GetMetadata()["unavailable_reason"] == why)
		}
	}
	reconnects := func(server string) string {
		n := 0
		for _, line := range strings.Split(p.log.String(), "\n") {
			if strings.Contains(line, "upstream down; reconnecting") && strings.Contains(line+" ", " server="+server+" ") {
				n++
			}
		}
		return strconv.Itoa(n)
	}

	taskTTLRow := func(name string, ttl time.Duration) errorRow {
		raw := newRawFront(t, root, p.mcpAddr, mainTok, false) // params.task: no SDK client sends it; one per row (not shared)
		return errorRow{
			name: name, principal: "main", tool: "up__echo",
			grpcReq: func(t *testing.T) error {
				_, err := p.client.CallTool(as("main"), &toolsvcv1.CallToolRequest{Name: "up__echo",
					Arguments: args(t, map[string]any{"text": "x"}), Task: &toolsvcv1.TaskOptions{Ttl: durationpb.New(ttl)}})
				return err
			},
			mcpReq: func(t *testing.T) (wireError, int64) {
				res, e, _ := raw.call(t, root, "tools/call", map[string]any{"name": "up__echo", "arguments": map[string]any{"text": "x"},
					"task": map[string]any{"ttl": float64(ttl) / float64(time.Millisecond)}})
				return rawWireError(t, res, e)
			},
			code: codes.InvalidArgument, reason: "REQUEST_INVALID", rpcCode: jsonrpc.CodeInvalidParams,
			meta: map[string]string{"tool": "up__echo", "server": "up"}, fields: []string{"task.ttl"}, sameMessage: true,
		}
	}
	rows := []errorRow{
		{
			name: "unknown tool", principal: "main", tool: "up__nope", args: map[string]any{"text": "x"},
			code: codes.NotFound, reason: "TOOL_NOT_FOUND", rpcCode: jsonrpc.CodeInvalidParams,
			meta:        map[string]string{"tool": "up__nope"},
			sameMessage: true,
			check: func(t *testing.T, g, m wireError) {
				if _, ok := g.meta["server"]; ok {
					t.Errorf("unknown tool: metadata names a server: %v", g.meta)
				}
			},
		},
		{
			// Struct arguments on gRPC: the paths are arguments.<path> on
			// both wires.
			// Two properties additionalProperties: false refuses.
			name: "bad arguments", principal: "main", tool: "up__strict", args: map[string]any{"count": 1, "zeta": 1, "alpha": 2},
			code: codes.InvalidArgument, reason: "ARGUMENTS_INVALID", rpcCode: 0,
			meta:        map[string]string{"tool": "up__strict", "server": "up"},
			fields:      []string{"arguments.alpha", "arguments.zeta"},
			sameMessage: true,
		},
		{
			// arguments_json text on gRPC: the same violations, under the
			// field that carried them (docs/calls.md: arguments_json.<path> on gRPC,
			// arguments.<path> on MCP). The messages quote the field, so
			// they differ by exactly that name.
			// An array index.
			name: "bad arguments as arguments_json", principal: "main", tool: "up__strict", argsJSON: true,
			args: map[string]any{"count": 1, "tags": []any{"a", 3}},
			code: codes.InvalidArgument, reason: "ARGUMENTS_INVALID", rpcCode: 0,
			meta:   map[string]string{"tool": "up__strict", "server": "up"},
			fields: []string{"arguments.tags[1]"},
			check: func(t *testing.T, g, m wireError) {
				if want := strings.ReplaceAll(m.message, "arguments.", "arguments_json."); g.message != want {
					t.Errorf("gRPC message %q, want the MCP message with arguments_json for arguments: %q", g.message, want)
				}
			},
		},
		{
			// Two properties of the wrong type (a nested one and an array
			// item), sent 16 times on each wire: every answer names both,
			// in path order (the validator alone names one of them, at
			// random: service/core/arguments.go).
			name: "bad arguments, two of the wrong type", principal: "main", tool: "up__strict", repeat: 16,
			args: map[string]any{"count": 1, "opts": map[string]any{"flag": "yes"}, "tags": []any{"a", 3}},
			code: codes.InvalidArgument, reason: "ARGUMENTS_INVALID", rpcCode: 0,
			meta:        map[string]string{"tool": "up__strict", "server": "up"},
			fields:      []string{"arguments.opts.flag", "arguments.tags[1]"},
			sameMessage: true,
		},
		{
			// limited may call up__echo only.
			name: "permission denied", principal: "limited", tool: "up__ping_me", args: map[string]any{"x": 1},
			code: codes.PermissionDenied, reason: "PERMISSION_DENIED", rpcCode: -32000,
			meta:        map[string]string{"principal": "limited", "tool": "up__ping_me", "server": "up"},
			sameMessage: true,
		},
		{
			// 0.01 calls per second, burst 1: one call spends the burst and
			// the next token is 100 s away on both wires.
			name: "rate limited", principal: "throttled", tool: "up__echo", args: map[string]any{"text": "x"},
			provoke: func(t *testing.T) {
				res, err := p.client.CallTool(as("throttled"), &toolsvcv1.CallToolRequest{Name: "up__echo", Arguments: args(t, map[string]any{"text": "burst"})})
				if err != nil || resultText(res) != "burst" {
					t.Fatalf("throttled's first call (its burst) = %v, %v", res, err)
				}
			},
			code: codes.ResourceExhausted, reason: "RATE_LIMITED", rpcCode: -32000,
			meta:  map[string]string{"principal": "throttled", "limit": "calls_per_second", "tool": "up__echo", "server": "up"},
			retry: true, retryLo: 90 * time.Second, retryHi: 100 * time.Second,
		},
		{
			// The upstream process is killed; once the prober has found
			// the session dead, there is no ready session.
			name: "upstream down", principal: "main", tool: "down__echo", args: map[string]any{"text": "x"},
			provoke: func(t *testing.T) {
				down.kill()
				eventually(t, 20*time.Second, "down__echo to fail with no_session", unavailableWith(t, "down__echo", "UPSTREAM_UNAVAILABLE", "no_session"))
			},
			settled: func() string { return reconnects("down") },
			code:    codes.Unavailable, reason: "UPSTREAM_UNAVAILABLE", rpcCode: -32000,
			meta:  map[string]string{"server": "down", "tool": "down__echo", "unavailable_reason": "no_session"},
			retry: true, retryLo: time.Millisecond, retryHi: time.Hour + time.Minute,
			sameMessage: true,
		},
		{
			// The upstream process is killed; its first failure opens the
			// breaker for a minute (plus up to 10% jitter).
			name: "circuit open", principal: "main", tool: "brk__echo", args: map[string]any{"text": "x"},
			provoke: func(t *testing.T) {
				brk.kill()
				eventually(t, 20*time.Second, "brk__echo to fail with CIRCUIT_OPEN", unavailableWith(t, "brk__echo", "CIRCUIT_OPEN", ""))
			},
			code: codes.Unavailable, reason: "CIRCUIT_OPEN", rpcCode: -32000,
			meta:  map[string]string{"server": "brk", "tool": "brk__echo"},
			retry: true, retryLo: 30 * time.Second, retryHi: 67 * time.Second,
		},
		{
			// size_bytes is the size of the result in the wire's own
			// encoding (proto.Size of the CallToolResponse on gRPC, the
			// JSON of the CallToolResult on MCP), which is what each wire
			// holds to --max-response-bytes: it differs by the encodings'
			// overhead. Both must be the 20,000-byte text plus a small
			// envelope, over the limit.
			name: "result too large", principal: "main", tool: "up__big", args: map[string]any{"bytes": bigBytes},
			code: codes.ResourceExhausted, reason: "RESPONSE_TOO_LARGE", rpcCode: -32000,
			meta:    map[string]string{"server": "up", "tool": "up__big", "limit": "max-response-bytes", "limit_bytes": strconv.Itoa(maxResponse)},
			perWire: []string{"size_bytes"},
			check: func(t *testing.T, g, m wireError) {
				for wire, w := range map[string]wireError{"gRPC": g, "MCP": m} {
					n, err := strconv.Atoi(w.meta["size_bytes"])
					if err != nil || n < bigBytes || n > bigBytes+512 {
						t.Errorf("%s size_bytes = %q, want the %d-byte text plus its envelope (< 512 bytes)", wire, w.meta["size_bytes"], bigBytes)
					}
				}
			},
		},
		{
			// MCP carries no deadline, so both wires run into the server's
			// callTimeout (1s on "slow"); the gRPC call sets none either.
			name: "deadline", principal: "main", tool: "slow__wait_cancel", args: map[string]any{"id": "errwires-deadline", "ms": 30000},
			code: codes.DeadlineExceeded, reason: "DEADLINE", rpcCode: -32000,
			meta:        map[string]string{"deadline_source": "call_timeout", "server": "slow", "tool": "slow__wait_cancel"},
			sameMessage: true,
		},
		// One task.ttl rule (core.TaskTTL): the same bound, field, reason
		// and message on gRPC (a Duration) and on the front door (a
		// 2025-11-25 tools/call's params.task.ttl, milliseconds), refused
		// once the call is admitted, as every refusal of a request field.
		taskTTLRow("task ttl over a year", 400*24*time.Hour),
		taskTTLRow("task ttl under a millisecond", 500*time.Microsecond),
		{
			// search_tools' servers are arguments of a tool (a model's to
			// fix); SearchTools' servers a request field naming servers.
			name: "search, unknown server", principal: "searcher", mcpArguments: true,
			grpcReq: func(t *testing.T) error {
				_, err := p.client.SearchTools(as("searcher"), &toolsvcv1.SearchToolsRequest{Query: "echo", Servers: []string{"up", "nope"}})
				return err
			},
			mcpReq: func(t *testing.T) (wireError, int64) {
				res, err := fronts["searcher"].cs.CallTool(root, &mcp.CallToolParams{Name: "search_tools",
					Arguments: map[string]any{"query": "echo", "servers": []string{"up", "nope"}}})
				return mcpWireError(t, res, err)
			},
			code: codes.NotFound, reason: "SERVER_NOT_FOUND", fields: []string{"arguments.servers[1]"},
		},
		{
			name: "search, negative limit", principal: "searcher", mcpArguments: true,
			grpcReq: func(t *testing.T) error {
				_, err := p.client.SearchTools(as("searcher"), &toolsvcv1.SearchToolsRequest{Query: "echo", Limit: -1})
				return err
			},
			mcpReq: func(t *testing.T) (wireError, int64) {
				res, err := fronts["searcher"].cs.CallTool(root, &mcp.CallToolParams{Name: "search_tools",
					Arguments: map[string]any{"query": "echo", "limit": -1}})
				return mcpWireError(t, res, err)
			},
			code: codes.InvalidArgument, reason: "REQUEST_INVALID", fields: []string{"arguments.limit"},
		},
	}

	start := time.Now()
	t.Run("rows", func(t *testing.T) {
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				t.Parallel() // every row has its own upstream or principal, or changes nothing
				if r.provoke != nil {
					r.provoke(t)
				}
				pair := func() (g, m, n wireError, rpcCode int64) {
					for attempt := 0; ; attempt++ {
						before := ""
						if r.settled != nil {
							before = r.settled()
						}
						if r.grpcReq != nil {
							g = grpcWireError(t, r.grpcReq(t))
						} else {
							g = grpcWireError(t, grpcCall(t, r))
						}
						if r.mcpReq != nil {
							m, rpcCode = r.mcpReq(t)
						} else {
							res, err := fronts[r.principal].cs.CallTool(root, &mcp.CallToolParams{Name: r.tool, Arguments: r.args})
							m, rpcCode = mcpWireError(t, res, err)
						}
						if r.grpcReq == nil && r.mcpReq == nil {
							n = grpcWireError(t, mcpGRPCCall(t, r))
						}
						if r.settled == nil || r.settled() == before {
							return g, m, n, rpcCode
						}
						if attempt == 3 {
							t.Fatalf("the upstream's state kept moving under the pair of calls")
						}
						t.Logf("the upstream's state moved between the two calls; sending both again")
					}
				}
				g, m, n, rpcCode := pair()
				for i := 1; i < r.repeat; i++ {
					g2, m2, n2, _ := pair()
					for _, w := range []struct {
						wire        string
						first, then wireError
					}{{"gRPC", g, g2}, {"MCP", m, m2}, {"MCP over gRPC", n, n2}} {
						if w.then.code != w.first.code || w.then.reason != w.first.reason || !maps.Equal(w.then.meta, w.first.meta) ||
							!slices.Equal(w.then.fields, w.first.fields) || w.then.message != w.first.message {
							t.Errorf("%s, the same request again (#%d):\n first %v\n  then %v", w.wire, i+1, w.first, w.then)
						}
					}
				}
				t.Logf("gRPC: %v", g)
				t.Logf("MCP (JSON-RPC %d): %v", rpcCode, m)
				t.Logf("MCP over gRPC: %v", n)

				// The MCP gRPC binding says what ToolService says, with the
				// front door's field paths (its arguments are a Struct) and,
				// where the gRPC message names arguments_json, the front
				// door's message. (Rows with requests of their own are of
				// methods the binding does not have: tasks, search.)
				if r.grpcReq == nil && r.mcpReq == nil {
					nm, gm := maps.Clone(n.meta), maps.Clone(g.meta)
					for _, k := range r.perWire {
						if _, ok := nm[k]; !ok {
							t.Errorf("MCP over gRPC metadata lacks %q: %v", k, n.meta)
						}
						delete(nm, k)
						delete(gm, k)
					}
					if n.code != g.code || n.reason != g.reason || !maps.Equal(nm, gm) || !slices.Equal(n.fields, m.fields) || n.hasRetry != g.hasRetry {
						t.Errorf("MCP over gRPC:\n %v\n gRPC %v\n  MCP %v", n, g, m)
					}
					if n.hasRetry {
						if diff := g.retry - n.retry; diff < -50*time.Millisecond || diff > 5*time.Second {
							t.Errorf("retry delay: gRPC %v, MCP over gRPC %v (differ by %v)", g.retry, n.retry, diff)
						}
					}
					if want := g.message; r.argsJSON && n.message != m.message || !r.argsJSON && r.sameMessage && n.message != want {
						t.Errorf("MCP over gRPC message %q; gRPC %q, MCP %q", n.message, g.message, m.message)
					}
				}

				// The row provoked the failure it names.
				if g.code != r.code.String() || g.reason != r.reason {
					t.Errorf("gRPC: %s / %s, want %s / %s", g.code, g.reason, r.code, r.reason)
				}
				for k, v := range r.meta {
					if g.meta[k] != v {
						t.Errorf("gRPC metadata %q = %q, want %q (metadata %v)", k, g.meta[k], v, g.meta)
					}
				}

				if r.mcpArguments {
					// The gRPC refusal as bad arguments of a tool.
					if m.code != "InvalidArgument" || m.reason != "ARGUMENTS_INVALID" || rpcCode != 0 {
						t.Errorf("MCP: %s / %s (JSON-RPC %d), want InvalidArgument / ARGUMENTS_INVALID as an isError result", m.code, m.reason, rpcCode)
					}
					want := make([]string, len(g.fields))
					for i, f := range g.fields {
						want[i] = "arguments." + f
					}
					if !slices.Equal(m.fields, want) || !slices.Equal(m.fields, r.fields) {
						t.Errorf("fields: gRPC %q, MCP %q, want MCP %q", g.fields, m.fields, r.fields)
					}
					return
				}

				// The same on both wires.
				if m.code != g.code {
					t.Errorf("code: gRPC %q, MCP data.code %q", g.code, m.code)
				}
				if m.reason != g.reason {
					t.Errorf("reason: gRPC %q, MCP %q", g.reason, m.reason)
				}
				gm, mm := maps.Clone(g.meta), maps.Clone(m.meta)
				for _, k := range r.perWire {
					if _, ok := gm[k]; !ok {
						t.Errorf("gRPC metadata lacks %q: %v", k, g.meta)
					}
					if _, ok := mm[k]; !ok {
						t.Errorf("MCP metadata lacks %q: %v", k, m.meta)
					}
					delete(gm, k)
					delete(mm, k)
				}
				if !maps.Equal(gm, mm) {
					t.Errorf("metadata:\n gRPC %v\n  MCP %v", g.meta, m.meta)
				}
				if g.hasRetry != r.retry || m.hasRetry != r.retry {
					t.Errorf("retry delay present: gRPC %v, MCP %v, want %v", g.hasRetry, m.hasRetry, r.retry)
				}
				if r.retry {
					for wire, d := range map[string]time.Duration{"gRPC": g.retry, "MCP": m.retry} {
						if d < r.retryLo || d > r.retryHi {
							t.Errorf("%s retry delay %v, want within [%v, %v]", wire, d, r.retryLo, r.retryHi)
						}
					}
					// The MCP call came second: its delay is the same, less
					// the time between the two answers (bounded generously
					// for a loaded box), never more.
					if diff := g.retry - m.retry; diff < -50*time.Millisecond || diff > 5*time.Second {
						t.Errorf("retry delay: gRPC %v, MCP %v (differ by %v)", g.retry, m.retry, diff)
					}
				}
				mcpFieldsOnGRPC := slices.Clone(m.fields)
				if r.argsJSON {
					for i, f := range mcpFieldsOnGRPC {
						if rest, ok := strings.CutPrefix(f, "arguments"); ok {
							mcpFieldsOnGRPC[i] = "arguments_json" + rest
						}
					}
				}
				if !slices.Equal(g.fields, mcpFieldsOnGRPC) {
					t.Errorf("field violations: gRPC %q, MCP %q", g.fields, m.fields)
				}
				if !slices.Equal(m.fields, r.fields) {
					t.Errorf("MCP fields %q, want %q", m.fields, r.fields)
				}
				if r.sameMessage && g.message != m.message {
					t.Errorf("message:\n gRPC %q\n  MCP %q", g.message, m.message)
				}

				// The MCP form docs/front-door.md documents for this failure.
				if rpcCode != r.rpcCode {
					if r.rpcCode == 0 {
						t.Errorf("MCP: JSON-RPC error %d, want an isError result (ARGUMENTS_INVALID)", rpcCode)
					} else {
						t.Errorf("MCP: JSON-RPC code %d, want %d", rpcCode, r.rpcCode)
					}
				}
				if r.check != nil {
					r.check(t, g, m)
				}
			})
		}
	})
	t.Logf("rows took %v", time.Since(start).Round(time.Millisecond))

	// Refusals of what only the front door has (a 2025-11-25 params.task
	// that is no object) carry the same data as every other.
	t.Run("front door only", func(t *testing.T) {
		raw := newRawFront(t, root, p.mcpAddr, mainTok, false)
		res, e, _ := raw.call(t, root, "tools/call", map[string]any{"name": "up__echo", "arguments": map[string]any{"text": "x"}, "task": "soon"})
		m, rpcCode := rawWireError(t, res, e)
		if rpcCode != jsonrpc.CodeInvalidParams || m.code != "InvalidArgument" || m.reason != "REQUEST_INVALID" || !slices.Equal(m.fields, []string{"task"}) ||
			m.meta["tool"] != "up__echo" {
			t.Errorf("params.task not an object: JSON-RPC %d %v; want -32602, InvalidArgument / REQUEST_INVALID on field task, naming the tool", rpcCode, m)
		}
	})
}

// rawWireError is mcpWireError for a rawFront answer: a JSON-RPC error, or
// a tools/call result.
func rawWireError(t *testing.T, res json.RawMessage, e *rpcErr) (wireError, int64) {
	t.Helper()
	if e != nil {
		return mcpWireError(t, nil, &jsonrpc.Error{Code: int64(e.Code), Message: e.Message, Data: e.Data})
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("MCP: result %s: %v", res, err)
	}
	return mcpWireError(t, &r, nil)
}
