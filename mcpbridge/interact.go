package mcpbridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"sync/atomic"

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
// bridge links it to that call (the link tap, linkTap, marks the request
// with the call's token where the connection reads it). On stdio nothing
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

	token string       // names the call on its session, while in flight (linkMetaKey)
	clock *activeClock // the request's callTimeout, stopped while Ask waits (activeclock.go)
	logs  *logSink     // the call's OnLog, if any (logging.go)
}

// interactions tracks a session's requests in flight and the interaction
// of each tools/call, for attributing 2025-era server-to-client requests.
type interactions struct {
	// inflight counts every request on the session: an atomic, so a
	// plain call (the hot path) takes no lock.
	inflight atomic.Int64
	mu       sync.Mutex
	calls    map[string]*Interaction // by token
}

// linkMetaKey is the _meta key that linkTap sets on an upstream's request
// to name the call it belongs to (any value the upstream set is removed).
const linkMetaKey = "toolsvc.dev/call"

// inputMethods are the server-to-client requests that ask for input.
var inputMethods = map[string]bool{"elicitation/create": true, "sampling/createMessage": true, "roots/list": true}

// begin counts a request in flight (it: the call's interaction, or nil).
func (x *interactions) begin(it *Interaction) func() {
	x.inflight.Add(1)
	if it == nil {
		return x.end
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	x.mu.Lock()
	if x.calls == nil {
		x.calls = map[string]*Interaction{}
	}
	it.token = hex.EncodeToString(b)
	x.calls[it.token] = it
	x.mu.Unlock()
	return func() {
		x.mu.Lock()
		delete(x.calls, it.token)
		x.mu.Unlock()
		x.end()
	}
}

func (x *interactions) end() { x.inflight.Add(-1) }

// owner is the interaction a request belongs to, if it may be asked r: the
// call it is linked to (meta's token), or else the only request in flight.
func (x *interactions) owner(meta mcp.Meta, r mcp.InputRequest) *Interaction {
	x.mu.Lock()
	defer x.mu.Unlock()
	var it *Interaction
	if tok, ok := meta[linkMetaKey].(string); ok {
		it = x.calls[tok]
	} else if x.inflight.Load() == 1 && len(x.calls) == 1 {
		// A request that begins meanwhile cannot have sent it; counted,
		// it only makes the attribution refuse (the policy answers).
		for _, c := range x.calls {
			it = c
		}
	}
	if it == nil || it.Ask == nil || !it.Kinds.Allows(r) {
		return nil
	}
	return it
}

// logOwner is the interaction an upstream log message belongs to, if it
// is still in flight and takes logs: the call its token names. The token
// was decided where the message was read (linkTap): a message
// that was read with no token has no certain owner and goes to nobody.
// Deciding when the message is handled instead would give a backlog read
// during one call to whichever call is alone in flight when the handler
// catches up: another caller's.
func (x *interactions) logOwner(tok string) *Interaction {
	if tok == "" {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	it := x.calls[tok]
	if it == nil || it.logs == nil {
		return nil
	}
	return it
}

// soleLogCall is the token of the only request in flight, when it is a
// call that takes logs ("" otherwise): the owner of a log message read now
// on a stream no request owns (streamable HTTP's standalone GET stream).
func (x *interactions) soleLogCall() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.inflight.Load() != 1 || len(x.calls) != 1 {
		return ""
	}
	for tok, it := range x.calls {
		if it.logs != nil {
			return tok
		}
	}
	return ""
}

// errNoCaller answers a sampling request no caller can take.
var errNoCaller = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "no caller of this gateway can answer this request now"}

// Decline is the answer to an input request that its call will not have
// answered (the caller did not answer before the expiry, went away, or the
// call ended at a bound): an elicitation declined, no roots, and for
// sampling, which has no decline, the refusal the policy gives (a JSON-RPC
// error).
func Decline(r mcp.InputRequest) (mcp.InputResponse, error) {
	switch r.(type) {
	case *mcp.ElicitParams:
		return &mcp.ElicitResult{Action: "decline"}, nil
	case *mcp.ListRootsParams:
		return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
	}
	return nil, errNoCaller
}

// ask hands r to the call it belongs to, if any; ok is false when the
// server's policy must answer.
func (s *session) ask(ctx context.Context, r mcp.InputRequest) (_ mcp.InputResponse, ok bool, _ error) {
	it := s.interact.owner(inputMeta(r), r)
	if it == nil {
		return nil, false, nil
	}
	if it.clock != nil {
		it.clock.pause()
		defer it.clock.resume()
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
	if k, _ := ctx.Value(keptContentKey{}).(*keptContent); k != nil && er.Content != nil {
		// go-sdk's client fills the schema's defaults into what this
		// returns (a copy); elicitMiddleware sends the caller's own.
		k.content, k.set = er.Content, true
		c := *er
		c.Content = maps.Clone(er.Content)
		er = &c
	}
	return er, nil
}

// keptContent is the content of a caller's accepted form, as the caller
// gave it, kept past go-sdk's client: after validating an accepted form
// against its requested schema, the client fills in every default the
// schema has (Client.elicit's ApplyDefaults), so the upstream could not
// tell a field left blank from one set to its default. toolsvc forwards
// answers as the caller gave them (docs/interactive.md).
type keptContent struct {
	content map[string]any
	set     bool
}

type keptContentKey struct{}

// elicitMiddleware sends, for elicitation/create, the content onElicit
// kept (the caller's answer without the schema's defaults); go-sdk's own
// checks of the request and of the answer still run.
func (s *session) elicitMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "elicitation/create" {
			return next(ctx, method, req)
		}
		k := &keptContent{}
		res, err := next(context.WithValue(ctx, keptContentKey{}, k), method, req)
		if er, ok := res.(*mcp.ElicitResult); ok && err == nil && k.set {
			er.Content = k.content
		}
		return res, err
	}
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

// AsksCallers reports whether the server's requests for input may reach
// the callers that offer input ("input": "relay", the default); false: the
// server's policy answers every one, in both protocol eras.
func (b *Bridge) AsksCallers(server string) bool {
	u, err := b.upstream(server)
	return err == nil && u.relayInput()
}

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

// linkTap is a session's tap (tap.go) for the call links: an upstream
// request that asks for input carries, in _meta[linkMetaKey], the token of
// the call it belongs to when toolsvc knows it, and never a link toolsvc
// did not set (an upstream must not aim its request at another caller's
// call); each log message's call is decided where it is read and carried
// the same way (logOwner); the log messages read are counted (logCount).
//
// Who owns a message depends on where it was read (msgOrigin):
//   - on the response stream of a request (streamable HTTP), that
//     request's call: its interaction's token, if it has one (a list or a
//     read owns its stream's log messages: nobody else gets them);
//   - on the standalone GET stream, which no request owns, a log message
//     goes to the only request in flight on the session when it is a call
//     taking logs (interactions.soleLogCall), else nobody; an input request
//     has no token (its owner is decided when handled,
//     interactions.owner);
//   - on a connection that does not say (stdio, legacy SSE, gRPC, custom
//     transports): a log message goes to the only request toolsvc wrote on
//     the connection that the upstream has not answered yet (wireCalls),
//     when that request is a call taking logs; with none or several,
//     nobody; an input request has no token.
type linkTap struct {
	logs     *logCount
	calls    *interactions
	byStream bool      // the connection reports origins: wire is not kept
	wire     wireCalls // the outstanding requests (no origins)
}

func newLinkTap(s *session, byStream bool) *linkTap {
	return &linkTap{logs: &s.logs, calls: &s.interact, byStream: byStream, wire: wireCalls{m: map[jsonrpc.ID]*wireCall{}}}
}

func (t *linkTap) wrote(ctx context.Context, m jsonrpc.Message) jsonrpc.Message {
	if req, ok := m.(*jsonrpc.Request); ok && !t.byStream {
		t.wire.wrote(ctx, req)
	}
	return nil
}

func (t *linkTap) unsent(m jsonrpc.Message) {
	if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() && !t.byStream {
		t.wire.answered(req.ID) // never sent: never answered
	}
}

func (t *linkTap) read(m jsonrpc.Message, from *msgOrigin) {
	switch m := m.(type) {
	case *jsonrpc.Response:
		if !t.byStream {
			t.wire.answered(m.ID)
		}
	case *jsonrpc.Request:
		tok := ""
		switch {
		case m.Method == methodLog && !m.IsCall():
			t.logs.readOne()
			switch {
			case from == nil:
				tok = t.wire.soleLogCall()
			case from.ctx == nil:
				tok = t.calls.soleLogCall()
			default:
				tok = streamToken(from)
			}
		case m.IsCall() && inputMethods[m.Method]:
			if from != nil && from.ctx != nil {
				tok = streamToken(from)
			}
		default:
			return
		}
		if tok == "" && !bytes.Contains(m.Params, []byte(linkMetaKey)) {
			return
		}
		// Set ours, or remove the upstream's own value.
		if params, ok := setLink(m.Params, tok); ok {
			m.Params = params
		}
	}
}

// streamToken is the link token of the call whose response stream a
// message came on ("" for a request of no interactive call).
func streamToken(from *msgOrigin) string {
	if it := interactionOf(from.ctx); it != nil {
		return it.token
	}
	return ""
}

// wireCalls are the requests toolsvc wrote on one connection that the
// upstream has not answered, as they stand where messages are read: a log
// message read while exactly one of them is outstanding can only be that
// request's, whatever the handlers behind the reader still have queued.
// Standing requests are left out: pings (an SDK answers them itself;
// counting them would leave a call's logs unattributed whenever the
// prober pings) and the 2026-07-28 push channel's subscriptions/listen
// (open for the session's life; from 2026-07-28 an upstream logs only
// for a request whose _meta asks for a level, which the listen request
// does not).
//
// A request whose caller gave up (notifications/cancelled written) may
// never be answered (the TypeScript SDK sends nothing after a cancel): it
// stays outstanding, so the upstream's late lines for it go to nobody,
// until the upstream answers a request written after the cancel, by which
// point it has read the cancel. The prober's pings make that happen
// within a ping interval on a live session, so the map holds at most the
// requests in flight plus those cancelled since the last answer.
type wireCalls struct {
	mu        sync.Mutex
	seq       uint64
	m         map[jsonrpc.ID]*wireCall
	cancelled int // entries of m with cancelled set: answered scans m only when some are
}

type wireCall struct {
	token     string // the call's link token; "" for a request of no call taking logs
	seq       uint64 // when it was written
	cancelled uint64 // when its cancel was written (0: not cancelled)
	standing  bool   // ping or subscriptions/listen: never a log's owner, never counted
}

// wrote records a request (a call) or a cancel (a notification) as
// written.
func (w *wireCalls) wrote(ctx context.Context, req *jsonrpc.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	if req.IsCall() {
		tok := ""
		if it := interactionOf(ctx); it != nil && it.logs != nil {
			tok = it.token
		}
		w.m[req.ID] = &wireCall{token: tok, seq: w.seq, standing: req.Method == "ping" || req.Method == listenMethod}
		return
	}
	if req.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
		if c := w.m[id]; c != nil && c.cancelled == 0 {
			c.cancelled = w.seq
			w.cancelled++
		}
	}
}

// answered records a request's answer read, and forgets the cancelled
// requests whose cancel was written before that request.
func (w *wireCalls) answered(id jsonrpc.ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.m[id]
	if c == nil {
		return
	}
	delete(w.m, id)
	if c.cancelled != 0 {
		w.cancelled--
	}
	// On the call path: every answer would otherwise walk every request in
	// flight, quadratic in a busy session's concurrency.
	if w.cancelled == 0 {
		return
	}
	for k, o := range w.m {
		if o.cancelled != 0 && o.cancelled < c.seq {
			delete(w.m, k)
			w.cancelled--
		}
	}
}

// soleLogCall is the link token of the only outstanding request other
// than standing ones, when it is a call taking logs ("" otherwise).
func (w *wireCalls) soleLogCall() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	tok, n := "", 0
	for _, c := range w.m {
		if c.standing {
			continue
		}
		if n++; n > 1 {
			return ""
		}
		tok = c.token
	}
	return tok
}

// setLink is a request's params with _meta[linkMetaKey] set to token, or
// removed ("" token); ok is false for params that are not an object.
func setLink(raw json.RawMessage, token string) (json.RawMessage, bool) {
	params := map[string]json.RawMessage{}
	if len(raw) > 0 && (json.Unmarshal(raw, &params) != nil || params == nil) {
		return nil, false
	}
	var meta map[string]any
	if m, ok := params["_meta"]; ok && json.Unmarshal(m, &meta) != nil {
		return nil, false
	}
	if meta == nil {
		meta = map[string]any{}
	}
	delete(meta, linkMetaKey)
	if token != "" {
		meta[linkMetaKey] = token
	}
	if len(meta) == 0 {
		delete(params, "_meta")
	} else {
		params["_meta"], _ = json.Marshal(meta)
	}
	out, err := json.Marshal(params)
	return out, err == nil
}

// methodLog is the MCP log message notification.
const methodLog = "notifications/message"
