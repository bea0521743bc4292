package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
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
// Which call a 2025-era request belongs to: the protocol does not say (on
// stdio nothing links them), so the bridge attributes a request to a call
// only when that call is the only request in flight on the session; any
// other request is answered by the server's policy (Elicitation; sampling
// refused; no roots). Attributing a request to the wrong caller would show
// one caller another's prompt.

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
}

// interactions tracks a session's requests in flight and the interaction
// of each tools/call, for attributing 2025-era server-to-client requests.
type interactions struct {
	mu       sync.Mutex
	inflight int
	calls    map[*Interaction]struct{}
}

// begin counts a request in flight (it: the call's interaction, or nil).
func (x *interactions) begin(it *Interaction) func() {
	x.mu.Lock()
	x.inflight++
	if it != nil {
		if x.calls == nil {
			x.calls = map[*Interaction]struct{}{}
		}
		x.calls[it] = struct{}{}
	}
	x.mu.Unlock()
	return func() {
		x.mu.Lock()
		x.inflight--
		delete(x.calls, it)
		x.mu.Unlock()
	}
}

// sole is the interaction of the only request in flight, if it has one
// that may be asked r.
func (x *interactions) sole(r mcp.InputRequest) *Interaction {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.inflight != 1 || len(x.calls) != 1 {
		return nil
	}
	for it := range x.calls {
		if it.Ask != nil && it.Kinds.Allows(r) {
			return it
		}
	}
	return nil
}

// errNoCaller answers a sampling request no caller can take.
var errNoCaller = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "no caller of this gateway can answer this request now"}

// ask hands r to the call it belongs to, if any; ok is false when the
// server's policy must answer.
func (s *session) ask(ctx context.Context, r mcp.InputRequest) (_ mcp.InputResponse, ok bool, _ error) {
	it := s.interact.sole(r)
	if it == nil {
		return nil, false, nil
	}
	res, err := it.Ask(ctx, r)
	return res, true, err
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
