package mcpfront

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolsvc/toolsvc/service/core"
)

// Sessions and replicas.
//
// 2026-07-28 requests are stateless: every request carries its protocol
// version and client information, and any replica answers it.
//
// A 2025-11-25 (or older) client holds a session: initialize returns an
// Mcp-Session-Id and every later request carries it. go-sdk keeps the
// session in the memory of the replica that created it, so behind a load
// balancer the next request may reach a replica that has never seen it;
// go-sdk would answer 404 "session not found". Instead, the session ID is
// self-describing:
//
//	s1.<nonce>.<mac>   mac = HMAC-SHA256(key, "s1." nonce "." principal)
//
// A replica that receives an ID it does not hold checks the MAC against the
// request's principal and, if it matches, adopts the session: it creates a
// go-sdk session with that ID (an initialize on the client's behalf, at the
// protocol version of the request's MCP-Protocol-Version header) and serves
// the request on it. A session carries no privileges (every request is
// authenticated on its own), only protocol state, so adoption loses
// nothing a client relies on: the client's capabilities are re-read as
// none (toolsvc never sends server→client requests), and its standalone GET
// stream stays on the replica it opened it on, which keeps sending
// list_changed (every replica has the same catalog). The MAC binds the ID
// to the principal, so another principal's credentials cannot use it; with
// a shared --mcp-session-key, IDs are also unforgeable.

const sessionIDPrefix = "s1."

// defaultSessionKey is used without --mcp-session-key: IDs then still
// bind the principal, and replicas agree on them.
var defaultSessionKey = []byte("toolsvc mcp session id v1")

type sessionIDs struct{ key []byte }

func newSessionIDs(key []byte) sessionIDs {
	if len(key) == 0 {
		key = defaultSessionKey
	}
	return sessionIDs{key: key}
}

func (s sessionIDs) mac(nonce, principal string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(sessionIDPrefix + nonce + "." + principal))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// mint returns a new session ID for principal.
func (s sessionIDs) mint(principal string) string {
	nonce := rand.Text()
	return sessionIDPrefix + nonce + "." + s.mac(nonce, principal)
}

// valid reports whether id was minted (by any replica with the same key)
// for principal.
func (s sessionIDs) valid(id, principal string) bool {
	rest, ok := strings.CutPrefix(id, sessionIDPrefix)
	if !ok {
		return false
	}
	nonce, mac, ok := strings.Cut(rest, ".")
	if !ok || nonce == "" || len(id) > 128 {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(s.mac(nonce, principal)))
}

// Protocol version markers of a request.
const (
	protocolVersionHeader = "Mcp-Protocol-Version"
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionMeta   = `"io.modelcontextprotocol/protocolVersion"`
	statelessEra          = "2026-07-28"
	legacyDefaultVersion  = "2025-11-25"
)

// serveStreamable routes /mcp: 2026-07-28 requests to the stateless
// handler, sessions (and initialize) to the stateful one, adopting
// sessions minted elsewhere.
func (f *Front) serveStreamable(w http.ResponseWriter, r *http.Request) {
	body, ok := f.readBody(w, r)
	if !ok {
		return
	}
	reset := func() {
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	reset()
	pv := r.Header.Get(protocolVersionHeader)
	sid := r.Header.Get(sessionIDHeader)
	modern := pv >= statelessEra || (sid == "" && bytes.Contains(body, []byte(protocolVersionMeta)))
	if (bytes.Contains(body, []byte(`"task"`)) || bytes.Contains(body, []byte(`"tasks/`))) && !peekTaskRequest(w, r, body, modern) {
		return // a tools/call's params.task, a tasks/* request's Mcp-Name (tasks.go)
	}
	if modern {
		f.stateless.ServeHTTP(w, f.answerJSON(r, body, true, nil))
		return
	}
	principal := requestPrincipal(r)
	if sid == "" {
		if r.Method != http.MethodPost || !bytes.Contains(body, []byte(`"initialize"`)) {
			// A request outside any session: go-sdk's stateless handler
			// answers it with a session of default state.
			f.stateless.ServeHTTP(w, f.answerJSON(r, body, false, nil))
			return
		}
		f.newSessions.Lock()
		defer f.newSessions.Unlock()
		f.nextID = f.ids.mint(principal)
		defer func() { f.nextID = "" }() // anything else asking gets no ID: an ephemeral session
		e, err := f.sessions.reserve(f.nextID, principal)
		if err != nil {
			refuseSession(w, err)
			return
		}
		defer f.sessions.created(e)
		f.stateful.ServeHTTP(w, r)
		return
	}
	// An ID not minted for this principal is one this replica does not
	// know for this caller, whether or not it holds a session of that ID
	// for another: 404, as for any unknown session (the MCP transport
	// spec), so that IDs cannot be probed across principals. A session
	// this replica holds was minted or adopted for its principal, its MAC
	// checked then: the request of that principal is in it without an
	// HMAC per request, and another's is refused as the MAC would refuse it.
	e, held := f.sessions.beginFor(sid, principal)
	if e == nil && (held || !f.ids.valid(sid, principal)) {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if e == nil {
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent) // nothing of it here
			return
		}
		var err error
		if e, err = f.adopt(r, sid, principal, pv); err != nil {
			if errors.Is(err, errSessionsBusy) || errors.Is(err, errFrontClosed) {
				refuseSession(w, err)
				return
			}
			if r.Context().Err() != nil {
				return // the client went away while its session was closing
			}
			f.log.Warn("MCP front door: adopting a session failed", "error", err)
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		reset()
	}
	defer f.sessions.end(e)
	if r.Method == http.MethodDelete {
		// What go-sdk would do (close, 204), with the table told.
		f.sessions.retire(e, true)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	f.stateful.ServeHTTP(w, f.answerJSON(r, body, false, e))
}

// readBody reads a POST's body, bounded in size and time; false when it
// has answered instead (413, 408 with the connection closed, 400).
func (f *Front) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		return nil, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(f.c.MaxRequestBytes())+mcpBodySlack))
	if err == nil {
		return body, true
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeHTTPJSONRPCError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"request body is over %d bytes (the request limit, serve --max-request-bytes, plus the envelope)", mbe.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		writeHTTPJSONRPCError(w, http.StatusRequestTimeout, fmt.Sprintf(
			"the request body did not arrive within %s (serve --mcp-body-timeout)", f.opts.BodyTimeout))
	default:
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
	}
	return nil, false
}

// refuseSession answers a request that needs a new session when none can
// be had: HTTP 503 with a JSON-RPC error saying which cap, and when to
// retry.
func refuseSession(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "1")
	writeHTTPJSONRPCError(w, http.StatusServiceUnavailable, err.Error())
}

// adopt creates, on this replica, the go-sdk session sid that another
// replica minted (or that this one evicted or closed when idle): an
// initialize and notifications/initialized on the client's behalf. The
// entry it returns is in use (end it).
func (f *Front) adopt(r *http.Request, sid, principal, pv string) (*frontSession, error) {
	if pv == "" {
		pv = legacyDefaultVersion
	}
	for {
		f.newSessions.Lock()
		if e := f.sessions.begin(sid); e != nil { // adopted by a concurrent request
			f.newSessions.Unlock()
			return e, nil
		}
		// A session of this ID that left the table (evicted, expired,
		// deleted) may still be closing: go-sdk forgets an ID when its
		// session has closed, and would then forget the adopted one with
		// it. So the adoption waits for that, without holding up others.
		gone := f.sessions.closingOf(sid)
		if gone == nil {
			break
		}
		f.newSessions.Unlock()
		select {
		case <-gone:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	defer f.newSessions.Unlock()
	e, err := f.sessions.reserve(sid, principal)
	if err != nil {
		return nil, err
	}
	f.nextID = sid
	defer func() { f.nextID = "" }()
	initBody := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"toolsvc-adopted-session","version":"0"}}}`, pv)
	code := f.internalPOST(r, "", initBody)
	if !f.sessions.bound(e) {
		f.sessions.created(e)
		return nil, fmt.Errorf("initialize on the client's behalf: HTTP %d, no session", code)
	}
	if code := f.internalPOST(r, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code/100 != 2 {
		f.sessions.retire(e, false) // f.newSessions is held: close it in the background
		return nil, fmt.Errorf("notifications/initialized on the client's behalf: HTTP %d", code)
	}
	return e, nil
}

// The session table: the stateful sessions of this replica, capped.
//
// Every go-sdk stateful session costs memory and its connection's reader
// goroutine until it is closed, and a client that initializes and never
// comes back never closes it. So the table holds at most MaxSessions
// sessions, and at most MaxSessionsPerPrincipal of one principal. A new
// session at a cap evicts the session idle the longest (the principal's
// own when its cap is the one reached): evicting costs its client little,
// since its next request is adopted under the same ID (sessionIDs), while
// refusing the newcomer would let whoever came first hold the replica. A
// session is idle while no HTTP request of it is being served and no
// handler of it runs (a call whose client went away still runs, and
// closing its session would wait for it): a GET stream open or a call
// running makes it busy. When every session that
// could go is busy, the newcomer is refused (HTTP 503, errSessionsBusy).
//
// The table also closes sessions idle for SessionTimeout, and it learns
// of every session that ends without a goroutine per session: sessions
// end only by its own hand (eviction, idle timeout, DELETE, Close/Drain)
// or while their initialize fails (created). go-sdk's own SessionTimeout
// is not used.
//
// A session that leaves the table is closing until go-sdk's Close returns,
// which waits for its handlers in flight: it is kept in closing, and an
// adoption of its ID waits for it (adopt). An evicted session is closed by
// a goroutine of the table (closers, awaited by wait), never under
// f.newSessions, which would hold up every new session for as long as one
// handler of the victim runs.

var (
	errSessionsBusy = errors.New("no MCP session available")
	errFrontClosed  = errors.New("the MCP front door is shutting down")
)

// frontSession is one stateful session of this replica.
type frontSession struct {
	id, principal string
	ss            *mcp.ServerSession // nil until its initialize succeeds
	inflight      int                // its HTTP requests being served
	logs          bool               // its client set a log level (answerJSON)
	idleSince     time.Time
	timer         *time.Timer   // closes it after SessionTimeout idle
	gone          chan struct{} // closed once its session has closed, after it left the table
}

type sessionTable struct {
	f      *Front
	mu     sync.Mutex
	m      map[string]*frontSession
	per    map[string]int // sessions per principal
	closed bool
	// closing holds the sessions that left the table until their Close
	// returns; closers counts those Closes (Adds under mu, before closed).
	closing map[string]*frontSession
	closers sync.WaitGroup

	evicted, refused, expired prometheus.Counter
}

func (t *sessionTable) init(f *Front) {
	t.f, t.m, t.per, t.closing = f, map[string]*frontSession{}, map[string]int{}, map[string]*frontSession{}
	t.evicted = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsvc_front_sessions_evicted_total",
		Help: "MCP front-door sessions closed to make room for a new one (the oldest idle at --mcp-max-sessions or --mcp-max-sessions-per-principal)."})
	t.refused = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsvc_front_sessions_refused_total",
		Help: "New MCP front-door sessions refused with HTTP 503 because every session that could be evicted was busy."})
	t.expired = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsvc_front_sessions_expired_total",
		Help: "MCP front-door sessions closed after --mcp-session-timeout idle."})
	if reg := f.opts.Registry; reg != nil {
		reg.MustRegister(t.evicted, t.refused, t.expired, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolsvc_front_sessions",
			Help: "Stateful MCP front-door sessions (/mcp, 2025-11-25 and older) held by this replica."}, func() float64 {
			return float64(t.len())
		}))
	}
}

func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// reserve adds the entry of a session about to be created (initialize,
// adoption), in use by its creating request, evicting one at a cap. The
// caller holds f.newSessions, so an evicted session has ended (go-sdk
// forgot its ID) before any adoption of the same ID begins.
func (t *sessionTable) reserve(id, principal string) (*frontSession, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errFrontClosed
	}
	var victim *frontSession
	o := t.f.opts
	switch {
	case t.per[principal] >= o.MaxSessionsPerPrincipal:
		if victim = t.oldestIdle(principal, true); victim == nil {
			t.refused.Inc()
			t.mu.Unlock()
			return nil, fmt.Errorf("%w: all %d sessions one principal may hold are in use (serve --mcp-max-sessions-per-principal); close one, or retry later",
				errSessionsBusy, o.MaxSessionsPerPrincipal)
		}
	case len(t.m) >= o.MaxSessions:
		if victim = t.oldestIdle("", false); victim == nil {
			t.refused.Inc()
			t.mu.Unlock()
			return nil, fmt.Errorf("%w: all %d sessions of this replica are in use (serve --mcp-max-sessions); retry later",
				errSessionsBusy, o.MaxSessions)
		}
	}
	if victim != nil {
		t.retireLocked(victim)
		t.evicted.Inc()
	}
	e := &frontSession{id: id, principal: principal, inflight: 1}
	t.m[id] = e
	t.per[principal]++
	t.mu.Unlock()
	if victim != nil {
		t.f.log.Debug("MCP front door: evicted the oldest idle session for a new one", "principal", victim.principal, "idle", time.Since(victim.idleSince))
		go t.finish(victim) // the caller holds f.newSessions
	}
	return e, nil
}

// oldestIdle is the session idle the longest (of principal if mine).
func (t *sessionTable) oldestIdle(principal string, mine bool) *frontSession {
	var old *frontSession
	for _, e := range t.m {
		if e.inflight > 0 || e.ss == nil || (mine && e.principal != principal) || t.f.handling(e.ss) {
			continue
		}
		if old == nil || e.idleSince.Before(old.idleSince) {
			old = e
		}
	}
	return old
}

// bind gives the entry of ss's ID its session (the middleware, at
// initialize); false if there is none (an SSE session).
func (t *sessionTable) bind(ss *mcp.ServerSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[ss.ID()]
	if e == nil || e.ss != nil {
		return false
	}
	e.ss = ss
	return true
}

func (t *sessionTable) bound(e *frontSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return e.ss != nil
}

// created ends the creating request of e; if it created no session, the
// entry goes.
func (t *sessionTable) created(e *frontSession) {
	if !t.bound(e) {
		t.forget(e)
		return
	}
	t.end(e)
}

// begin marks the session sid in use by a request; nil if this replica
// does not hold it.
func (t *sessionTable) begin(sid string) *frontSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[sid]
	if e == nil || e.ss == nil {
		return nil
	}
	if e.inflight++; e.timer != nil {
		e.timer.Stop()
	}
	return e
}

// beginFor is begin for a request of principal: held reports whether
// this replica holds the session sid, and e is nil when it does for
// another principal.
func (t *sessionTable) beginFor(sid, principal string) (e *frontSession, held bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e = t.m[sid]
	if e == nil || e.ss == nil {
		return nil, false
	}
	if e.principal != principal {
		return nil, true
	}
	if e.inflight++; e.timer != nil {
		e.timer.Stop()
	}
	return e, true
}

// end marks a request of e served; once none is, e is idle and its
// timeout starts.
func (t *sessionTable) end(e *frontSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.inflight--; e.inflight > 0 || t.m[e.id] != e {
		return
	}
	e.idleSince = time.Now()
	d := t.f.opts.SessionTimeout
	if e.timer == nil {
		e.timer = time.AfterFunc(d, func() { t.expire(e) })
	} else {
		e.timer.Reset(d)
	}
}

// expire closes e if it is still idle: a timer Stop that came too late
// leaves its callback to run after the session was used again. A handler
// still running (its client gone) makes it wait another SessionTimeout.
func (t *sessionTable) expire(e *frontSession) {
	t.mu.Lock()
	if t.m[e.id] != e || e.inflight > 0 || time.Since(e.idleSince) < t.f.opts.SessionTimeout {
		t.mu.Unlock()
		return
	}
	if t.f.handling(e.ss) {
		e.timer.Reset(t.f.opts.SessionTimeout)
		t.mu.Unlock()
		return
	}
	t.retireLocked(e)
	t.expired.Inc()
	t.mu.Unlock()
	t.finish(e)
}

// retire removes e from the table and closes its session (DELETE, a
// failed adoption): at once with wait, else on a goroutine the table owns
// (closers), for a caller that holds f.newSessions, since go-sdk's Close
// waits for the session's handlers.
func (t *sessionTable) retire(e *frontSession, wait bool) {
	t.mu.Lock()
	if t.m[e.id] != e || e.ss == nil {
		if t.m[e.id] == e {
			t.removeLocked(e)
		}
		t.mu.Unlock()
		return
	}
	t.retireLocked(e)
	t.mu.Unlock()
	if wait {
		t.finish(e)
	} else {
		go t.finish(e)
	}
}

// retireLocked moves e, bound, from the table to closing; finish must
// follow.
func (t *sessionTable) retireLocked(e *frontSession) {
	t.removeLocked(e)
	e.gone = make(chan struct{})
	t.closing[e.id] = e
	t.closers.Add(1)
}

// finish closes e's session (go-sdk forgets its ID, its reader goroutine
// ends; Close waits for its handlers in flight) and the front door's views
// forget it; then adoptions of its ID may go ahead.
func (t *sessionTable) finish(e *frontSession) {
	defer t.closers.Done()
	_ = e.ss.Close()
	t.f.removeSession(e.ss)
	t.mu.Lock()
	if t.closing[e.id] == e {
		delete(t.closing, e.id)
	}
	t.mu.Unlock()
	close(e.gone)
}

// closingOf is closed once the session of ID sid that left the table has
// closed; nil if none is closing.
func (t *sessionTable) closingOf(sid string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.closing[sid]; e != nil {
		return e.gone
	}
	return nil
}

// forget removes e, whose initialize created no session, from the table.
func (t *sessionTable) forget(e *frontSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[e.id] == e {
		t.removeLocked(e)
	}
}

func (t *sessionTable) removeLocked(e *frontSession) {
	delete(t.m, e.id)
	if t.per[e.principal]--; t.per[e.principal] <= 0 {
		delete(t.per, e.principal)
	}
	if e.timer != nil {
		e.timer.Stop()
	}
}

// shut refuses new sessions and forgets every entry (Close and Drain close
// the sessions themselves).
func (t *sessionTable) shut() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, e := range t.m {
		t.removeLocked(e)
	}
}

// wait returns once every session that left the table has closed (after
// shut: Close and Drain).
func (t *sessionTable) wait() { t.closers.Wait() }

// requestPrincipal is the principal Handler established for r (go-sdk's
// TokenInfo.UserID; "" without auth).
func requestPrincipal(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// Legacy SSE sessions (/sse). go-sdk's SSE handler creates a session per
// GET stream, announces its endpoint (/sse?sessionid=…) as the stream's
// first event, and accepts a POST to that endpoint from anyone: the
// message then runs in the session, whose context is the GET's, as the
// principal who opened the stream. So the front door records each
// stream's principal as the endpoint goes out and answers another
// principal's POST 404 "session not found", as on /mcp: an ID that leaks
// (it travels in a URL) lets no one else act in the session.
type sseOwners struct {
	mu sync.Mutex
	m  map[string]string // session ID → principal, while its stream is open
}

func (o *sseOwners) set(id, principal string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]string{}
	}
	o.m[id] = principal
}

func (o *sseOwners) get(id string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.m[id]
	return p, ok
}

func (o *sseOwners) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, id)
}

// serveSSE routes /sse to go-sdk's SSE handler, a POST only from the
// principal whose stream it names.
func (f *Front) serveSSE(w http.ResponseWriter, r *http.Request) {
	principal := requestPrincipal(r)
	switch r.Method {
	case http.MethodGet:
		ew := &sseEndpointWriter{ResponseWriter: w, owners: &f.sseOwners, principal: principal}
		defer func() {
			if ew.id != "" {
				f.sseOwners.forget(ew.id)
			}
		}()
		// The session's requests run in this GET's context (go-sdk hands
		// them no TokenInfo): each is authenticated again from the GET's
		// credentials, under the auth state current when it runs, not the
		// one pinned when the stream opened (authstate.go).
		f.sse.ServeHTTP(ew, r.WithContext(core.Unpinned(r.Context())))
		return
	case http.MethodPost:
		if id := r.URL.Query().Get("sessionid"); id != "" {
			if owner, ok := f.sseOwners.get(id); !ok || owner != principal {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		}
	}
	f.sse.ServeHTTP(w, r)
}

// sseEndpointWriter is a GET stream's ResponseWriter that records the
// session ID of its first event, the endpoint (go-sdk writes it whole, in
// one Write, before the client can know the ID), for its principal.
type sseEndpointWriter struct {
	http.ResponseWriter
	owners    *sseOwners
	principal string
	wrote     bool   // the first event went by (writes are serialised by go-sdk)
	id        string // the session ID it announced
}

func (w *sseEndpointWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.wrote = true
		if _, data, ok := strings.Cut(string(p), "\ndata: "); ok && strings.HasPrefix(string(p), "event: endpoint\n") {
			data, _, _ = strings.Cut(data, "\n")
			if u, err := url.Parse(data); err == nil && u.Query().Get("sessionid") != "" {
				w.id = u.Query().Get("sessionid")
				w.owners.set(w.id, w.principal)
			}
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *sseEndpointWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *sseEndpointWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
