package service

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
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
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
func (f *MCPFront) serveStreamable(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, int64(f.s.opts.MaxRequestBytes)+mcpBodySlack))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeHTTPJSONRPCError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(
					"request body is over %d bytes (the request limit, serve --max-request-bytes, plus the envelope)", mbe.Limit))
				return
			}
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	reset := func() {
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	reset()
	pv := r.Header.Get(protocolVersionHeader)
	sid := r.Header.Get(sessionIDHeader)
	if pv >= statelessEra || (sid == "" && bytes.Contains(body, []byte(protocolVersionMeta))) {
		f.stateless.ServeHTTP(w, r)
		return
	}
	principal := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		principal = ti.UserID
	}
	if sid == "" {
		if r.Method != http.MethodPost || !bytes.Contains(body, []byte(`"initialize"`)) {
			// A request outside any session: go-sdk's stateless handler
			// answers it with a session of default state.
			f.stateless.ServeHTTP(w, r)
			return
		}
		f.newSessions.Lock()
		defer f.newSessions.Unlock()
		f.nextID = f.ids.mint(principal)
		defer func() { f.nextID = "" }() // anything else asking gets no ID: an ephemeral session
		f.stateful.ServeHTTP(w, r)
		return
	}
	if !f.holds(sid) {
		if !f.ids.valid(sid, principal) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent) // nothing of it here
			return
		}
		if err := f.adopt(r, sid, pv); err != nil {
			f.log.Warn("MCP front door: adopting a session failed", "error", err)
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		reset()
	}
	f.stateful.ServeHTTP(w, r)
}

func (f *MCPFront) holds(sid string) bool {
	f.liveMu.Lock()
	defer f.liveMu.Unlock()
	return f.live[sid] != nil
}

// adopt creates, on this replica, the go-sdk session sid that another
// replica minted: an initialize and notifications/initialized on the
// client's behalf.
func (f *MCPFront) adopt(r *http.Request, sid, pv string) error {
	if pv == "" {
		pv = legacyDefaultVersion
	}
	f.newSessions.Lock()
	defer f.newSessions.Unlock()
	if f.holds(sid) { // adopted by a concurrent request
		return nil
	}
	f.nextID = sid
	defer func() { f.nextID = "" }()
	initBody := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"toolsvc-adopted-session","version":"0"}}}`, pv)
	if code := f.internalPOST(r, "", initBody); code != http.StatusOK {
		return fmt.Errorf("initialize on the client's behalf: HTTP %d", code)
	}
	if !f.holds(sid) {
		return errors.New("initialize on the client's behalf created no session")
	}
	if code := f.internalPOST(r, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code/100 != 2 {
		return fmt.Errorf("notifications/initialized on the client's behalf: HTTP %d", code)
	}
	return nil
}

// internalPOST sends a JSON-RPC message through the stateful handler in
// the context (principal, TokenInfo) of r, discarding the answer.
func (f *MCPFront) internalPOST(r *http.Request, sid, body string) int {
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

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *discardWriter) Flush() {}
