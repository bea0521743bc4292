package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsvc/toolsvc/service/core"
)

// The go-sdk adapter of the front door: every place where toolsvc works
// around what go-sdk v1.8.0 offers its servers is here, with gosdk_test.go
// pinning the go-sdk behaviour each relies on, so that an upgrade that
// changes it fails there, loudly, in one place:
//
//   - list_changed markers: go-sdk sends notifications/{tools,resources,
//     prompts}/list_changed only when its own lists change, so a marker is
//     added and removed (one notification: go-sdk debounces its own sends);
//   - per-principal list_changed (views.go): go-sdk sends a list_changed to
//     every session at once, about 10 ms after its list changed, so the
//     sending middleware drops it for the sessions whose principal was not
//     announced within announceWindow (announcements);
//   - one session's list_changed (discovery.go's reveal): go-sdk notifies
//     all sessions or none, so the sending handler below the front door's
//     sending middleware is kept (Front.send) and called with a
//     ServerRequest for that one session (TestProgressiveDiscovery sees it
//     arrive);
//   - resultType: go-sdk sets CallToolResult.resultType (2026-07-28) only on
//     results of its own tool handlers (the field is unexported), so it is
//     set by decoding;
//   - the principal: go-sdk binds a session to auth.TokenInfo.UserID, and
//     its one way in is auth.RequireBearerToken, whose verifier returns what
//     the front door already authenticated;
//   - session adoption: go-sdk creates a stateful session only on
//     initialize, so adopting a session minted by another replica replays
//     one through the stateful handler (internalPOST);
//   - logging: go-sdk logs every adopted session's undelivered
//     notification as a warning (quietUndelivered);
//   - MethodNotFound: go-sdk replaces any error a handler returns with code
//     -32601 by its own bare "method not found: <method>", without the
//     error's message and data (and answers it with HTTP 404 in
//     2026-07-28), so UNIMPLEMENTED is sent as codeUnimplemented;
//   - tasks (tasks.go): go-sdk has none. tasks/* are custom methods
//     (AddReceivingCustomMethod, answered by the middleware with results of
//     its own type, jsonResult); params.task, which go-sdk drops from
//     tools/call, travels from the body to the handler in a header
//     (taskCallHeader); capabilities.tasks and each tool's
//     execution.taskSupport, which go-sdk's types lack, are added to
//     initialize's and tools/list's results by marshalling them again; and
//     a tasks/* request without params must not be asked its
//     ProtocolVersion (taskRequestVersion).

// codeUnimplemented is the JSON-RPC code of UNIMPLEMENTED errors (an
// upstream that answered MethodNotFound): a server error, so that go-sdk
// sends the error's message and data as they are. The front door itself
// has the method; go-sdk answers methods it has not with -32601.
const codeUnimplemented = -32000

// principalBearer stands in for a bearer token when the caller
// authenticated otherwise (mTLS) or auth is off.
const principalBearer = "toolsvc-authenticated"

type tokenInfoKey struct{}

// tokenInfo is the auth.TokenVerifier of the front door: authentication
// already happened (Handler), so it returns its result.
func tokenInfo(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	if ti, ok := ctx.Value(tokenInfoKey{}).(*auth.TokenInfo); ok {
		return ti, nil
	}
	return nil, auth.ErrInvalidToken
}

// quietUndelivered logs go-sdk's info lines and its "undelivered message"
// warnings at debug level. The warnings: a session adopted from another
// replica (or whose client has gone) has no stream of its own on this
// replica, so every list_changed to it is undelivered here, as expected
// (its client listens where its stream is).
type quietUndelivered struct{ slog.Handler }

func (h quietUndelivered) Handle(ctx context.Context, r slog.Record) error {
	// go-sdk's per-event info lines ("resource subscribed", "resource
	// updated notification sent", …) are debug detail here: toolsvc's
	// audit log and metrics record what matters.
	if r.Level == slog.LevelInfo || (r.Level == slog.LevelWarn && strings.Contains(r.Message, "undelivered message")) {
		r.Level = slog.LevelDebug
		if !h.Handler.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

// Enabled says no to an info line unless debug lines are logged: a logger
// builds a record (the time, the caller's frames, the attributes) for
// every level its handler accepts, and go-sdk writes three info lines
// per session, which its stateless handler makes for every 2026-07-28
// request.
func (h quietUndelivered) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return h.Handler.Enabled(ctx, l)
}

func (h quietUndelivered) WithAttrs(as []slog.Attr) slog.Handler {
	return quietUndelivered{h.Handler.WithAttrs(as)}
}

func (h quietUndelivered) WithGroup(name string) slog.Handler {
	return quietUndelivered{h.Handler.WithGroup(name)}
}

// announceWindow is how long a principal announced for a list (its view
// changed, views.go) lets that list's notifications through: go-sdk sends
// about 10 ms after the marker changes. Within the window, a session whose
// own view did not change in a later change may get that notification too
// (harmless: one more list); only a send go-sdk delayed by more than the
// window could be dropped, so it is generous.
const announceWindow = time.Second

// announcements are, per list, when each principal was last announced.
type announcements struct {
	window time.Duration // announceWindow; tests shorten it
	mu     sync.Mutex
	at     [numListKinds]map[string]time.Time
}

func newAnnouncements() *announcements {
	a := &announcements{window: announceWindow}
	for k := range numListKinds {
		a.at[k] = map[string]time.Time{}
	}
	return a
}

// announce lets list k's next notifications through to p's sessions.
func (a *announcements) announce(k listKind, p string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at[k][p] = time.Now()
}

// forget drops p (its last session ended).
func (a *announcements) forget(p string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range numListKinds {
		delete(a.at[k], p)
	}
}

// recent reports whether p was announced for k within the window.
func (a *announcements) recent(k listKind, p string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.at[k][p]
	return ok && time.Since(at) < a.window
}

// wants reports whether ss should get list k's list_changed being sent.
func (f *Front) wants(ss *mcp.ServerSession, k listKind) bool {
	if !f.perPrincipal(k) {
		return true
	}
	p, ok := f.principalOf(ss)
	if !ok {
		return true // not recorded: notify rather than miss
	}
	return f.announced.recent(k, p)
}

// sendingMiddleware drops a list_changed for sessions whose view of that
// list did not change, and keeps an elicitation's content as given.
func (f *Front) sendingMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	f.send = next
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		for k := range numListKinds {
			if method != k.method() {
				continue
			}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && !f.wants(ss, k) {
				return nil, nil
			}
		}
		if method == "elicitation/create" {
			res, err := next(ctx, method, req)
			if err == nil {
				keepElicitContent(ctx, res)
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// listChangedMarker is a tool the go-sdk server holds only so that adding
// and removing it makes go-sdk send notifications/tools/list_changed to
// every session (legacy sessions on their stream, 2026-07-28 ones on their
// subscriptions/listen): the SDK has no other way to notify its sessions.
// The middleware answers tools/list and tools/call, so no client sees it.
const listChangedMarker = "toolsvc-catalog-changed"

func (f *Front) notifyListChanged() {
	f.markerMu.Lock()
	defer f.markerMu.Unlock()
	// The marker is added, then removed: two changes within go-sdk's own
	// 10 ms debounce, one notification.
	f.server.AddTool(&mcp.Tool{Name: listChangedMarker, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("not a tool")
		})
	f.server.RemoveTools(listChangedMarker)
}

// withResultType is res with the 2026-07-28 resultType set. go-sdk sets
// it only on results of its own tool handlers (the field is unexported);
// decoding it is the one way in, so a one-field object is decoded and the
// exported fields copied over.
func withResultType(res *mcp.CallToolResult) *mcp.CallToolResult {
	rt := `{"resultType":"complete"}`
	if core.NeedsInput(res) {
		rt = `{"resultType":"input_required"}`
	}
	out := new(mcp.CallToolResult)
	if err := json.Unmarshal([]byte(rt), out); err != nil {
		return res
	}
	out.Meta, out.Content, out.StructuredContent, out.IsError = res.Meta, res.Content, res.StructuredContent, res.IsError
	out.InputRequests, out.RequestState = res.InputRequests, res.RequestState
	return out
}

// promptInputRequired and readInputRequired are a prompt's and a read's
// input_required with its resultType set, as withResultType. (Their
// complete results get theirs in eraResult: a 2026-07-28 result without
// one is invalid, and the Python SDK 2.x refuses it.)
func promptInputRequired(res *mcp.GetPromptResult) *mcp.GetPromptResult {
	out := new(mcp.GetPromptResult)
	if err := json.Unmarshal([]byte(`{"resultType":"input_required","messages":[]}`), out); err != nil {
		return res
	}
	out.Meta, out.InputRequests, out.RequestState = res.Meta, res.InputRequests, res.RequestState
	return out
}

func readInputRequired(res *mcp.ReadResourceResult) *mcp.ReadResourceResult {
	out := new(mcp.ReadResourceResult)
	if err := json.Unmarshal([]byte(`{"resultType":"input_required","contents":[]}`), out); err != nil {
		return res
	}
	out.Meta, out.InputRequests, out.RequestState = res.Meta, res.InputRequests, res.RequestState
	return out
}

// Resource and prompt list_changed: go-sdk sends
// notifications/resources/list_changed and notifications/prompts/list_changed
// when its own resource and prompt lists change, so a marker resource and a
// marker prompt are added and removed, as for tools (listChangedMarker);
// the middleware answers every list and read, so no client sees them.
const listChangedMarkerURI = "toolsvc:catalog-changed"

func (f *Front) notifyResourcesChanged() {
	f.markerMu.Lock()
	defer f.markerMu.Unlock()
	f.server.AddResource(&mcp.Resource{URI: listChangedMarkerURI, Name: listChangedMarker},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, mcp.ResourceNotFoundError(listChangedMarkerURI)
		})
	f.server.RemoveResources(listChangedMarkerURI)
}

func (f *Front) notifyPromptsChanged() {
	f.markerMu.Lock()
	defer f.markerMu.Unlock()
	f.server.AddPrompt(&mcp.Prompt{Name: listChangedMarker},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return nil, fmt.Errorf("not a prompt")
		})
	f.server.RemovePrompts(listChangedMarker)
}

// internalPOST sends a JSON-RPC message through the stateful handler in
// the context (principal, TokenInfo) of r, discarding the answer.
func (f *Front) internalPOST(r *http.Request, sid, body string) int {
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(sessionIDHeader, sid)
	}
	if pv := r.Header.Get(protocolVersionHeader); pv != "" && sid != "" {
		req.Header.Set(protocolVersionHeader, pv)
	}
	w := &discardWriter{header: http.Header{}}
	f.stateful.ServeHTTP(w, req)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.code
}

type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *discardWriter) Flush() {}

// principalContext puts the request's principal (from TokenInfo) into ctx
// for the pipeline; a stateful session's handler context is the session's,
// not the request's.
func principalContext(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	if extra == nil || extra.TokenInfo == nil {
		return ctx
	}
	ti := extra.TokenInfo
	if st, ok := ti.Extra[authStateExtraKey].(*core.AuthState); ok && st != nil {
		ctx = core.WithAuthState(ctx, st)
	}
	if ok, _ := ti.Extra[principalAuthKey].(bool); !ok {
		return ctx
	}
	m, _ := ti.Extra[principalMethodKey].(string)
	if tok, _ := ti.Extra[subjectExtraKey].(string); tok != "" && m == "jwt" {
		ctx = core.WithSubjectToken(ctx, tok)
	}
	return core.WithPrincipal(ctx, core.Principal{Name: ti.UserID, Method: m})
}
