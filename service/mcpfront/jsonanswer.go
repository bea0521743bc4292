package mcpfront

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	sjson "github.com/segmentio/encoding/json"

	"github.com/toolsvc/toolsvc/service/core"
)

// A front-door request is answered with an event stream only when
// something may come before its response: a progress notification, an
// upstream's log message, or a request to the client (elicitation,
// sampling, roots). A tools/call that can get none of these is answered
// as one application/json response (go-sdk's RespondWithJSON, a toolsvc
// patch): no SSE framing, no flush per event, and the client reads one
// body. The rule, per era (docs/http-transport.md):
//
//   - 2026-07-28 and later: the call carries no progress token and no
//     valid _meta log level. Such a client is never sent a request — an
//     upstream that asks is answered with input_required, in the result —
//     so its declared capabilities do not matter.
//   - 2025-11-25 and older (a stateful session): no progress token, the
//     session never set a log level (go-sdk sends it no log message
//     otherwise), and either the client declared nothing it could be asked
//     (no elicitation, sampling or roots) or the tool's upstream cannot ask
//     (its "input" is "policy", so the core runs no flight for it either).
//     A tool the shared catalog does not name (a per-user tool, or
//     call_tool of progressive discovery) streams whenever the client could
//     be asked: its upstream is not known here.
//   - a request outside any session (go-sdk's stateless handler with
//     default state): no progress token; such a session has no log level
//     and cannot be sent requests.
//
// Everything else — every other method, a batch, a call that asks for a
// task — is answered as before. Anything the handler sends all the same
// (it should not) goes to the session's standalone stream, as go-sdk does
// with its JSONResponse option.
//
// A call answered as JSON is also handled on its POST's own goroutine
// (the go-sdk patch's inline path, docs/http-transport.md): go-sdk's
// server hands every other request to the session's reader goroutine,
// its queue and a new handler goroutine, and the answer back, which a
// call that streams nothing has no use for. go-sdk's checks and the
// server's middleware (this package's, which authorizes, limits and
// audits) run on it as on the queued path.

// callHead is what the rule reads of a request body: a tools/call's
// method, name, task and the two _meta keys it looks at, not its
// arguments' values nor the rest of _meta (a 2026-07-28 request's client
// information and capabilities: 8 of the 25 allocations of a map of
// every key, per call). It is decoded as go-sdk decodes the request
// (segmentio's decoder, keys matched exactly, the last of a repeated key
// kept: go-sdk's internal/json), so the rule and go-sdk's handler cannot
// read different requests out of one body; encoding/json, which the rule
// used before, also matched keys spelt in another case and took 3-4
// times as long.
type callHead struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params *struct {
		Name string          `json:"name"`
		Task json.RawMessage `json:"task"`
		Meta *struct {
			ProgressToken json.RawMessage `json:"progressToken"`
			LogLevel      json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
		} `json:"_meta"`
	} `json:"params"`
}

// maxBodyDepth is go-sdk's nesting limit for a JSON-RPC message (its
// internal/json checks it before decoding): the head is read by the same
// decoder, which has no limit of its own and recurses into what it skips.
const maxBodyDepth = 1000

// plainCall decodes body when it is one tools/call with an ID and no
// progress token, and no task; nil otherwise.
func plainCall(body []byte) *callHead {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '{' || !bytes.Contains(b, []byte(`"tools/call"`)) {
		return nil
	}
	if core.JSONNestsDeeper(b, maxBodyDepth) {
		return nil // go-sdk refuses it (its own depth check runs before it decodes)
	}
	var h callHead
	if _, err := sjson.Parse(b, &h, sjson.DontMatchCaseInsensitiveStructFields); err != nil ||
		h.Method != "tools/call" || len(h.ID) == 0 || string(h.ID) == "null" || h.Params == nil {
		return nil
	}
	if t := h.Params.Task; len(t) > 0 && string(t) != "null" {
		return nil
	}
	if m := h.Params.Meta; m != nil && len(m.ProgressToken) > 0 && string(m.ProgressToken) != "null" {
		return nil
	}
	return &h
}

// answerJSON marks r to be answered with one application/json response
// when its body is a tools/call that can be sent nothing before its
// response (see above); e is the stateful session it belongs to (nil for
// the stateless handler), modern whether it is of the 2026-07-28 era.
func (f *Front) answerJSON(r *http.Request, body []byte, modern bool, e *frontSession) *http.Request {
	if r.Method != http.MethodPost {
		return r
	}
	h := plainCall(body)
	if h == nil {
		return r
	}
	switch {
	case modern:
		var level string
		if m := h.Params.Meta; m != nil && json.Unmarshal(m.LogLevel, &level) == nil && core.ValidLogLevel(level) {
			return r // log messages relayed during the call
		}
	case e != nil:
		caps, logs := f.sessions.asked(e)
		if logs {
			return r
		}
		if clientInput(caps) != nil && !f.upstreamCannotAsk(h.Params.Name) {
			return r
		}
	}
	return r.WithContext(mcp.RespondWithJSON(r.Context()))
}

// upstreamCannotAsk reports whether the tool of the shared catalog named
// name is of an upstream whose requests for input never reach callers.
func (f *Front) upstreamCannotAsk(name string) bool {
	asks, known := f.c.ToolCanAsk(name)
	return known && !asks
}

// asked is what the client of e declared at initialize and whether it
// set a log level (logging/setLevel) since.
func (t *sessionTable) asked(e *frontSession) (*mcp.ClientCapabilities, bool) {
	t.mu.Lock()
	ss, logs := e.ss, e.logs
	t.mu.Unlock()
	if ss == nil {
		return nil, logs
	}
	ip := ss.InitializeParams()
	if ip == nil {
		return nil, logs
	}
	return ip.Capabilities, logs
}

// setLogs records that the client of ss set a log level: its calls may
// be sent log messages from then on.
func (t *sessionTable) setLogs(ss *mcp.ServerSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[ss.ID()]; e != nil && e.ss == ss {
		e.logs = true
	}
}

// setLevel records that the client of ss set a log level (logging/setLevel
// answered): from then on its calls relay their upstreams' log messages
// (dispatch). Only sessions that outlive their request are recorded: a
// /mcp session (it has an ID; removeSession forgets it) and a legacy /sse
// session (no ID, an era before 2026-07-28; forgotten when it ends). A
// 2026-07-28 session of one request has no later call to relay to, and its
// calls carry their level in _meta.
func (f *Front) setLevel(ss *mcp.ServerSession) {
	if ss.ID() != "" {
		f.levels.Store(ss, struct{}{})
		return
	}
	if ip := ss.InitializeParams(); ip == nil || ip.ProtocolVersion >= statelessEra {
		return
	}
	if _, loaded := f.levels.LoadOrStore(ss, struct{}{}); !loaded {
		go func() {
			_ = ss.Wait()
			f.levels.Delete(ss)
		}()
	}
}

// levelSet reports whether the client of ss has set a log level: before
// it does, go-sdk's ServerSession.Log sends it nothing.
func (f *Front) levelSet(ss *mcp.ServerSession) bool {
	_, ok := f.levels.Load(ss)
	return ok
}

// newInlineCalls counts the tools/call requests go-sdk handled on their
// POST's goroutine (mcp.HandledInline): those the JSON rule answers as
// one application/json response, unless the session had a request still
// queued before them.
func newInlineCalls(reg prometheus.Registerer) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsvc_front_calls_inline_total",
		Help: "tools/call requests the MCP front door answered as one JSON response and handled on the HTTP request's own goroutine (go-sdk patch), not go-sdk's per-request handler goroutine."})
	if reg != nil {
		reg.MustRegister(c)
	}
	return c
}
