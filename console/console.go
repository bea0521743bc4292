// Package console is toolsvc's operator console: an http.Handler served
// under /ui/ on the admin listener. Its pages are static assets embedded in
// the binary (built from console/web by scripts/console-assets.sh); its
// data comes from the core, under the same authentication and
// authorization as every other caller, and reaches open pages by server
// push (one Server-Sent Events stream per page), never by page polling.
//
// The console imports the core and the bridge's types only: it is one more
// wire, like the MCP front door (docs/console.md).
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/internal/loopback"
	"github.com/toolsvc/toolsvc/service/core"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// Bounds of the console (docs/security.md, "Operator console").
const (
	// MaxStreamsPerPrincipal is the event streams (open pages) one
	// principal holds on this replica; MaxStreams all of them. A principal
	// cannot take the replica's pool alone.
	MaxStreamsPerPrincipal = 8
	MaxStreams             = 64
	// MaxQueryBytes bounds a query parameter (a search, a server filter, a
	// tool name); MaxFormBytes a POSTed body (the login form).
	MaxQueryBytes = 512
	MaxFormBytes  = 16 << 10
	// MaxDescriptionRunes clips each description in the catalog listing
	// (the schema view shows the whole entry).
	MaxDescriptionRunes = 200
	// MaxChangeNames bounds the names of each kind (added, changed,
	// removed) one catalog-change event carries; the counts are exact.
	MaxChangeNames = 200
	// DefaultSampleInterval is how often an event stream compares the
	// upstreams' status with what it last sent.
	DefaultSampleInterval = 250 * time.Millisecond
	// heartbeat keeps proxies from closing an idle event stream.
	heartbeat = 15 * time.Second
)

// Reasons of the console's refusals (besides the core's own reasons).
const (
	// ReasonLoopbackOnly: no auth section, and the console answers only
	// callers on this machine (as AdminService).
	ReasonLoopbackOnly = "CONSOLE_LOOPBACK_ONLY"
	// ReasonCSRF: an action without the page's CSRF token, or from another
	// origin.
	ReasonCSRF = "CSRF_REFUSED"
	// ReasonTooManyStreams: the principal (or the replica) has
	// MaxStreamsPerPrincipal (MaxStreams) pages open.
	ReasonTooManyStreams = "TOO_MANY_CONSOLE_STREAMS"
)

// cookieName holds the bearer credential a browser logged in with.
const cookieName = "toolsvc_console"

// Options configure a Console.
type Options struct {
	Logger *slog.Logger
	// SampleInterval is how often an event stream samples the upstreams'
	// status (0: DefaultSampleInterval).
	SampleInterval time.Duration
	// Traffic is the ring the core's call observer feeds (service.Options.
	// Observer); nil: the Traffic page has no data.
	Traffic *Traffic
	// Calls is the ring of audit lines (Calls.Tee in front of the audit
	// log's handler); nil: the Calls page has no data.
	Calls *Calls
	// Config is the configuration file's status (cmd/toolsvc: the reload
	// manager's, service.ConfigStatus), encoded as JSON; nil: no file.
	Config func() any
	// Effective is the running configuration with every secret redacted
	// (config.Config.Redacted), encoded as JSON; nil: no file.
	Effective func() any
	// Kubernetes is discovery's objects and sources (package server:
	// the reload manager's); nil without a kubernetes section.
	Kubernetes func() Kubernetes
}

// Console serves the operator console over one core.
type Console struct {
	c       *core.Core
	log     *slog.Logger
	opts    Options
	csrfKey []byte
	handler http.Handler

	mu          sync.Mutex
	streams     int
	perStreamer map[string]int
}

// New returns the console of the core's server.
func New(c *core.Core, o Options) *Console {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SampleInterval <= 0 {
		o.SampleInterval = DefaultSampleInterval
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	cs := &Console{c: c, log: o.Logger, opts: o, csrfKey: key, perStreamer: map[string]int{}}
	static, _ := fs.Sub(assets, "assets")
	mux := http.NewServeMux()
	mux.Handle("GET /ui/assets/", http.StripPrefix("/ui/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /ui/{$}", cs.page("index.html"))
	mux.HandleFunc("GET /ui/login", cs.page("login.html"))
	mux.HandleFunc("POST /ui/login", cs.login)
	mux.HandleFunc("POST /ui/logout", cs.logout)
	mux.HandleFunc("GET /ui/api/me", cs.api(cs.me))
	mux.HandleFunc("GET /ui/api/upstreams", cs.api(cs.upstreams))
	mux.HandleFunc("GET /ui/api/tools", cs.api(cs.tools))
	mux.HandleFunc("GET /ui/api/tool", cs.api(cs.tool))
	mux.HandleFunc("GET /ui/api/search", cs.api(cs.search))
	mux.HandleFunc("GET /ui/api/traffic", cs.api(cs.traffic))
	mux.HandleFunc("GET /ui/api/calls", cs.api(cs.calls))
	mux.HandleFunc("POST /ui/api/call/stream", cs.callStream)
	mux.HandleFunc("GET /ui/api/tasks", cs.api(cs.tasks))
	mux.HandleFunc("GET /ui/api/tasks/watch", cs.taskWatch)
	mux.HandleFunc("POST /ui/api/tasks/cancel", cs.api(cs.taskCancel))
	mux.HandleFunc("POST /ui/api/tasks/answer", cs.api(cs.taskAnswer))
	mux.HandleFunc("GET /ui/api/config", cs.api(cs.config))
	mux.HandleFunc("GET /ui/api/config/effective", cs.api(cs.effective))
	mux.HandleFunc("GET /ui/api/logins", cs.api(cs.logins))
	mux.HandleFunc("POST /ui/api/logins/logout", cs.api(cs.loginLogout))
	mux.HandleFunc("POST /ui/api/logins/login", cs.api(cs.loginStart))
	mux.HandleFunc("GET /ui/api/events", cs.events)
	mux.HandleFunc("POST /ui/api/upstreams/{name}/{action}", cs.api(cs.upstreamAction))
	// Cross-origin protection (Sec-Fetch-Site, Origin) on every unsafe
	// method, the login form included (login CSRF); actions also carry
	// the page's token (checked in upstreamAction).
	cs.handler = securityHeaders(http.NewCrossOriginProtection().Handler(mux))
	return cs
}

// Handler is the console's handler, to mount at Prefix.
func (cs *Console) Handler() http.Handler { return cs.handler }

// csp: scripts and styles from the console's own files only (no inline
// script, no eval), images also as data: URLs (an image result), nothing
// framed, no form posted elsewhere.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// caller is an authenticated console request.
type caller struct {
	ctx   context.Context // carries the principal and the auth state
	p     core.Principal
	admin bool   // sees every upstream, error and tool
	token string // the bearer it presented ("" without auth)
}

// authenticate establishes the caller of r as the admin API does: without
// an auth section only callers on this machine, each an operator; with
// one, the bearer credential (the Authorization header, or the cookie the
// login form set) through the core, an operator being a principal of
// auth.admins.
func (cs *Console) authenticate(r *http.Request) (*caller, *core.Error) {
	st := cs.c.CurrentAuth()
	ctx := core.WithAuthState(r.Context(), st)
	if !st.Configured() {
		// The peer goes to the core, whose admin rule decides the
		// actions on it as on every wire.
		ctx = core.WithCredentials(ctx, core.Credentials{Peer: remoteAddr(r)})
		if !remoteLoopback(r) {
			return nil, core.NewError(core.PermissionDenied, ReasonLoopbackOnly,
				"without an auth section the console answers only loopback connections; configure auth (tokens or jwt) and list the operators in auth.admins",
				map[string]string{"peer": r.RemoteAddr})
		}
		return &caller{ctx: ctx, admin: true}, nil
	}
	tok := core.BearerOf(r.Header.Get("Authorization"))
	if tok == "" {
		if c, err := r.Cookie(cookieName); err == nil {
			tok = c.Value
		}
	}
	creds := core.Credentials{Bearer: tok, Peer: remoteAddr(r)}
	if r.TLS != nil {
		creds.VerifiedChains = r.TLS.VerifiedChains
	}
	ctx, p, e := cs.c.Authenticate(core.WithCredentials(ctx, creds))
	if e != nil {
		return nil, e
	}
	return &caller{ctx: ctx, p: p, admin: cs.c.Operator(ctx, p), token: tok}, nil
}

func remoteLoopback(r *http.Request) bool {
	a := remoteAddr(r)
	return a != nil && loopback.Addr(a)
}

// remoteAddr is the request's peer as an address (nil: RemoteAddr is not
// an IP address and port).
func remoteAddr(r *http.Request) net.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}

// csrfToken is the token a page sends with each action: an HMAC of the
// credential it is authenticated by, under a key of this process, so a
// page of another origin (which cannot read it) cannot forge an action.
func (cs *Console) csrfToken(c *caller) string {
	m := hmac.New(sha256.New, cs.csrfKey)
	m.Write([]byte(c.p.Name))
	m.Write([]byte{0})
	m.Write([]byte(c.token))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func (cs *Console) page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if name == "index.html" {
			if _, e := cs.authenticate(r); e != nil {
				if e.Code == core.Unauthenticated {
					http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
					return
				}
				writeError(w, e)
				return
			}
		}
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(b)
	}
}

// login checks the posted token through the core and keeps it in an
// HttpOnly, SameSite=Strict cookie scoped to the console.
func (cs *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		writeError(w, fieldError("token", "the login form could not be read (at most 16 KiB)"))
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		writeError(w, fieldError("token", "required: a bearer token or JWT the auth section accepts"))
		return
	}
	if !cs.c.CurrentAuth().Configured() {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	if _, e := cs.authenticate(r); e != nil {
		writeError(w, e)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: Prefix, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (cs *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// api wraps a JSON endpoint: authentication first, then the handler's
// value or error, each as JSON.
func (cs *Console) api(h func(*caller, *http.Request) (any, *core.Error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		c, e := cs.authenticate(r)
		if e != nil {
			writeError(w, e)
			return
		}
		v, e := h(c, r)
		if e != nil {
			writeError(w, e)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// The handler's own time, before the answer is encoded: the
		// browser's resource timing shows it beside the request's (what a
		// request waited outside the handler, on a busy machine, is the
		// difference: docs/console.md).
		w.Header().Set("Server-Timing", "app;dur="+strconv.FormatFloat(float64(time.Since(start).Microseconds())/1000, 'f', 1, 64))
		_ = json.NewEncoder(w).Encode(v)
	}
}

// query is a bounded query parameter.
func query(r *http.Request, name string) (string, *core.Error) {
	v := r.URL.Query().Get(name)
	if len(v) > MaxQueryBytes {
		return "", fieldError(name, "longer than 512 bytes")
	}
	return v, nil
}

func fieldError(field, desc string) *core.Error {
	e := core.NewError(core.InvalidArgument, core.ReasonRequestInvalid, field+": "+desc, nil)
	e.Violations = []core.FieldViolation{{Field: field, Description: desc}}
	return e
}

// errorBody is the JSON of a refusal: the core's code name, reason,
// message, metadata and fields at fault.
type errorBody struct {
	Code    string            `json:"code"`
	Reason  string            `json:"reason"`
	Message string            `json:"message"`
	Meta    map[string]string `json:"meta,omitempty"`
	Fields  []fieldBody       `json:"fields,omitempty"`
}

type fieldBody struct {
	Field       string `json:"field"`
	Description string `json:"description"`
}

var httpStatus = map[core.Code]int{
	core.InvalidArgument: http.StatusBadRequest, core.NotFound: http.StatusNotFound,
	core.PermissionDenied: http.StatusForbidden, core.Unauthenticated: http.StatusUnauthorized,
	core.ResourceExhausted: http.StatusTooManyRequests, core.FailedPrecondition: http.StatusConflict,
	core.Unavailable: http.StatusServiceUnavailable, core.DeadlineExceeded: http.StatusGatewayTimeout,
	core.Unimplemented: http.StatusNotImplemented,
}

func writeError(w http.ResponseWriter, e *core.Error) {
	st, ok := httpStatus[e.Code]
	if !ok {
		st = http.StatusInternalServerError
	}
	b := errorBody{Code: codeName(e.Code), Reason: e.Reason, Message: e.Message, Meta: e.Meta}
	for _, v := range e.Violations {
		b.Fields = append(b.Fields, fieldBody(v))
	}
	if e.Code == core.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolsvc"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(st)
	_ = json.NewEncoder(w).Encode(b)
}

var codeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

func codeName(c core.Code) string {
	if int(c) >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "UNKNOWN"
}

type meBody struct {
	Principal string `json:"principal"`
	Admin     bool   `json:"admin"`
	Auth      bool   `json:"auth"`
	CSRF      string `json:"csrf"`
}

func (cs *Console) me(c *caller, _ *http.Request) (any, *core.Error) {
	return meBody{Principal: c.p.Name, Admin: c.admin, Auth: cs.c.AuthOf(c.ctx).Configured(), CSRF: cs.csrfToken(c)}, nil
}

// checkCSRF compares an action's token with the caller's, in constant time.
func (cs *Console) checkCSRF(c *caller, r *http.Request) *core.Error {
	got := r.Header.Get("X-Toolsvc-CSRF")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(cs.csrfToken(c))) != 1 {
		return core.NewError(core.PermissionDenied, ReasonCSRF,
			"an action needs the console page's token in the X-Toolsvc-CSRF header", nil)
	}
	return nil
}

// acquireStream admits one more event stream of principal, within the
// per-principal and replica bounds.
func (cs *Console) acquireStream(principal string) (release func(), e *core.Error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.perStreamer[principal] >= MaxStreamsPerPrincipal {
		return nil, core.NewError(core.ResourceExhausted, ReasonTooManyStreams,
			"this principal has the most console pages open at once (8); close one", map[string]string{"principal": principal, "limit": "8"})
	}
	if cs.streams >= MaxStreams {
		return nil, core.NewError(core.ResourceExhausted, ReasonTooManyStreams,
			"this replica has the most console pages open at once (64)", map[string]string{"limit": "64"})
	}
	cs.streams++
	cs.perStreamer[principal]++
	var once sync.Once
	return func() {
		once.Do(func() {
			cs.mu.Lock()
			defer cs.mu.Unlock()
			cs.streams--
			if cs.perStreamer[principal]--; cs.perStreamer[principal] == 0 {
				delete(cs.perStreamer, principal)
			}
		})
	}, nil
}

// clip is s cut to at most n runes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// trimSpaceAll collapses runs of white space, for one-line descriptions.
func trimSpaceAll(s string) string { return strings.Join(strings.Fields(s), " ") }
