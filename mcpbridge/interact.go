package mcpbridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Interactive calls: an upstream that asks its caller for input (form or
// URL elicitation, sampling, roots) during a call.
//
// Two protocol eras ask differently:
//
//   - 2026-07-28 (multi-round-trip): the upstream's result is
//     input_required (CallToolResult.InputRequests and RequestState); the
//     caller retries the request with InputResponses and that state. The
//     bridge's go-sdk client has its automatic retry off, so such results
//     come back from Call as they are, and Interaction.Responses and
//     Interaction.State are sent with the retry.
//   - 2025-11-25 and before: the upstream sends a server-to-client request
//     (elicitation/create, sampling/createMessage, roots/list) while the
//     call is in flight, and waits for the answer. The bridge hands it to
//     the call's Interaction.Ask, which blocks until the caller answers.
//
// Which call a 2025-era request belongs to: on streamable HTTP the
// upstream sends it on the response stream of the call's POST, and the
// bridge links it to that call (linkRoundTripper reads the stream's request
// ids; linkConn marks the request with the call's token). On stdio nothing
// links them, so a request is attributed to a call only when that call is
// the only request in flight on the session. A request that cannot be
// attributed is answered by the server's policy (Elicitation; sampling
// refused; no roots): attributing it to the wrong caller would show one
// caller another's prompt.

// InputKinds are the kinds of input a caller can give.
type InputKinds struct {
	Form     bool // form elicitation
	URL      bool // URL elicitation
	Sampling bool // sampling/createMessage
	Roots    bool // roots/list
}

// Any reports whether the caller can give any input.
func (k InputKinds) Any() bool { return k.Form || k.URL || k.Sampling || k.Roots }

// Allows reports whether a request of r's kind can be asked.
func (k InputKinds) Allows(r mcp.InputRequest) bool {
	switch p := r.(type) {
	case *mcp.ElicitParams:
		if p.Mode == "url" || (p.Mode == "" && p.URL != "") {
			return k.URL
		}
		return k.Form
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return k.Sampling
	case *mcp.ListRootsParams:
		return k.Roots
	}
	return false
}

// Interaction is how one call's upstream reaches its caller
// (CallOptions.Input).
type Interaction struct {
	// Kinds are what the caller can answer; other requests get the
	// server's policy.
	Kinds InputKinds
	// Ask, if set, receives a 2025-era upstream's request during the call
	// and returns the caller's answer (*mcp.ElicitResult,
	// *mcp.CreateMessageWithToolsResult or *mcp.ListRootsResult). It runs
	// on the session's request goroutine for that request (go-sdk handles
	// incoming requests concurrently), so it may block; ctx ends when the
	// upstream gives up on the request or the session dies.
	Ask func(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error)
	// Responses and State continue a 2026-07-28 upstream's input_required:
	// the answers, by the upstream's request ids, and its requestState
	// verbatim.
	Responses mcp.InputResponseMap
	State     string

	token string // names the call on its session, while in flight (linkMetaKey)
}

// interactions tracks a session's requests in flight and the interaction
// of each tools/call, for attributing 2025-era server-to-client requests.
type interactions struct {
	mu       sync.Mutex
	inflight int
	calls    map[string]*Interaction // by token
	links    map[string]string       // an upstream request's id → the token of its call
}

// linkMetaKey is the _meta key that linkConn sets on an upstream's request
// to name the call it belongs to (any value the upstream set is removed).
const linkMetaKey = "toolsvc.dev/call"

// inputMethods are the server-to-client requests that ask for input.
var inputMethods = map[string]bool{"elicitation/create": true, "sampling/createMessage": true, "roots/list": true}

// begin counts a request in flight (it: the call's interaction, or nil).
func (x *interactions) begin(it *Interaction) func() {
	x.mu.Lock()
	x.inflight++
	if it != nil {
		if x.calls == nil {
			x.calls, x.links = map[string]*Interaction{}, map[string]string{}
		}
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		it.token = hex.EncodeToString(b)
		x.calls[it.token] = it
	}
	x.mu.Unlock()
	return func() {
		x.mu.Lock()
		x.inflight--
		if it != nil {
			delete(x.calls, it.token)
			for id, tok := range x.links {
				if tok == it.token {
					delete(x.links, id)
				}
			}
		}
		x.mu.Unlock()
	}
}

// link records that the upstream request id was sent on the stream of the
// call named by token.
func (x *interactions) link(id, token string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.calls[token]; ok {
		x.links[id] = token
	}
}

// take returns (and forgets) the token of the call request id was linked
// to ("": none).
func (x *interactions) take(id string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	tok := x.links[id]
	delete(x.links, id)
	return tok
}

// owner is the interaction a request belongs to, if it may be asked r: the
// call it is linked to (meta's token), or else the only request in flight.
func (x *interactions) owner(meta mcp.Meta, r mcp.InputRequest) *Interaction {
	x.mu.Lock()
	defer x.mu.Unlock()
	var it *Interaction
	if tok, ok := meta[linkMetaKey].(string); ok {
		it = x.calls[tok]
	} else if x.inflight == 1 && len(x.calls) == 1 {
		for _, c := range x.calls {
			it = c
		}
	}
	if it == nil || it.Ask == nil || !it.Kinds.Allows(r) {
		return nil
	}
	return it
}

// errNoCaller answers a sampling request no caller can take.
var errNoCaller = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "no caller of this gateway can answer this request now"}

// ask hands r to the call it belongs to, if any; ok is false when the
// server's policy must answer.
func (s *session) ask(ctx context.Context, r mcp.InputRequest) (_ mcp.InputResponse, ok bool, _ error) {
	it := s.interact.owner(inputMeta(r), r)
	if it == nil {
		return nil, false, nil
	}
	res, err := it.Ask(ctx, withoutLink(r))
	return res, true, err
}

// inputMeta is a request's _meta.
func inputMeta(r mcp.InputRequest) mcp.Meta {
	switch p := r.(type) {
	case *mcp.ElicitParams:
		return p.Meta
	case *mcp.CreateMessageParams:
		return p.Meta
	case *mcp.CreateMessageWithToolsParams:
		return p.Meta
	case *mcp.ListRootsParams:
		return p.Meta
	}
	return nil
}

// withoutLink is r without toolsvc's link in its _meta (a copy when it has
// one).
func withoutLink(r mcp.InputRequest) mcp.InputRequest {
	meta := inputMeta(r)
	if _, ok := meta[linkMetaKey]; !ok {
		return r
	}
	m := make(mcp.Meta, len(meta))
	for k, v := range meta {
		if k != linkMetaKey {
			m[k] = v
		}
	}
	if len(m) == 0 {
		m = nil
	}
	switch p := r.(type) {
	case *mcp.ElicitParams:
		cp := *p
		cp.Meta = m
		return &cp
	case *mcp.CreateMessageParams:
		cp := *p
		cp.Meta = m
		return &cp
	case *mcp.CreateMessageWithToolsParams:
		cp := *p
		cp.Meta = m
		return &cp
	case *mcp.ListRootsParams:
		cp := *p
		cp.Meta = m
		return &cp
	}
	return r
}

// onElicit answers elicitation/create: the caller's answer, or the policy's.
func (s *session) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	res, ok, err := s.ask(ctx, req.Params)
	if !ok {
		return s.u.elicit(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	er, isElicit := res.(*mcp.ElicitResult)
	if !isElicit {
		return nil, errors.New("the caller answered an elicitation with another kind of answer")
	}
	return er, nil
}

// onSample answers sampling/createMessage: the caller's model, or a refusal.
func (s *session) onSample(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
	res, ok, err := s.ask(ctx, req.Params)
	if !ok {
		return nil, errNoCaller
	}
	if err != nil {
		return nil, err
	}
	cr, isSample := res.(*mcp.CreateMessageWithToolsResult)
	if !isSample {
		return nil, errors.New("the caller answered a sampling request with another kind of answer")
	}
	return cr, nil
}

// rootsMiddleware answers roots/list with the caller's roots when the
// request is a call's (go-sdk has no roots handler: it answers from the
// client's own list, which toolsvc leaves empty).
func (s *session) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		p, _ := req.GetParams().(*mcp.ListRootsParams)
		if p == nil {
			p = &mcp.ListRootsParams{}
		}
		res, ok, err := s.ask(ctx, p)
		if !ok {
			return next(ctx, method, req)
		}
		if err != nil {
			return nil, err
		}
		rr, isRoots := res.(*mcp.ListRootsResult)
		if !isRoots {
			return nil, errors.New("the caller answered a roots request with another kind of answer")
		}
		return rr, nil
	}
}

// relayInput reports whether toolsvc declares the interactive capabilities
// to this server (elicitation form and URL, sampling, roots) and relays
// their requests to callers that can answer.
func (u *upstream) relayInput() bool { return u.cfg.Input != InputPolicy }

// relayCapabilities are the client capabilities of a relaying session.
func relayCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}
}

// PolicyAnswer is the answer toolsvc gives an input request for a caller
// that cannot answer it: the server's elicitation policy, an empty roots
// list; sampling has none (nil: the request cannot be answered).
func (b *Bridge) PolicyAnswer(server string, r mcp.InputRequest) mcp.InputResponse {
	u, err := b.upstream(server)
	switch p := r.(type) {
	case *mcp.ElicitParams:
		if err != nil {
			return &mcp.ElicitResult{Action: "decline"}
		}
		res, _ := u.elicit(context.Background(), &mcp.ElicitRequest{Params: p})
		return res
	case *mcp.ListRootsParams:
		return &mcp.ListRootsResult{Roots: []*mcp.Root{}}
	}
	return nil
}

// DecodeInputResponse decodes one MCP input response (the JSON of an
// elicitation result, a sampling result, or a roots list) for a request of
// r's kind.
func DecodeInputResponse(r mcp.InputRequest, data []byte) (mcp.InputResponse, error) {
	var out mcp.InputResponse
	switch r.(type) {
	case *mcp.ElicitParams:
		out = new(mcp.ElicitResult)
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		out = new(mcp.CreateMessageWithToolsResult)
	case *mcp.ListRootsParams:
		out = new(mcp.ListRootsResult)
	default:
		return nil, errors.New("unknown kind of input request")
	}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

type interactionKey struct{}

func withInteraction(ctx context.Context, it *Interaction) context.Context {
	return context.WithValue(ctx, interactionKey{}, it)
}

func interactionOf(ctx context.Context) *Interaction {
	it, _ := ctx.Value(interactionKey{}).(*Interaction)
	return it
}

// linkTransport wraps a session's transport so that upstream requests
// asking for input carry the token of the call they belong to (linkConn).
type linkTransport struct {
	mcp.Transport
	x *interactions
}

func (t *linkTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &linkConn{Connection: c, x: t.x}, nil
}

// linkConn sets _meta[linkMetaKey] on every upstream request that asks for
// input: the token of the call whose stream carried it, or nothing (an
// upstream's own value is always removed, so it cannot aim its request at
// another caller's call).
type linkConn struct {
	mcp.Connection
	x *interactions
}

func (c *linkConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	req, ok := m.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() || !inputMethods[req.Method] {
		return m, err
	}
	tok := c.x.take(fmt.Sprint(req.ID.Raw()))
	if tok == "" && !bytes.Contains(req.Params, []byte(linkMetaKey)) {
		return m, nil
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil || params == nil {
		return m, nil // malformed: go-sdk refuses it
	}
	var meta map[string]any
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return m, nil
	}
	if meta == nil {
		meta = map[string]any{}
	}
	delete(meta, linkMetaKey)
	if tok != "" {
		meta[linkMetaKey] = tok
	}
	params["_meta"], _ = json.Marshal(meta)
	if req.Params, err = json.Marshal(params); err != nil {
		return nil, err
	}
	return req, nil
}

// linkRoundTripper links the requests an upstream sends on the response
// stream of an interactive call's POST to that call: it reads the ids of
// the input requests as the stream passes (linkBody).
type linkRoundTripper struct {
	base http.RoundTripper
	x    *interactions
}

func (rt *linkRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(r)
	it := interactionOf(r.Context())
	if err != nil || it == nil || it.token == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	resp.Body = &linkBody{ReadCloser: resp.Body, x: rt.x, token: it.token}
	return resp, nil
}

// maxLinkLine bounds the part of an event line linkBody keeps: an input
// request is small; a longer line (a large result) is passed over.
const maxLinkLine = 64 << 10

// linkBody reads the SSE lines of a call's response stream as they pass,
// and links each input request's id to the call.
type linkBody struct {
	io.ReadCloser
	x     *interactions
	token string
	line  []byte
	long  bool // the current line is past maxLinkLine
}

func (b *linkBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	for rest := p[:n]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk = rest[:i]
		}
		if !b.long {
			if len(b.line)+len(chunk) > maxLinkLine {
				b.long, b.line = true, b.line[:0]
			} else {
				b.line = append(b.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !b.long {
			b.scan(b.line)
		}
		b.line, b.long = b.line[:0], false
		rest = rest[i+1:]
	}
	return n, err
}

// scan links the request of one "data:" line, if it asks for input.
func (b *linkBody) scan(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"method"`)) {
		return
	}
	var msg struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if d.Decode(&msg) != nil || msg.ID == nil || !inputMethods[msg.Method] {
		return
	}
	b.x.link(fmt.Sprint(msg.ID), b.token)
}
