package mcpbridge

// The go-sdk adapter: every place where the bridge relies on, or works
// around, a behaviour of github.com/modelcontextprotocol/go-sdk v1.8.0 that
// its API does not promise. gosdk_test.go pins each against the real SDK, so
// an upgrade that changes one fails there, in one place; the mechanisms
// built on them (rawschema.go, push.go, msglimit.go, the prober) cite the
// function here. docs/upstream-behaviour.md §1–2 has the measurements.
//
// Built on them elsewhere: the session's taps (tap.go: withTaps), the
// push channel (push.go: the listen sentinel), the message limits
// (msglimit.go, transport.go: sdkMaxFrame, frameSlack), the prober's error
// classification (prober.go: answered, isSessionDead).
// transport.go's commandTransport and headerTransport stand in for what
// go-sdk's CommandTransport does not offer (a line limiter, per-request
// headers); they use go-sdk's public API only. stdioconn.go's stdioConn
// stands in for go-sdk's IOTransport connection on stdio upstreams (go-sdk
// decodes each line three times), and streamhttp.go's streamConn for its
// streamable HTTP client connection (which cannot be wrapped, hands each
// response through two goroutines and decodes it apart from the taps);
// both use jsonrpc.Message, MakeID, DecodeMessage and EncodeMessage, the
// package go-sdk exports for transport authors, and go-sdk's
// "rejected by transport" code (codeRejectedByTransport), which its
// jsonrpc2 layer compares by code.
//
// go-sdk itself is patched (third_party/go-sdk, go.mod's replace,
// docs/go-sdk-decode-garbage.md): v1.8.0 decodes every JSON value through a
// fresh streaming decoder whose first read allocates 32 KiB, about four
// times per tools/call on either transport. TestGoSDKPatchedDecode
// pins that the patch is in effect; TestGoSDKUpstreamDecodeGarbage fails
// once the go-sdk go.mod requires no longer needs it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge/catalog"
)

// goSDKVersion is the go-sdk version the pins below were measured against
// (TestGoSDKVersion fails on any other).
const goSDKVersion = "v1.8.0"

// ---- Errors: how go-sdk reports an answer, a rejection, a dead session.

// codeRejectedByTransport is go-sdk's internal jsonrpc2.ErrRejected code.
const codeRejectedByTransport = -32005

// answered returns the JSON-RPC error in err that the upstream itself
// answered, if any. go-sdk reports an upstream's answer as a *jsonrpc.Error
// with the upstream's code; errors of its transports either carry the
// "rejected by transport" code (-32005: the request never reached a live
// upstream) or are not JSON-RPC errors at all.
func answered(err error) (*jsonrpc.Error, bool) {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code != codeRejectedByTransport {
		return werr, true
	}
	return nil, false
}

// undecodable reports an answer go-sdk received but could not decode into
// its result type (invalid JSON, or a field of the wrong shape, such as an
// inputRequests entry without params): the upstream answered.
func undecodable(err error) bool {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	return errors.As(err, &syn) || errors.As(err, &typ)
}

// lostWithoutAnswer reports a request that ended without an answer from the
// upstream and without a known cause on our side: the transport gave up on
// it (go-sdk's streamable client reports "request terminated without
// response" when a response stream closes early, as it does when a
// TypeScript SDK server is killed mid-call). The request is lost; whether
// the session is too is for a probe to tell.
func lostWithoutAnswer(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	_, ok := answered(err)
	return !ok
}

// isSessionDead reports whether err means the session's transport is gone
// (as opposed to a protocol error on a live session).
func isSessionDead(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch {
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, mcp.ErrSessionMissing),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		// -32005 is go-sdk's "rejected by transport": the request never
		// reached a live upstream (the HTTP POST failed). Any other code is
		// an answer from a live upstream.
		return werr.Code == codeRejectedByTransport
	}
	msg := err.Error()
	return strings.Contains(msg, "connection closed") || strings.Contains(msg, "EOF") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "connection refused") ||
		strings.Contains(msg, "broken pipe")
}

// isMethodNotFound: an upstream without a list method (listPages). Tools
// are listed whatever the capabilities say: go-sdk's server omits the tools
// capability when it has no tools at connect, yet answers tools/list and
// may add tools later (TestGoSDKOmitsToolsWithoutTools).
func isMethodNotFound(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound
}

// isResourceNotFound: an upstream's "no such resource" answer to
// resources/read: the specification's -32002, or InvalidParams, which
// go-sdk's server (and the TypeScript SDK's) answers instead.
func isResourceNotFound(code int64) bool {
	return code == -32002 || code == jsonrpc.CodeInvalidParams
}

// ---- Connecting.

// sessionOptions asks go-sdk for protocol version pv: the version itself,
// never go-sdk's default (nil options), except for ProtocolLatest. go-sdk
// v1.8.0 defaults to 2026-07-28, and with its default a TypeScript-SDK
// stateless server negotiated a 2026-07-28 session whose tool calls never
// reached it.
func sessionOptions(pv string) *mcp.ClientSessionOptions {
	if pv == ProtocolLatest {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: pv}
}

// connectBounded runs client.Connect under ctx, the session's own context,
// not one that ends when Connect returns: go-sdk's legacy SSE client binds
// its event stream to the Connect context, so a connect-timeout context
// would close the stream the moment the session is up. The timeout is a
// timer that ends the session (cancel) only while Connect is still
// running; timedOut reports that it fired.
func connectBounded(ctx context.Context, client *mcp.Client, t mcp.Transport, opts *mcp.ClientSessionOptions, timeout time.Duration, cancel context.CancelFunc) (_ *mcp.ClientSession, timedOut bool, _ error) {
	var fired atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		fired.Store(true)
		cancel()
	})
	cs, err := client.Connect(ctx, t, opts)
	if !timer.Stop() && err == nil {
		// The timer fired as Connect returned: the session context is gone.
		_ = cs.Close()
		err = context.DeadlineExceeded
	}
	return cs, fired.Load(), err
}

// standaloneRefused: go-sdk's streamable client takes any 4xx answer to its
// standalone GET stream as "the server offers none" and carries on without
// one (a stateless server), so the push channel is none, not down.
func standaloneRefused(status int) bool { return status >= 400 && status < 500 }

// ---- Limits: go-sdk's own frame caps.

// sdkMaxFrame is go-sdk's own stdio line limit, which is its SSE event
// limit too (TestGoSDKFrameLimits).
const sdkMaxFrame = mcp.DefaultMaxLineLength

// frameSlack is what go-sdk's own caps allow beyond the message limit
// (MaxLineLength, MaxEventSize), so a message the limiter lets through is
// never refused by them: SSE field names and line ends, a CRLF.
const frameSlack = 64 << 10

// ---- Results and notifications.

// progressGrace bounds how long a result waits for progress notifications
// still in flight. go-sdk routes a response ahead of the notifications
// queued before it (they run on the session's handler queue), so the last
// steps of a tool's progress can arrive just after its result.
const progressGrace = 25 * time.Millisecond

// ---- subscriptions/listen (2026-07-28): the push channel and resource
// subscriptions.

// listenReopenScheme marks the subscriptions/listen requests the bridge
// makes to re-open a session's tool push channel. go-sdk v1.8.0 opens the
// channel once in Connect and has no API to open it again; its only public
// way to send subscriptions/listen is ClientSession.Subscribe, for resource
// URIs. The bridge calls Subscribe with a URI in this scheme and rewrites
// the request on its way out (rewriteListen) to subscribe to list_changed
// instead, so the SDK still owns the stream and routes its notifications to
// the session's handlers.
const listenReopenScheme = "toolsvc-listen:"

// listenSentinel matches reopenListen's sentinel URI:
// "toolsvc-listen:<n>" (tools only) or "toolsvc-listen:<n>/<kinds>", kinds
// being letters t (tools), r (resources), p (prompts) list_changed.
var listenSentinel = regexp.MustCompile(`toolsvc-listen:[0-9]+(?:/([a-z]+))?`)

// rewriteListen rewrites the params of a subscriptions/listen request made
// by reopenListen: the sentinel resource subscription becomes a
// subscription to the list_changed notifications its URI names (tools,
// and resources and prompts when the upstream declares them). Other params
// are returned unchanged.
func rewriteListen(params json.RawMessage) (json.RawMessage, bool) {
	if !bytes.Contains(params, []byte(listenReopenScheme)) {
		return params, false
	}
	m := listenSentinel.FindSubmatch(params)
	if m == nil {
		return params, false
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return params, false
	}
	notes := map[string]bool{"toolsListChanged": true}
	if bytes.ContainsRune(m[1], 'r') {
		notes["resourcesListChanged"] = true
	}
	if bytes.ContainsRune(m[1], 'p') {
		notes["promptsListChanged"] = true
	}
	nb, err := json.Marshal(notes)
	if err != nil {
		return params, false
	}
	p["notifications"] = nb
	out, err := json.Marshal(p)
	if err != nil {
		return params, false
	}
	return out, true
}

// listensForListChanged reports a subscriptions/listen request that asks
// for any list_changed notification (the push channel), as opposed to one
// that only subscribes to resources (ClientSession.Subscribe).
func listensForListChanged(params json.RawMessage) bool {
	var p struct {
		Notifications struct {
			Tools     bool `json:"toolsListChanged"`
			Prompts   bool `json:"promptsListChanged"`
			Resources bool `json:"resourcesListChanged"`
		} `json:"notifications"`
	}
	if json.Unmarshal(params, &p) != nil {
		return true // unknown shape: count it, as before
	}
	n := p.Notifications
	return n.Tools || n.Prompts || n.Resources
}

// subscribedURIs are the resource URIs a subscriptions/listen request
// subscribes to.
func subscribedURIs(params json.RawMessage) []string {
	var p struct {
		Notifications struct {
			URIs []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Notifications.URIs
}

// resubscribeStream replaces an ended resource subscription's listen
// stream. go-sdk keeps one listen stream per URI: Unsubscribe forgets the
// ended one (its context is cancelled, so its end is not reported),
// Subscribe opens the next (and returns once it is sent; its outcome comes
// back through the pushChannel's subStream hook).
func resubscribeStream(ctx context.Context, cs *mcp.ClientSession, uri string) error {
	_ = cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
}

// ---- Tasks (tasks.go, tasktap.go). go-sdk v1.8.0 has no tasks: its
// CallToolParams has no task, its ServerCapabilities no tasks, its Tool no
// execution, and CallToolResult decodes a task (2025-11-25 {task: {...}},
// 2026-07-28 resultType "task") as an empty success, dropping the task id
// (TestGoSDKDecodesTaskAsEmptySuccess). The bridge reads the raw messages
// (tasktap.go) and uses these two public seams.

// withTaskParam is a tools/call request with params.task {ttl} added
// (2025-11-25): the sending middleware may replace the request's params
// with any Params value, and go-sdk marshals what it gets
// (TestGoSDKSendsReplacedParams). ok is false for a request of another
// shape (it is sent as it is).
func withTaskParam(req mcp.Request, ttl time.Duration) (mcp.Request, bool) {
	cr, ok := req.(*mcp.ClientRequest[mcp.Params])
	if !ok {
		return req, false
	}
	p, ok := cr.Params.(*mcp.CallToolParams)
	if !ok || p == nil {
		return req, false
	}
	task := map[string]any{}
	if ttl > 0 {
		task["ttl"] = ttl.Milliseconds()
	}
	return &mcp.ClientRequest[mcp.Params]{Session: cr.Session, Params: &taskCallParams{CallToolParams: *p, Task: task}}, true
}

// taskCallParams are tools/call params with a task (2025-11-25).
type taskCallParams struct {
	mcp.CallToolParams
	Task map[string]any `json:"task"`
}

// optInTasks adds the tasks extension to the clientCapabilities of a
// 2026-07-28 request's _meta, which go-sdk has set (injectRequestMeta runs
// before the sending middleware) to a value of an unexported type: it is
// re-encoded as a JSON object (TestGoSDKRequestMetaCapabilities). ok is
// false when params carry none.
func optInTasks(params mcp.Params) bool {
	if params == nil {
		return false
	}
	meta := params.GetMeta()
	caps, err := catalog.AsObject(meta[mcp.MetaKeyClientCapabilities])
	if err != nil || caps == nil {
		return false
	}
	caps = maps.Clone(caps)
	ext, _ := caps["extensions"].(map[string]any)
	ext = maps.Clone(ext)
	if ext == nil {
		ext = map[string]any{}
	}
	ext[TasksExtension] = map[string]any{}
	caps["extensions"] = ext
	m := maps.Clone(meta)
	m[mcp.MetaKeyClientCapabilities] = caps
	params.SetMeta(m)
	return true
}
