// Package mcpfront is toolsvc's MCP front door: the merged catalog served
// as an MCP server over streamable HTTP and legacy HTTP+SSE, built on the
// transport-neutral core (service/core) alone. It imports no gRPC package,
// no generated API and no part of mcpbridge (service/core's TestLayering
// and TestWiresImportTheCoreOnly keep it so): who may see what is the
// core's View, a resource subscription is the core's hub.
package mcpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsvc/toolsvc/internal/loopback"
	"github.com/toolsvc/toolsvc/service/core"
)

// The MCP front door: the merged catalog served as an MCP server over
// streamable HTTP (/mcp) and legacy HTTP+SSE (/sse), with go-sdk's server.
// It is one more way into the call pipeline (BeginCall … End): the same
// authentication, authorization, rate limits, size limits, argument
// validation, metrics, audit and error mapping as CallTool.
//
// go-sdk's server answers the protocol (initialize, server/discover, ping,
// subscriptions/listen, sessions); a receiving middleware answers
// tools/list from the catalog snapshot and tools/call through the
// pipeline, so no tool is registered with AddTool and a catalog revision
// costs the front door nothing until someone lists.
//
// Protocol eras, per request: a request of protocol 2026-07-28 or later
// (MCP-Protocol-Version header, or the per-request _meta protocol version)
// goes to go-sdk's handler in Stateless mode, where any replica serves any
// request and list_changed arrives on the client's subscriptions/listen
// stream. Everything else (2025-11-25 and older) goes to go-sdk's stateful
// handler: initialize creates a session whose Mcp-Session-Id is
// self-describing (see sessionIDs), so that a replica that has never seen
// it adopts it instead of answering "session not found".

// Options configure the MCP front door.
type Options struct {
	Logger *slog.Logger
	// ListenAddr is the address the front door listens on; with no
	// AllowedHosts, a loopback listen address allows only loopback Host
	// headers (DNS rebinding protection).
	ListenAddr string
	// AllowedHosts are the Host header values accepted (host or host:port;
	// "*" accepts any). Empty: loopback names when ListenAddr is loopback,
	// else any host.
	AllowedHosts []string
	// AllowedOrigins are the Origin header values accepted from browsers
	// (scheme://host[:port]); a request without Origin is not a browser's
	// and is accepted. Empty: an Origin must name the request's own Host.
	AllowedOrigins []string
	// SessionKey signs session IDs (HMAC-SHA256). Replicas behind one load
	// balancer must share it; empty uses a fixed key, which still binds a
	// session to its principal.
	SessionKey []byte
	// SessionTimeout closes a stateful session idle this long (default
	// DefaultSessionTimeout). A session is idle while none of its HTTP
	// requests (calls, its GET stream) is being served.
	SessionTimeout time.Duration
	// MaxSessions caps the stateful sessions of this replica (default
	// DefaultMaxSessions); MaxSessionsPerPrincipal caps one principal's
	// (default DefaultMaxSessionsPerPrincipal; without auth every
	// caller is the same principal). At a cap, a new session (initialize,
	// or the adoption of one minted elsewhere) evicts the session idle the
	// longest, of the principal when its own cap is reached; when none is
	// idle it is refused with HTTP 503 (see sessionTable).
	MaxSessions             int
	MaxSessionsPerPrincipal int
	// BodyTimeout bounds the time to read a request body once its
	// headers are in (default DefaultBodyTimeout): a client that
	// trickles a body is cut off (HTTP 408, connection closed). Headers
	// are bounded by the http.Server (serve: ReadHeaderTimeout).
	BodyTimeout time.Duration
	// Registry, if set, gets the front door's session metrics.
	Registry prometheus.Registerer
	// PageSize of tools/list (default DefaultPageSize).
	PageSize int
	// Debounce between a catalog change and list_changed (default
	// DefaultListChangedDebounce).
	Debounce time.Duration
	// Discovery turns on progressive discovery (discovery.go).
	Discovery Discovery
}

// Front door defaults.
const (
	DefaultPageSize            = 500
	DefaultSessionTimeout      = 30 * time.Minute
	DefaultListChangedDebounce = 50 * time.Millisecond
	// DefaultMaxSessions and DefaultMaxSessionsPerPrincipal bound
	// the memory of stateful sessions (about 33 KB of resident memory and
	// one goroutine each, measured with tests/frontflood): a client that
	// initializes and walks away holds a place until the cap makes it the
	// oldest idle one. An evicted client
	// loses nothing but its resource subscriptions: its next request is
	// adopted (see sessionIDs).
	DefaultMaxSessions             = 1000
	DefaultMaxSessionsPerPrincipal = 250
	DefaultBodyTimeout             = 30 * time.Second
	// mcpBodySlack is what the JSON-RPC envelope may add to a call's
	// arguments before the HTTP body limit (413) applies; the pipeline's
	// request limit (REQUEST_TOO_LARGE, naming the limit) applies first.
	mcpBodySlack = 64 << 10
)

// Front is the MCP front door of a Server.
type Front struct {
	c      *core.Core
	log    *slog.Logger
	opts   Options
	server *mcp.Server
	hosts  hostPolicy
	ids    sessionIDs

	stateful  *mcp.StreamableHTTPHandler
	stateless *mcp.StreamableHTTPHandler
	sse       *mcp.SSEHandler
	sseOwners sseOwners // principals of the open SSE sessions (sessions.go)
	mux       *http.ServeMux
	// withTokenInfo is mux behind auth.RequireBearerToken.
	withTokenInfo http.Handler

	// newSessions serialises the creation of stateful sessions: go-sdk
	// asks GetSessionID (no arguments) for the ID of the session it is
	// creating, and nextID is the answer for the one being created now.
	newSessions sync.Mutex
	nextID      string
	sessions    sessionTable // stateful sessions on this replica (sessions.go)

	list  listCache
	views *views
	// announced narrows go-sdk's list_changed to the principals whose
	// view changed (gosdk.go).
	announced *announcements
	found     foundTools // tools each session's searches found (discovery.go)
	// send is go-sdk's sending handler below sendingMiddleware: a
	// notification to one session (discovery.go's reveal).
	send     mcp.MethodHandler
	subs     frontSubs // resource subscriptions (resources.go)
	busyMu   sync.Mutex
	busy     map[*mcp.ServerSession]int // handlers in flight (but listen streams), for Drain and eviction
	lastEnd  time.Time                  // when a call last ended (busyMu), for Drain
	markerMu sync.Mutex
	paths    *resultPaths       // results passed through or encoded (passthrough.go)
	inline   prometheus.Counter // calls handled on their POST's goroutine (jsonanswer.go)
	// levels holds the sessions whose client set a log level
	// (*mcp.ServerSession → struct{}; jsonanswer.go's setLevel).
	levels sync.Map
	// noPass turns the pass-through off (tests compare both paths).
	noPass bool

	stop chan struct{}
	once sync.Once
}

// New returns the front door of c. Run keeps list_changed going; Handler
// serves it.
func New(c *core.Core, o Options) *Front {
	if o.Logger == nil {
		o.Logger = c.Logger()
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultListChangedDebounce
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerPrincipal <= 0 {
		o.MaxSessionsPerPrincipal = DefaultMaxSessionsPerPrincipal
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	f := &Front{c: c, log: o.Logger, opts: o, busy: map[*mcp.ServerSession]int{}, views: newViews(), announced: newAnnouncements(),
		hosts: newHostPolicy(o.ListenAddr, o.AllowedHosts, o.AllowedOrigins),
		ids:   newSessionIDs(o.SessionKey),
		stop:  make(chan struct{})}
	f.server = mcp.NewServer(frontImpl, &mcp.ServerOptions{
		Logger: slog.New(quietUndelivered{o.Logger.Handler()}),
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			// Upstreams' log messages during a call (dispatch).
			Logging: &mcp.LoggingCapabilities{},
		},
		SubscribeHandler:   f.subscribe,
		UnsubscribeHandler: f.unsubscribe,
		// Declares the completions capability; the middleware answers
		// completion/complete with it (complete.go).
		CompletionHandler: f.complete,
		GetSessionID:      func() string { return f.nextID },
		// Progress is sent by the tools/call middleware; keepalive is the
		// client's business.
	})
	f.paths = newResultPaths(o.Registry)
	f.inline = newInlineCalls(o.Registry)
	registerTaskMethods(f.server)
	f.server.AddReceivingMiddleware(f.middleware)
	f.server.AddSendingMiddleware(f.sendingMiddleware)
	getServer := func(*http.Request) *mcp.Server { return f.server }
	maxBody := int64(c.MaxRequestBytes()) + mcpBodySlack
	f.sessions.init(f)
	f.stateful = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		// No SessionTimeout: the session table closes idle sessions
		// itself. go-sdk's timer runs while a GET stream is open (it
		// pauses for POSTs only), and the table must know of every
		// session that closes, without a goroutine per session waiting
		// for it.
		Logger: o.Logger, MaxRequestBodyBytes: maxBody,
		// Host and Origin are checked by hostPolicy, before anything else.
		DisableLocalhostProtection: true,
	})
	f.stateless = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: o.Logger, Stateless: true, MaxRequestBodyBytes: maxBody,
		DisableLocalhostProtection: true, PropagateRequestCancellation: true,
	})
	f.sse = mcp.NewSSEHandler(getServer, &mcp.SSEOptions{DisableLocalhostProtection: true, MaxRequestBodyBytes: maxBody})
	f.mux = http.NewServeMux()
	f.mux.HandleFunc("/mcp", f.serveStreamable)
	f.mux.HandleFunc("/sse", f.serveSSE)
	f.withTokenInfo = auth.RequireBearerToken(tokenInfo, nil)(f.mux)
	return f
}

// Handler serves /mcp (streamable HTTP, both protocol eras) and /sse
// (legacy HTTP+SSE): Host and Origin checked, then the caller
// authenticated, on every request.
func (f *Front) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Both refusals are decided from the headers alone and sent before
		// any of the body is read.
		if err := f.hosts.check(r); err != nil {
			closeAfterRefusal(w, r)
			http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		r.Header.Del(taskCallHeader) // set by serveStreamable only (tasks.go)
		ctx, p, err := f.c.Authenticate(httpAuthContext(r))
		if err != nil {
			closeAfterRefusal(w, r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolsvc"`)
			writeHTTPJSONRPCError(w, http.StatusUnauthorized, err.Bounded().Message)
			return
		}
		if r.Method == http.MethodGet {
			// A GET is a long-lived stream (/mcp's standalone stream, a
			// legacy /sse session): it ends when a reload no longer
			// accepts its credentials (authstate.go).
			var stop func()
			ctx, stop = f.c.EndWhenRevoked(ctx)
			defer stop()
		}
		if r.ContentLength != 0 {
			// The body must arrive within BodyTimeout: the connection's
			// read deadline, which net/http clears once the body has been
			// read to its end (the background read of HTTP/1.1; per
			// stream in HTTP/2). Only with a body to read: a GET's
			// connection is already being read in the background, for
			// the client going away.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(f.opts.BodyTimeout))
		}
		// go-sdk binds a stateful session to TokenInfo.UserID and hands
		// TokenInfo to every request's handler (RequestExtra): the
		// principal travels with each request, not with the session. Its
		// one way in is auth.RequireBearerToken, whose verifier here
		// returns what authenticate established (a token, a JWT, a client
		// certificate, or the anonymous caller when auth is off).
		ti := &auth.TokenInfo{UserID: p.Name, Expiration: time.Now().Add(time.Hour),
			Extra: map[string]any{principalMethodKey: p.Method, principalAuthKey: p.Name != "" || p.Method != "", authStateExtraKey: core.AuthStateFrom(ctx),
				subjectExtraKey: core.SubjectTokenFrom(ctx)}}
		r = r.WithContext(context.WithValue(ctx, tokenInfoKey{}, ti))
		if !strings.HasPrefix(strings.ToLower(r.Header.Get("Authorization")), "bearer ") {
			r.Header.Set("Authorization", "Bearer "+principalBearer)
		}
		f.withTokenInfo.ServeHTTP(w, r)
	})
}

// closeAfterRefusal makes net/http close the connection after a refusal
// of a request whose body was not read. Otherwise, to keep the connection,
// it reads and discards up to 256 KiB of the body before it writes the
// refusal's headers (net/http's maxPostHandlerReadBytes): a client that
// trickles its body would hold the connection, and see no answer, until
// it had sent it all. Connection: close alone does not end that: once the
// handler returns, net/http still discards as much of the body before it
// closes (the request body's Close); the read deadline, already passed,
// makes that discard end at once.
func closeAfterRefusal(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

const (
	principalMethodKey = "toolsvc.principal.method"
	principalAuthKey   = "toolsvc.principal.authenticated"
	// subjectExtraKey carries a JWT-authenticated caller's JWT to its
	// handler: per-user upstreams exchange it (never logged).
	subjectExtraKey = "toolsvc.principal.subject"
	// authStateExtraKey carries the auth state the request was
	// authenticated under to its handler, which decides under the same one
	// (authstate.go).
	authStateExtraKey = "toolsvc.auth.state"
)

// httpAuthContext is the request's context with the credentials it
// presented: its Authorization header and the client certificate chains
// its TLS handshake verified.
func httpAuthContext(r *http.Request) context.Context {
	c := core.Credentials{Bearer: core.BearerOf(r.Header.Get("Authorization"))}
	if r.TLS != nil {
		c.VerifiedChains = r.TLS.VerifiedChains
	}
	return core.WithCredentials(r.Context(), c)
}

// Run sends notifications/tools/list_changed to every connected client
// when the catalog revision changes: at most one per burst of revisions
// within the debounce; likewise resources/list_changed and
// prompts/list_changed (runResources). It returns when ctx ends or Close
// is called; whoever starts it joins it by waiting for that.
func (f *Front) Run(ctx context.Context) {
	// Every principal's listing too: a principal's own list changes their
	// view (views.go).
	sub := f.c.SubscribeAllTools()
	defer sub.Close()
	last, lastPrivate := f.c.Catalog().Current().Revision, f.c.PrivateGen()
	stop := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-f.stop:
		}
		close(stop)
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.runResources(stop)
	}()
	defer wg.Wait()
	cat := f.c.Catalog()
	f.follow(stop, sub.C(), func(authChanged bool) {
		// A reload's new rules change views as a catalog change does.
		snap, private := cat.Current(), f.c.PrivateGen()
		if snap.Revision == last && private == lastPrivate && !authChanged {
			return
		}
		last, lastPrivate = snap.Revision, private
		if f.viewsChanged(kindTools)[kindTools] {
			f.notifyListChanged()
		}
	})
}

// follow calls fire, debounced (Options.Debounce), after signals on in (a
// catalog's changes) and after every replacement of the auth state, until
// stop is closed; authChanged says whether the auth generation differs
// from the one of the previous fire. The list_changed loops of tools
// (Run) and of resources and prompts (runResources) are this with their
// own comparison.
func (f *Front) follow(stop <-chan struct{}, in <-chan struct{}, fire func(authChanged bool)) {
	changed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.forwardChanges(stop, in, changed)
	}()
	lastGen := f.c.CurrentAuth().Gen()
	debounce(stop, changed, f.opts.Debounce, func() {
		gen := f.c.CurrentAuth().Gen()
		authChanged := gen != lastGen
		lastGen = gen
		fire(authChanged)
	})
}

// forwardChanges signals out (capacity 1, never blocking) on every signal
// of in and every replacement of the auth state, until stop is closed.
func (f *Front) forwardChanges(stop <-chan struct{}, in <-chan struct{}, out chan<- struct{}) {
	st := f.c.CurrentAuth()
	for {
		select {
		case <-stop:
			return
		case <-in:
		case <-st.Changed():
			st = f.c.CurrentAuth()
		}
		select {
		case out <- struct{}{}:
		default:
		}
	}
}

// debounce calls fire once d after the first signal on in that follows the
// previous fire (signals meanwhile are merged), until stop is closed.
func debounce(stop <-chan struct{}, in <-chan struct{}, d time.Duration, fire func()) {
	var timer *time.Timer
	var due <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-stop:
			return
		case <-in:
			if timer == nil {
				timer = time.NewTimer(d)
				due = timer.C
			}
		case <-due:
			timer, due = nil, nil
			fire()
		}
	}
}

// Close stops Run and closes every session of the front door at once
// (clients reconnect, to another replica). It is idempotent.
func (f *Front) Close() {
	f.once.Do(func() { close(f.stop) })
	f.sessions.shut()
	for ss := range f.server.Sessions() {
		_ = ss.Close()
	}
	f.sessions.wait()
	f.closeSubs()
}

// Drain stops Run and closes each session once it has no call in flight
// (open streams — GET, subscriptions/listen — end at once, calls finish),
// until ctx ends; then it closes the rest.
func (f *Front) Drain(ctx context.Context) {
	f.once.Do(func() { close(f.stop) })
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		left := 0
		for ss := range f.server.Sessions() {
			f.busyMu.Lock()
			// A call's handler returns before go-sdk writes its response:
			// a session is closed only once no call has ended for
			// drainResponseGrace, so that the last responses are sent.
			busy := f.busy[ss] > 0 || time.Since(f.lastEnd) < drainResponseGrace
			f.busyMu.Unlock()
			if busy {
				left++
				continue
			}
			_ = ss.Close()
		}
		if left == 0 {
			f.sessions.shut()
			f.sessions.wait()
			f.closeSubs()
			return
		}
		select {
		case <-ctx.Done():
			f.Close()
			return
		case <-t.C:
		}
	}
}

// handling reports whether a handler of ss is running.
func (f *Front) handling(ss *mcp.ServerSession) bool {
	f.busyMu.Lock()
	defer f.busyMu.Unlock()
	return f.busy[ss] > 0
}

func (f *Front) callStarted(ss *mcp.ServerSession) {
	f.busyMu.Lock()
	f.busy[ss]++
	f.busyMu.Unlock()
}

func (f *Front) callEnded(ss *mcp.ServerSession) {
	f.busyMu.Lock()
	if f.busy[ss]--; f.busy[ss] <= 0 {
		delete(f.busy, ss)
	}
	f.lastEnd = time.Now()
	f.busyMu.Unlock()
}

// drainResponseGrace is how long Drain leaves sessions open after a call
// ended, for go-sdk to write its response.
const drainResponseGrace = 250 * time.Millisecond

// middleware answers tools/list and tools/call, the resource and prompt
// lists, resources/read, prompts/get and completion/complete; everything
// else is go-sdk's (resources/subscribe through the subscribe handler).
func (f *Front) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	answer := f.answering(next)
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		res, err = answer(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		// Recovered like answering's handlers: a panic here would end
		// the process (go-sdk does not recover), as a tasks/list without
		// params once did.
		defer func() {
			if p := recover(); p != nil {
				f.log.ErrorContext(ctx, "panic in MCP handler", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = nil, mcpError(core.InternalFailure())
			}
		}()
		return eraResult(req, res), nil // every result as its era has it (eras.go)
	}
}

func (f *Front) answering(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (_ mcp.Result, err error) {
		// A panic below becomes an internal error, logged with its stack,
		// as in the gRPC server's recovery interceptor: go-sdk does not
		// recover handler panics.
		defer func() {
			if p := recover(); p != nil {
				f.log.ErrorContext(ctx, "panic in MCP handler", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				err = mcpError(core.InternalFailure())
			}
		}()
		// Every handler counts as busy, for Drain and for the session
		// table (closing a session waits for its handlers, and the table
		// closes only idle ones): a subscribe waiting on its upstream, or
		// any handler whose client's POST has gone, runs on. A listen
		// stream is no call: Drain closes it.
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && method != "subscriptions/listen" {
			f.callStarted(ss)
			defer f.callEnded(ss)
		}
		switch method {
		case "tools/list":
			return f.listTools(ctx, req.(*mcp.ListToolsRequest))
		case "tools/call":
			return f.callTool(ctx, req.(*mcp.CallToolRequest))
		case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update":
			return f.taskMethod(ctx, method, req.(*mcp.ServerRequest[*taskParams]))
		case "server/discover":
			res, err := next(ctx, method, req)
			if d, ok := res.(*mcp.DiscoverResult); ok && err == nil && f.tasksOffered() {
				res = withTasksExtension(d)
			}
			return res, err
		case "resources/list":
			return f.listResources(ctx, req.(*mcp.ListResourcesRequest))
		case "resources/templates/list":
			return f.listResourceTemplates(ctx, req.(*mcp.ListResourceTemplatesRequest))
		case "resources/read":
			return f.readResource(ctx, req.(*mcp.ReadResourceRequest))
		case "prompts/list":
			return f.listPrompts(ctx, req.(*mcp.ListPromptsRequest))
		case "prompts/get":
			return f.getPrompt(ctx, req.(*mcp.GetPromptRequest))
		case "completion/complete":
			return f.complete(ctx, req.(*mcp.CompleteRequest))
		case "logging/setLevel":
			res, err := next(ctx, method, req)
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && err == nil {
				f.sessions.setLogs(ss) // its calls stream from now on (answerJSON)
				f.setLevel(ss)         // and relay log messages (dispatch)
			}
			return res, err
		case "resources/subscribe", "resources/unsubscribe":
			// The subscribe handler authenticates the request's principal.
			return next(principalContext(ctx, req.GetExtra()), method, req)
		case "subscriptions/listen":
			// Its resource subscriptions go through the subscribe
			// handler, with the request's principal.
			ctx = principalContext(ctx, req.GetExtra())
			f.log.DebugContext(ctx, "MCP subscriptions/listen opened")
			ss := req.GetSession().(*mcp.ServerSession)
			f.addSession(ss, req.GetExtra())
			defer f.removeSession(ss)
			res, err := next(ctx, method, req)
			f.log.DebugContext(ctx, "MCP subscriptions/listen ended", "error", err, "ctx", ctx.Err())
			return res, err
		case "initialize":
			res, err := next(ctx, method, req)
			if err == nil {
				ss := req.GetSession().(*mcp.ServerSession)
				if ss.ID() != "" { // a session that outlives this request
					f.addSession(ss, req.GetExtra())
					f.track(ss)
				}
				if ir, ok := res.(*mcp.InitializeResult); ok && tasksReach(req, ir.ProtocolVersion) && f.tasksOffered() {
					return withTasksCapability(ir)
				}
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// track records a session of this replica that outlives its initialize:
// a stateful /mcp session joins its entry in the session table, which
// closes it and forgets it; an SSE session (bounded by its open GET
// stream) is forgotten when it ends.
func (f *Front) track(ss *mcp.ServerSession) {
	if f.sessions.bind(ss) {
		return
	}
	go func() {
		_ = ss.Wait()
		f.removeSession(ss)
	}()
}

// listTools answers tools/list from the catalog snapshot: the same
// exposed names, schemas and annotations as ListTools, the caller's tools
// only, paginated with ListTools' page tokens (keyset over the revision
// the listing started from, so any replica with that revision continues
// it).
func (f *Front) listTools(ctx context.Context, req *mcp.ListToolsRequest) (mcp.Result, error) {
	ctx, _, e := f.c.Authenticate(principalContext(ctx, req.GetExtra()))
	if e != nil {
		return nil, mcpError(e)
	}
	cursor := ""
	if req.Params != nil {
		cursor = req.Params.Cursor
	}
	if cursor == "" {
		f.c.PrimeCatalog(ctx) // per-user upstreams list through their first caller's session
	}
	snap, after, e := f.c.ToolCursor(ctx, cursor, mcpFields)
	if e != nil {
		return nil, mcpError(e)
	}
	all := f.list.tools(snap, snap == f.c.Catalog().Current())
	var keep func(*mcp.Tool) bool
	if view := f.c.ViewOf(ctx); !view.All() {
		keep = func(t *mcp.Tool) bool { return view.Tool(t.Name) }
	}
	progressive := f.progressiveFor(ctx)
	if progressive { // the core set and what this session found (discovery.go)
		visible := keep
		var found func(string) bool
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && req.ProtocolVersion() < statelessEra {
			found = f.found.of(ss)
		}
		keep = func(t *mcp.Tool) bool {
			return (f.inCoreSet(t.Name) || (found != nil && found(t.Name))) && (visible == nil || visible(t))
		}
	}
	tools, next := core.Page(all, core.ToolsAfter(snap, after), f.opts.PageSize, 0, keep, core.Same[*mcp.Tool], nil)
	if progressive && cursor == "" {
		tools = append([]*mcp.Tool{searchTool, callThroughTool}, tools...)
	}
	res := &mcp.ListToolsResult{Tools: tools}
	if res.Tools == nil {
		res.Tools = []*mcp.Tool{}
	}
	if next >= 0 {
		res.NextCursor = f.c.ToolPageToken(ctx, snap, tools[len(tools)-1].Name)
	}
	// Its 2026-07-28 cache hints (the principal's own, stale at once:
	// list_changed says when to list again) are eraResult's.
	if v := req.ProtocolVersion(); v < statelessEra && tasksReach(req, v) && f.tasksOffered() {
		return f.withTaskSupport(res, snap), nil // execution.taskSupport (tasks.go)
	}
	return res, nil
}

// listCache keeps the MCP form of the current snapshot's tools; entries are
// immutable, so an unchanged tool keeps its value across revisions.
type listCache struct {
	mu   sync.Mutex
	snap *core.Snapshot
	list []*mcp.Tool
	m    map[*core.Tool]*mcp.Tool
}

func (c *listCache) tools(s *core.Snapshot, current bool) []*mcp.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == s {
		return c.list
	}
	m := make(map[*core.Tool]*mcp.Tool, len(s.Tools))
	list := make([]*mcp.Tool, len(s.Tools))
	for i, t := range s.Tools {
		p := c.m[t]
		if p == nil {
			p = toolToMCP(t)
		}
		m[t], list[i] = p, p
	}
	if current {
		c.snap, c.list, c.m = s, list, m
	}
	return list
}

func toolToMCP(t *core.Tool) *mcp.Tool {
	out := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, Annotations: t.Annotations, Meta: t.Meta}
	out.InputSchema = t.InputSchema
	if out.InputSchema == nil {
		out.InputSchema = map[string]any{"type": "object"}
	}
	if t.OutputSchema != nil {
		out.OutputSchema = t.OutputSchema
	}
	return out
}

// callTool runs one tools/call through the pipeline. Progress goes to the
// client as notifications/progress with its token; the client's
// notifications/cancelled (or, in 2026-07-28, the end of its request)
// cancels ctx and with it the upstream call. A call that asks for a task
// (callTaskOptions) and gets one answers the task (tasks.go).
func (f *Front) callTool(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	if mcp.HandledInline(ctx) {
		f.inline.Inc()
	}
	p := req.Params
	if p == nil {
		return nil, mcpError(core.InvalidField("params", "required (name and arguments)"))
	}
	in := core.CallInput{Name: p.Name, Size: len(p.Name) + len(p.Arguments), Fields: mcpFields}
	if a := strings.TrimSpace(string(p.Arguments)); a != "" && a != "null" {
		in.ArgumentsJSON = a
	}
	if (p.Name == SearchToolName || p.Name == CallToolName) && f.opts.Discovery.Progressive {
		actx, _, e := f.c.Authenticate(principalContext(ctx, req.GetExtra()))
		if e != nil {
			return nil, mcpError(e)
		}
		if f.progressiveFor(actx) && p.Name == SearchToolName {
			res, err := f.searchTools(actx, req, p.Arguments)
			if err == nil {
				if req.ProtocolVersion() >= statelessEra {
					res = withResultType(res)
				}
			}
			return res, err
		}
		if f.progressiveFor(actx) {
			name, args, e := callThrough(p.Arguments)
			if e != nil {
				res, err := mcpCallFailure(e)
				if err == nil {
					res = withEraResultType(req, res)
				}
				return res, err
			}
			// Its refusals of the name are built as call_tool's arguments
			// (callThroughFields).
			in.Name, in.ArgumentsJSON, in.Fields = name, args, callThroughFields
		}
	}
	// A 2026-07-28 request's capabilities are re-encoded and decoded out
	// of its _meta at each ClientCapabilities: read once.
	caps := req.ClientCapabilities()
	in.Task, in.Invalid = callTaskOptions(req, caps)
	var created *core.Task
	var pass []byte // the last round's result as the upstream sent it (passthrough.go)
	res, err := askRounds(ctx, req, requestInput(caps, p.InputResponses, p.RequestState),
		func(input *core.InputOptions) (*mcp.CallToolResult, mcp.InputRequestMap, string, error) {
			in.Input = input
			res, t, b, err := f.callRound(ctx, req, in)
			created, pass = t, b
			if err != nil || t != nil || !core.NeedsInput(res) {
				return res, nil, "", err
			}
			return res, res.InputRequests, res.RequestState, nil
		})
	switch {
	case err != nil:
		return nil, err
	case created != nil:
		return createdTask(created, req.ProtocolVersion() >= statelessEra), nil
	case pass != nil:
		return newRawResult(pass), nil
	}
	return res, nil
}

// maxClientRounds bounds the rounds of input one front-door request asks
// its client for.
const maxClientRounds = 16

// askRounds runs a request whose upstream may ask for input (tools/call,
// prompts/get, resources/read; round is one round of it through the
// core, returning what it asks and its state when it is input_required).
// A 2026-07-28 client gets the input_required and continues the request
// itself, on any replica, with its inputResponses and the requestState. A
// 2025-11-25 client is asked with server-to-client requests on its
// session, and the request goes on with its answers.
func askRounds[R any, P interface {
	GetSession() mcp.Session
	ProtocolVersion() string
}](ctx context.Context, req P, in *core.InputOptions, round func(*core.InputOptions) (R, mcp.InputRequestMap, string, error)) (R, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	stateless := req.ProtocolVersion() >= statelessEra
	for n := 0; ; n++ {
		res, reqs, state, err := round(in)
		if err != nil || stateless || ss == nil || in == nil || len(reqs) == 0 || n >= maxClientRounds {
			return res, err
		}
		answers, aerr := askClient(ctx, ss, reqs)
		if aerr != nil {
			var zero R
			return zero, aerr
		}
		in = &core.InputOptions{Kinds: in.Kinds, Responses: answers, State: state}
	}
}

// requestInput is what a front-door request offers when an upstream asks
// for input (nil: nothing, the server's policy answers): the elicitation,
// sampling and roots capabilities the client declared — at initialization
// (2025-11-25 and older) or in the request's _meta (2026-07-28) — and a
// 2026-07-28 retry's answers and state.
func requestInput(caps *mcp.ClientCapabilities, responses mcp.InputResponseMap, state string) *core.InputOptions {
	in := clientInput(caps)
	if state != "" || len(responses) > 0 {
		if in == nil {
			in = &core.InputOptions{}
		}
		in.Responses, in.State = responses, state
	}
	return in
}

// clientInput is the kinds of input a client's capabilities offer.
func clientInput(caps *mcp.ClientCapabilities) *core.InputOptions {
	if caps == nil {
		return nil
	}
	var k core.InputKinds
	if e := caps.Elicitation; e != nil {
		k.Form = e.Form != nil || e.URL == nil // {} means form
		k.URL = e.URL != nil
	}
	k.Sampling = caps.Sampling != nil
	k.Roots = caps.RootsV2 != nil || caps.Roots.ListChanged
	if !k.Any() {
		return nil
	}
	return &core.InputOptions{Kinds: k}
}

// askClient sends the client each request, as a server-to-client request
// on its session, and collects the answers by id.
func askClient(ctx context.Context, ss *mcp.ServerSession, reqs mcp.InputRequestMap) (map[string]mcp.InputResponse, error) {
	out := make(map[string]mcp.InputResponse, len(reqs))
	for id, r := range reqs {
		var a mcp.InputResponse
		var err error
		switch q := r.(type) {
		case *mcp.ElicitParams:
			a, err = elicitAsGiven(ctx, ss, q)
		case *mcp.CreateMessageWithToolsParams:
			a, err = ss.CreateMessageWithTools(ctx, q)
		case *mcp.CreateMessageParams:
			var cr *mcp.CreateMessageResult
			if cr, err = ss.CreateMessage(ctx, q); err == nil {
				raw, _ := json.Marshal(cr)
				a, err = core.DecodeInputResponse(q, raw)
			}
		case *mcp.ListRootsParams:
			a, err = ss.ListRoots(ctx, q)
		default:
			err = fmt.Errorf("unknown kind of input request %T", r)
		}
		if err != nil {
			return nil, fmt.Errorf("asking the client (%s): %w", id, err)
		}
		out[id] = a
	}
	return out, nil
}

// elicitAsGiven asks the client with elicitation/create and returns its
// answer as the client gave it. go-sdk's ServerSession.Elicit validates an
// accepted form against the requested schema (kept), then fills every
// default the schema has into the content: the upstream could not tell a
// field the user left blank from one set to its default. The sending
// middleware (keepElicitContent) hands Elicit a copy to fill and keeps the
// client's own.
func elicitAsGiven(ctx context.Context, ss *mcp.ServerSession, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	k := &keptElicitContent{}
	res, err := ss.Elicit(context.WithValue(ctx, keptElicitContentKey{}, k), p)
	if err == nil && res != nil && k.set {
		res.Content = k.content
	}
	return res, err
}

type keptElicitContent struct {
	content map[string]any
	set     bool
}

type keptElicitContentKey struct{}

// keepElicitContent is the sending side of elicitAsGiven.
func keepElicitContent(ctx context.Context, res mcp.Result) {
	k, _ := ctx.Value(keptElicitContentKey{}).(*keptElicitContent)
	er, ok := res.(*mcp.ElicitResult)
	if k == nil || !ok || er == nil || er.Content == nil {
		return
	}
	k.content, k.set = er.Content, true
	er.Content = maps.Clone(er.Content)
}

// callRound is one round of a tools/call through the pipeline; the task
// is the one the upstream created for it, if any (in.Task). pass is the
// result to send as it is, when it needs no change (passthrough.go); res
// is the decoded result all the same.
func (f *Front) callRound(ctx context.Context, req *mcp.CallToolRequest, in core.CallInput) (_ *mcp.CallToolResult, _ *core.Task, pass []byte, _ error) {
	pctx := principalContext(ctx, req.GetExtra())
	var raws *core.RawResults
	if in.Task == nil { // a task's answer is the core's (tasks.go)
		raws = &core.RawResults{}
		pctx = core.WithRawResults(pctx, raws)
	}
	c, err := f.c.BeginCall(pctx, in)
	var res *mcp.CallToolResult
	size := 0
	if err == nil {
		res, err = f.dispatch(ctx, c, req)
		if err == nil {
			if pass = f.passCall(raws, res, req); pass != nil {
				size = len(pass)
			} else if raw, merr := json.Marshal(res); merr != nil {
				err = merr
			} else {
				size = len(raw)
			}
			if err == nil {
				err = c.CheckResult(size)
			}
		}
	}
	fail := c.Fail(err)
	if fail != nil {
		res, size, pass = nil, 0, nil
	}
	c.End(fail, res != nil && res.IsError, size)
	if fail != nil {
		if fail.Reason == core.ReasonTaskRequired {
			return nil, nil, nil, taskRequiredError(fail, req.ProtocolVersion() >= statelessEra)
		}
		if res, err = mcpCallFailure(fail); err != nil {
			return nil, nil, nil, err
		}
		f.paths.sent(kindCall, false)
		return withEraResultType(req, res), nil, nil, nil
	}
	if t := c.Task(); t != nil {
		return res, t, nil, nil
	}
	f.paths.sent(kindCall, pass != nil)
	if pass != nil {
		return res, nil, pass, nil // the era's additions are in pass
	}
	return withEraResultType(req, res), nil, nil, nil
}

// passCall is a call's result as the upstream sent it, ready to send to
// the client of req, when it needs no change (nil otherwise).
func (f *Front) passCall(raws *core.RawResults, res *mcp.CallToolResult, req *mcp.CallToolRequest) []byte {
	if f.noPass || res == nil || core.NeedsInput(res) {
		return nil
	}
	raw, ok := raws.Of(res)
	if !ok {
		return nil
	}
	b, ok := passThrough(raw, kindCall, req.ProtocolVersion() >= statelessEra, metaEra(req.Params.Meta))
	if !ok {
		return nil
	}
	return b
}

// withEraResultType is res with its resultType for a 2026-07-28 request.
func withEraResultType(req *mcp.CallToolRequest, res *mcp.CallToolResult) *mcp.CallToolResult {
	if req.ProtocolVersion() >= statelessEra {
		return withResultType(res)
	}
	return res
}

// dispatch calls the upstream, forwarding progress when the client asked
// for it, and the upstream's log messages as notifications/message
// (logMessage). The bridge's callbacks only queue; a sender goroutine
// notifies the client, in order (core.Relay).
//
// Log messages: a 2026-07-28 request asks for them in its own _meta
// (io.modelcontextprotocol/logLevel; none without it, as the specification
// says), and that level is what the upstream is asked for. An older
// session's level is the one the client set with logging/setLevel, which
// go-sdk keeps and applies in ServerSession.Log; the front door relays
// every level and lets go-sdk filter. Before the client sets one, go-sdk
// sends it nothing, so a call of such a session asks its upstream for no
// log messages and runs without a relay (no sender goroutine, no log sink
// on the upstream session, no logLevel in a 2026-07-28 upstream's _meta).
func (f *Front) dispatch(ctx context.Context, c *core.Call, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// c.Context() is the handler's (go-sdk cancels it on the client's
	// notifications/cancelled) with the request's principal.
	callCtx := c.Context()
	var relay core.Relay
	if token := req.Params.GetProgressToken(); token != nil {
		relay.Progress = func(pr core.Progress) error {
			// A client that went away is the call's context's business.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: pr.Progress, Total: pr.Total, Message: pr.Message})
			return nil
		}
	}
	if level, ok := f.clientLogLevel(req); ok {
		relay.LogLevel = level
		relay.Log = func(l core.Log) error {
			// ss.Log filters by the client's level (ctx carries a
			// 2026-07-28 request's own).
			_ = req.Session.Log(ctx, logMessage(l))
			return nil
		}
	}
	if relay.Progress == nil && relay.Log == nil {
		return c.Dispatch(callCtx, nil)
	}
	res, err, _ := relay.Run(func(opts *core.CallOptions) (*mcp.CallToolResult, error) {
		return c.Dispatch(callCtx, opts)
	})
	return res, err
}

// clientLogLevel is the level of log messages the client of req wants:
// a 2026-07-28 request's _meta level (ok false without a valid one), or,
// for an older session, every level once its client has set one with
// logging/setLevel (go-sdk applies it) and none before.
func (f *Front) clientLogLevel(req *mcp.CallToolRequest) (mcp.LoggingLevel, bool) {
	if ip := req.Session.InitializeParams(); ip == nil || ip.ProtocolVersion < statelessEra {
		return "debug", f.levelSet(req.Session)
	}
	level, _ := req.Params.GetMeta()[mcp.MetaKeyLogLevel].(string)
	return mcp.LoggingLevel(level), core.ValidLogLevel(level)
}

// logMessage is an upstream's log message as the front door's client gets
// it: the logger is "<server>/<upstream logger>" (or "<server>" when the
// upstream named none), so the client sees which server spoke.
func logMessage(l core.Log) *mcp.LoggingMessageParams {
	logger := l.Server
	if l.Logger != "" {
		logger += "/" + l.Logger
	}
	return &mcp.LoggingMessageParams{Level: l.Level, Logger: logger, Data: l.Data}
}

// writeHTTPJSONRPCError answers an HTTP request refused before MCP
// handling with a JSON-RPC error body.
func writeHTTPJSONRPCError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32000 - code%1000, "message": msg}})
}

// hostPolicy is the DNS rebinding protection: the Host header must be
// allowed, and a browser's Origin must be allowed too.
type hostPolicy struct {
	loopbackOnly bool
	hosts        map[string]bool // lower-case host or host:port; "*" any
	origins      map[string]bool
}

func newHostPolicy(listen string, hosts, origins []string) hostPolicy {
	p := hostPolicy{hosts: map[string]bool{}, origins: map[string]bool{}}
	for _, h := range hosts {
		p.hosts[strings.ToLower(h)] = true
	}
	for _, o := range origins {
		p.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	if len(hosts) == 0 {
		h, _, err := net.SplitHostPort(listen)
		if err == nil && h != "" && loopback.Host(h) {
			p.loopbackOnly = true
		} else {
			p.hosts["*"] = true
		}
	}
	return p
}

func (p hostPolicy) check(r *http.Request) error {
	host := strings.ToLower(r.Host)
	switch {
	case p.hosts["*"]:
	case p.loopbackOnly:
		if !loopback.Host(host) {
			return fmt.Errorf("Host %q is not a loopback name (the front door listens on loopback; set --mcp-allowed-hosts)", r.Host)
		}
	default:
		h, _, err := net.SplitHostPort(host)
		if err != nil {
			h = host
		}
		if !p.hosts[host] && !p.hosts[h] {
			return fmt.Errorf("Host %q is not in --mcp-allowed-hosts", r.Host)
		}
	}
	origin := strings.ToLower(r.Header.Get("Origin"))
	if origin == "" || p.origins[origin] {
		return nil
	}
	if len(p.origins) == 0 {
		if _, rest, ok := strings.Cut(origin, "://"); ok && rest == host {
			return nil
		}
	}
	return fmt.Errorf("Origin %q is not allowed (--mcp-allowed-origins)", r.Header.Get("Origin"))
}
