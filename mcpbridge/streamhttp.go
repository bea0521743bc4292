package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolsvc's own client side of the MCP streamable HTTP transport
// (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http),
// for both protocol eras. go-sdk stays the protocol layer above it: its
// ClientSession writes and reads jsonrpc.Messages through streamConn.
//
// go-sdk's own streamable client connection cannot be wrapped (it
// implements an unexported interface through which the session tells it
// the protocol version, the session id and when initialization finished),
// so every concern that reads messages had to be written a second time as
// an HTTP round tripper parsing each body again, and each response passed
// through two goroutines before its caller had it. This connection learns
// the same facts from the messages it carries: the protocol version from
// the initialize result it reads (or, from 2026-07-28, the
// _meta.protocolVersion every request carries), the session id from the
// Mcp-Session-Id header of the initialize response, and the end of
// initialization from the notifications/initialized it writes. It is a
// plain mcp.Connection, so withTaps (tap.go) wraps it like any other and
// every tap sees each message decoded once, with the stream it came on
// (msgOrigin).
//
// What it does, as go-sdk's client did (docs/interop.md):
//   - each message is POSTed; a call's answer comes as a JSON body, read
//     in the writing goroutine (its caller waits anyway), or as an SSE
//     stream, read there too until the call's response (a listen stream
//     gets a goroutine of its own); either hands the call's response straight to go-sdk's waiting call when
//     nothing read before it is still on its way through go-sdk's reader
//     (handOver), else queues it for Read;
//   - before 2026-07-28, the standalone GET stream is opened when the
//     session is initialized (unless noStream), and a broken stream is
//     resumed with Last-Event-ID; a stream that makes no progress is
//     given up after maxRetries reconnects, which ends the session (the
//     bridge reconnects);
//   - a 404 on a session with an id ends the session (the upstream lost
//     it); Close sends DELETE unless the session is gone, has no id, or
//     hooks.keepSession says it owns tasks;
//   - every message is read through the message limit (msglimit.go): an
//     oversized response is replaced by an error for its call, anything
//     else oversized is dropped, and the session goes on;
//   - 401/403 runs the OAuth handler's Authorize and retries once; the
//     HTTP client carries the session's credentials and CheckRedirect.

// streamableTransport opens one streamConn.
type streamableTransport struct {
	endpoint   string
	client     *http.Client
	oauth      authorizer // nil: no OAuth
	limit      int        // the message limit
	log        *slog.Logger
	noStream   bool // no standalone GET stream (per-principal sessions)
	maxRetries int  // reconnects of a stream without progress; 0: none
	hooks      streamHooks
}

// authorizer is an upstream's OAuth (oauth.Handler): the token on every
// request, and on a 401 or 403 a new one before the request is retried
// once.
type authorizer interface {
	SetToken(ctx context.Context, r *http.Request) error
	Authorize(ctx context.Context, r *http.Request, resp *http.Response) error
}

// streamHooks are what the bridge's concerns need of the HTTP exchange
// itself rather than of the messages (which the taps see).
type streamHooks struct {
	// push watches the push channel: the standalone GET stream and the
	// subscriptions/listen streams (push.go). Nil: not watched.
	push *pushChannel
	// header adds a request's headers beyond the standard ones (a task's
	// Mcp-Name: tasktap.go).
	header func(ctx context.Context, req *jsonrpc.Request, h http.Header)
	// keepSession, when it reports true at Close, leaves the session open
	// upstream: no DELETE (tasktap.go).
	keepSession func() bool
	// inputSchema is a tool's input schema as listed, for the 2026-07-28
	// x-mcp-header parameter headers (nil: none).
	inputSchema func(tool string) json.RawMessage
}

// Connect implements mcp.Transport. Nothing is sent until the first Write.
func (t *streamableTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	// Detached from ctx (a connect deadline must not end the session) but
	// keeping its values.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	fctx, fcancel := context.WithCancel(cctx)
	return &streamConn{t: t, ctx: cctx, cancel: cancel, failCtx: fctx, failCancel: fcancel, ready: make(chan struct{}, 1), space: make(chan struct{}, 1),
		failed: make(chan struct{}), done: make(chan struct{})}, nil
}

// msgOrigin is where a message was read: the response stream of the
// request written with ctx, or (ctx nil) the standalone GET stream, which
// no request owns. Taps see it (tap.read); a connection that does not
// report origins gives nil.
type msgOrigin struct {
	ctx context.Context
}

// standaloneOrigin is the origin of every message of the standalone stream.
var standaloneOrigin = &msgOrigin{}

// originConn is a connection that reports where each message was read.
type originConn interface {
	readFrom(ctx context.Context) (jsonrpc.Message, *msgOrigin, error)
}

type inMsg struct {
	m    jsonrpc.Message
	from *msgOrigin
}

// maxQueued bounds the messages a stream goroutine queues ahead of Read
// before it waits (an upstream flooding notifications is read no faster
// than go-sdk handles them). A JSON answer is queued by its writer without
// waiting: those are bounded by the requests in flight.
const maxQueued = 64

type streamConn struct {
	t      *streamableTransport
	ctx    context.Context // the connection's: cancelled by Close
	cancel context.CancelFunc

	mu        sync.Mutex
	sessionID string
	protocol  string     // the negotiated protocol version, once known
	initID    jsonrpc.ID // the initialize request in flight
	initSent  bool
	opened    bool // the standalone stream was started

	qmu   sync.Mutex
	queue []inMsg
	ready chan struct{} // capacity 1: the queue is not empty
	space chan struct{} // capacity 1: Read took a message
	// waiting (under qmu): go-sdk's reader is in Read with the queue
	// empty, so every message queued before has been through the taps
	// and go-sdk's dispatch (handOver).
	waiting bool

	// direct hands a response to go-sdk's waiting call and reports
	// whether it took it (tapConn.BindResponses); nil: Read only. Set
	// before the first Write.
	direct func(*jsonrpc.Response, *msgOrigin) bool

	failOnce sync.Once
	failure  error
	failed   chan struct{}
	// failCtx ends with the connection's failure or close: it ends the
	// call streams read on their callers' goroutines (startStream), whose
	// callers go-sdk has answered with the failure by then.
	failCtx    context.Context
	failCancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error
	done      chan struct{}
	wg        sync.WaitGroup // stream goroutines

	pushStreams atomic.Int32 // open push-channel streams (push.go)
}

// SessionID is the upstream's Mcp-Session-Id ("" for a stateless server):
// go-sdk's ClientSession.ID reports it.
func (c *streamConn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

func (c *streamConn) fail(err error) {
	c.failOnce.Do(func() {
		c.failure = err
		close(c.failed)
		c.failCancel()
	})
}

func (c *streamConn) failedErr() error {
	select {
	case <-c.failed:
		return c.failure
	default:
		return nil
	}
}

// unanswered is told of a request the upstream never answered (it did
// not reach the upstream, or a 5xx or 429 refused it). For server/discover
// that ends the connection: go-sdk falls back to the 2025-11-25
// initialize on any discover error, and an initialize sent a moment later
// to an upstream that was restarting reaches it, so a 2026-07-28 upstream
// would be connected in the older era (with what that era lacks: a Python
// upstream declared no resource subscriptions). Only an answer (a refusal
// of the method or the version) may send the session to the older
// handshake; without one the connect fails and the supervisor tries again.
func (c *streamConn) unanswered(pi *postInfo, err error) {
	if pi.method == "server/discover" {
		c.fail(fmt.Errorf("server/discover got no answer: %w", err))
	}
}

// errRejected marks a request the transport refused without the session
// being in trouble: go-sdk's jsonrpc2 keeps the connection for any write
// error with this code (its ErrRejected compares codes), and the bridge
// reads it the same way (gosdk.go, codeRejectedByTransport).
var errRejected = &jsonrpc.Error{Code: codeRejectedByTransport, Message: "rejected by transport"}

func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, _, err := c.readFrom(ctx)
	return m, err
}

// bindDirect implements directConn (tap.go).
func (c *streamConn) bindDirect(deliver func(*jsonrpc.Response, *msgOrigin) bool) { c.direct = deliver }

// handOver gives go-sdk a message read on a request's own exchange (its
// JSON body, or the end of its SSE stream). A response goes straight to
// its waiting call, on this goroutine, when nothing read before it is
// still on its way through go-sdk's reader: the queue is empty and the
// reader waits in Read, so everything read earlier (a progress
// notification or a server request on the same stream, a log message on
// the standalone stream) has been through the taps and been dispatched by
// go-sdk, as when the response followed them through the queue. The
// caller then wakes without two goroutine hand-offs (this one to go-sdk's
// reader, the reader to the caller). Anything else is queued for Read as
// before (wait: as enqueue). It reports false once the connection is
// closed.
func (c *streamConn) handOver(m jsonrpc.Message, from *msgOrigin, wait bool) bool {
	if r, ok := m.(*jsonrpc.Response); ok && c.direct != nil {
		c.qmu.Lock()
		idle := c.waiting && len(c.queue) == 0
		c.qmu.Unlock()
		if idle {
			c.learn(r) // before the caller wakes, as enqueue does
			if c.direct(r, from) {
				return true
			}
			// go-sdk's connection is shutting down: its reader takes the
			// response, as before (the taps have seen it: tapConn).
		}
	}
	return c.enqueue(m, from, wait)
}

// readFrom returns the next message read and where it was read. Messages
// already read are handed out before a failure is reported: an answer the
// upstream gave is not lost to a later error.
func (c *streamConn) readFrom(ctx context.Context) (jsonrpc.Message, *msgOrigin, error) {
	defer func() {
		c.qmu.Lock()
		c.waiting = false // go-sdk's reader has a message to dispatch, or stops
		c.qmu.Unlock()
	}()
	for {
		c.qmu.Lock()
		if len(c.queue) > 0 {
			in := c.queue[0]
			c.queue[0] = inMsg{}
			c.queue = c.queue[1:]
			if len(c.queue) == 0 {
				c.queue = nil
			}
			c.waiting = false
			c.qmu.Unlock()
			select {
			case c.space <- struct{}{}:
			default:
			}
			return in.m, in.from, nil
		}
		c.waiting = true
		c.qmu.Unlock()
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-c.failed:
			c.qmu.Lock()
			n := len(c.queue)
			c.qmu.Unlock()
			if n == 0 {
				return nil, nil, c.failure
			}
		case <-c.done:
			return nil, nil, io.EOF
		case <-c.ready:
		}
	}
}

// enqueue hands a message to Read; wait (stream goroutines) waits while
// maxQueued are pending. It reports false once the connection is closed.
func (c *streamConn) enqueue(m jsonrpc.Message, from *msgOrigin, wait bool) bool {
	c.learn(m)
	for {
		c.qmu.Lock()
		if !wait || len(c.queue) < maxQueued {
			c.queue = append(c.queue, inMsg{m, from})
			c.qmu.Unlock()
			select {
			case c.ready <- struct{}{}:
			default:
			}
			return true
		}
		c.qmu.Unlock()
		select {
		case <-c.space:
		case <-c.done:
			return false
		}
	}
}

// learn reads what go-sdk would tell its own connection from the
// initialize result: the protocol version.
func (c *streamConn) learn(m jsonrpc.Message) {
	resp, ok := m.(*jsonrpc.Response)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.initSent || resp.ID != c.initID {
		return
	}
	c.initSent = false
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil {
		c.protocol = r.ProtocolVersion
	}
}

// postInfo is what a written message says about its POST.
type postInfo struct {
	req     *jsonrpc.Request // the message, if a request (call or notification)
	call    bool
	method  string
	version string // the protocol version header's value ("" for none)
	name    string // Mcp-Name (2026-07-28)
	params  map[string]string
}

// headerParams are the parts of a request's params its 2026-07-28
// headers carry.
type headerParams struct {
	Name string `json:"name"`
	URI  string `json:"uri"`
	Meta struct {
		ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
	} `json:"_meta"`
}

var protocolVersionKey = []byte(`"` + mcp.MetaKeyProtocolVersion + `"`)

// describe is what headers msg's POST carries. The params are decoded
// only for a request that carries _meta.protocolVersion (every request
// from 2026-07-28): before, nothing in them goes in a header.
func (c *streamConn) describe(msg jsonrpc.Message) postInfo {
	var pi postInfo
	req, ok := msg.(*jsonrpc.Request)
	if ok {
		pi.req, pi.call, pi.method = req, req.IsCall(), req.Method
		if bytes.Contains(req.Params, protocolVersionKey) {
			var p headerParams
			if json.Unmarshal(req.Params, &p) == nil {
				pi.version = p.Meta.ProtocolVersion
				switch req.Method {
				case "tools/call", "prompts/get":
					pi.name = p.Name
				case "resources/read":
					pi.name = p.URI
				}
				if req.Method == "tools/call" && c.t.hooks.inputSchema != nil {
					pi.params = paramHeaders(c.t.hooks.inputSchema(p.Name), req.Params)
				}
			}
		}
	}
	c.mu.Lock()
	if pi.version == "" {
		pi.version = c.protocol
	} else if pi.method != "server/discover" {
		// The negotiated version, which every request carries from
		// 2026-07-28 (discover's is only proposed: it may fall back to
		// initialize, which goes without the header).
		c.protocol = pi.version
	}
	if ok && req.Method == "initialize" && req.IsCall() {
		c.initID, c.initSent = req.ID, true
	}
	c.mu.Unlock()
	return pi
}

// newRequest is an HTTP request to the endpoint with the session's
// headers.
func (c *streamConn) newRequest(ctx context.Context, method string, body []byte, pi *postInfo) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, c.t.endpoint, r)
	if err != nil {
		return nil, err
	}
	h := hr.Header
	if c.t.oauth != nil {
		if err := c.t.oauth.SetToken(c.ctx, hr); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	sid, version := c.sessionID, c.protocol
	c.mu.Unlock()
	if pi != nil && pi.version != "" {
		version = pi.version
	}
	if version != "" {
		h.Set("Mcp-Protocol-Version", version)
	}
	if sid != "" {
		h.Set("Mcp-Session-Id", sid)
	}
	if pi != nil && version >= ProtocolStateless && pi.req != nil {
		h.Set("Mcp-Method", pi.method)
		if pi.name != "" {
			h.Set("Mcp-Name", pi.name)
		}
		for k, v := range pi.params {
			h.Set(k, v)
		}
	}
	if pi != nil && pi.req != nil && c.t.hooks.header != nil {
		c.t.hooks.header(ctx, pi.req, h)
	}
	if pi != nil && closesConn(ctx) {
		hr.Close = true
	}
	return hr, nil
}

// closeConnKey marks a request whose connection is closed once it is
// answered (connClosing).
type closeConnKey struct{}

// connClosing marks ctx's requests to close their connection once answered:
// the prober's and the refresher's listings, the bridge's own requests. A
// probe every PingInterval (15 s by default) kept the calls' connection of
// an idle upstream alive for ever (net/http keeps an idle one for 90 s),
// and with it net/http's two goroutines and about 10 KiB of buffers for
// that connection, and a listing kept one for 90 s; closing it after them
// leaves an idle upstream none, at the cost of one TCP connect per probe
// and per page listed. Calls keep their connections as before.
func connClosing(ctx context.Context) context.Context {
	return context.WithValue(ctx, closeConnKey{}, true)
}

func closesConn(ctx context.Context) bool {
	v, _ := ctx.Value(closeConnKey{}).(bool)
	return v
}

// Write POSTs msg. A call's answer, a JSON body or an SSE stream until the
// call's response, is read here and handed over (handOver); a listen
// stream is read by a goroutine of its own.
func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := c.failedErr(); err != nil {
		return err
	}
	pi := c.describe(msg)
	summary := "sending " + strconv.Quote(pi.method)
	if pi.req == nil {
		summary = "sending a response"
	}
	if pi.method == "notifications/initialized" {
		// Initialization is over: the standalone stream opens now, before
		// the notification is sent, as go-sdk's own client does.
		c.openStandalone(ctx)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("%s: %v", summary, err)
	}
	do := func() (*http.Request, *http.Response, error) {
		hr, err := c.newRequest(ctx, http.MethodPost, data, &pi)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w: %w", summary, errRejected, err)
		}
		h := hr.Header
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
		resp, err := c.t.client.Do(hr)
		if err != nil {
			// The request did not reach the upstream.
			return hr, nil, fmt.Errorf("%s: %w: %w", summary, errRejected, err)
		}
		return hr, resp, nil
	}
	hr, resp, err := do()
	if err != nil {
		c.pushRequestFailed(ctx, &pi)
		c.unanswered(&pi, err)
		return err
	}
	if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && c.t.oauth != nil {
		aerr := c.t.oauth.Authorize(ctx, hr, resp)
		_ = resp.Body.Close()
		if aerr != nil {
			if ctx.Err() != nil {
				// The caller gave up during authorization: what follows on
				// this connection (the cancel notification) must not run it
				// again.
				c.fail(fmt.Errorf("%s: authorization cancelled: %w", summary, aerr))
			}
			return fmt.Errorf("%s: %w: %w", summary, errRejected, aerr)
		}
		if _, resp, err = do(); err != nil {
			c.pushRequestFailed(ctx, &pi)
			c.unanswered(&pi, err)
			return err
		}
	}
	if err := c.check(summary, resp); err != nil {
		c.pushRefused(ctx, &pi, resp.StatusCode)
		if errors.Is(err, errRejected) {
			c.unanswered(&pi, err) // 5xx, 429: the upstream did not answer the request
		}
		if (pi.method == "server/discover" || pi.method == listenMethod) && !errors.Is(err, errRejected) {
			// A refused discover falls back to initialize; a refused listen
			// fails that request only.
			return fmt.Errorf("%w: %w", err, errRejected)
		}
		if !errors.Is(err, errRejected) {
			c.fail(err)
		}
		return err
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.mu.Lock()
		had := c.sessionID
		if had == "" {
			c.sessionID = sid
		}
		c.mu.Unlock()
		if had != "" && had != sid {
			_ = resp.Body.Close()
			return fmt.Errorf("%s: mismatching session IDs %q and %q", summary, had, sid)
		}
	}
	if !pi.call {
		// A notification or a response: 202 Accepted, no body.
		drain(resp.Body)
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
			c.t.log.Debug("upstream answered a notification or response with an unexpected status", "status", resp.StatusCode)
		}
		return nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		c.readJSON(ctx, summary, pi.req, resp)
	case "text/event-stream":
		c.startStream(ctx, summary, pi.req, resp)
	default:
		_ = resp.Body.Close()
		return fmt.Errorf("%s: unsupported content type %q", summary, ct)
	}
	return nil
}

// drain reads a little of a body no one needs, so its connection can be
// reused, and closes it.
func drain(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 4<<10)
	_ = body.Close()
}

// check turns a non-2xx answer into the error go-sdk's client gives for
// it (the body is closed then): a JSON-RPC error in the body is the
// request's answer; 5xx and 429 refuse this request only; a 404 on a
// session with an id means the upstream lost the session.
func (c *streamConn) check(summary string, resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	defer resp.Body.Close()
	status := http.StatusText(resp.StatusCode)
	switch resp.StatusCode {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return fmt.Errorf("%w: %s: %v", errRejected, summary, status)
	case http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong, http.StatusRequestHeaderFieldsTooLarge:
		// The upstream refused this request alone (its own size bound): a
		// rejection for go-sdk's jsonrpc2, which keeps the connection, and
		// for the bridge a refusal that keeps the session
		// (RequestTooLargeError).
		return fmt.Errorf("%w: %w: %s: %v", &tooLargeRefusal{resp.StatusCode}, errRejected, summary, status)
	}
	// A JSON-RPC error in the body, read to at most maxErrorBody.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, int64(min(c.t.limit, maxErrorBody))))
	if m, err := jsonrpc.DecodeMessage(body); err == nil {
		if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
			return fmt.Errorf("%s: %w: %w: %v", summary, r.Error, errRejected, status)
		}
	}
	if sid := c.SessionID(); resp.StatusCode == http.StatusNotFound && sid != "" {
		return fmt.Errorf("%s: the upstream no longer knows the session: %w", summary, mcp.ErrSessionMissing)
	}
	return fmt.Errorf("%s: %v", summary, status)
}

// readJSON reads a call's JSON answer through the message limit and hands
// it over (handOver): the writing goroutine does it, so the caller's answer
// is ready when Write returns.
func (c *streamConn) readJSON(ctx context.Context, summary string, req *jsonrpc.Request, resp *http.Response) {
	defer resp.Body.Close()
	listen := c.pushStream(ctx, req)
	if listen != nil {
		defer listen()
	}
	var body []byte
	switch n := resp.ContentLength; {
	case n > int64(c.t.limit):
		body = c.tooLarge(req, n)
	case n >= 0:
		body = make([]byte, n)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			c.bodyFailed(ctx, summary, err)
			return
		}
	default:
		fr := &frameReader{r: pooledReader(resp.Body), pooled: true, limit: c.t.limit,
			end:            func([]byte, bool) bool { return false }, // the body is one message
			stopAtOverflow: true,
			replace:        func(_ *frameScan, n int64) []byte { return c.tooLarge(req, n) }}
		var err error
		body, err = io.ReadAll(fr)
		fr.release()
		if err != nil {
			c.bodyFailed(ctx, summary, err)
			return
		}
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		c.fail(fmt.Errorf("%s: failed to decode response: %v", summary, err))
		return
	}
	if listen != nil {
		// A push stream's answer keeps its order with the stream's end
		// (listen, deferred): through the queue.
		c.enqueue(msg, &msgOrigin{ctx: ctx}, false)
		return
	}
	c.handOver(msg, &msgOrigin{ctx: ctx}, false)
}

// bodyFailed: a JSON answer could not be read whole. If its caller gave up
// (the read failed because the request was cancelled), the answer is only
// lost; otherwise the connection is in trouble, as go-sdk's client takes it.
func (c *streamConn) bodyFailed(ctx context.Context, summary string, err error) {
	if ctx.Err() != nil {
		return
	}
	c.fail(fmt.Errorf("%s: failed to read body: %v", summary, err))
}

// tooLarge stands for an oversized answer to req: an error for it.
func (c *streamConn) tooLarge(req *jsonrpc.Request, n int64) []byte {
	c.t.log.Warn("upstream message over the limit discarded unread", "bytes", n, "limit", c.t.limit, "response", true)
	id, err := json.Marshal(req.ID.Raw())
	if err != nil {
		return nil
	}
	return tooLargeReply(id)
}

// startStream reads a call's SSE answer. A call's stream is read on the
// writing goroutine, the caller's (go-sdk registers a call before writing
// it and awaits it after, so Write may last as long as the call, as it
// does for a JSON answer): what comes before the response is queued for
// Read as it is read, and the response is handed over (handOver) with no
// goroutine in between. A goroutine per stream was one more hand-off and
// a new stack grown per call. Closing the connection ends the read
// (readStream). A subscriptions/listen stream, which lasts the session,
// gets a goroutine of its own, which Close waits for.
func (c *streamConn) startStream(ctx context.Context, summary string, req *jsonrpc.Request, resp *http.Response) {
	end := c.pushStream(ctx, req)
	long := req.Method == listenMethod
	from := &msgOrigin{ctx: ctx}
	if !long && end == nil {
		if final := c.followStream(ctx, summary, resp, req, from, false); final != nil {
			c.handOver(final, from, true)
		}
		return
	}
	c.wg.Add(1)
	go func() {
		final := func() *jsonrpc.Response {
			defer c.wg.Done()
			if end != nil {
				defer end()
			}
			return c.followStream(ctx, summary, resp, req, from, long)
		}()
		// Handed over outside the goroutines Close waits for: go-sdk may
		// hold its connection's lock while it closes this one, and
		// handOver takes it.
		if final != nil {
			c.handOver(final, from, true)
		}
	}()
}

// openStandalone opens the standalone GET stream (before 2026-07-28, once,
// unless noStream) and starts its goroutine. It runs in the writer of
// notifications/initialized, so the stream's first state is known when
// go-sdk's Connect returns (pushAtConnect relies on it).
//
// Until its response headers arrive the request is bounded by wctx too (the
// writer's: go-sdk's Connect context, which the connect timeout ends): the
// connection's own context is detached from it, and an upstream that never
// answered the GET (or dripped its headers a byte at a time) held the write
// of notifications/initialized, and with it Connect, for ever; the session
// could not even be closed (TestHostileStandaloneStream). The stream itself
// lives on the connection's context, as before.
func (c *streamConn) openStandalone(wctx context.Context) {
	c.mu.Lock()
	skip := c.opened || c.t.noStream || c.protocol == "" || c.protocol >= ProtocolStateless
	c.opened = true
	c.mu.Unlock()
	if skip {
		return
	}
	const summary = "standalone SSE stream"
	hctx, cancel := context.WithCancel(c.ctx)
	stop := context.AfterFunc(wctx, cancel)
	resp, err := c.connectSSE(hctx, "", 0, true)
	if !stop() {
		// The writer gave up (the connect timed out) before the headers
		// came, or as they came: the stream is not kept.
		if err == nil {
			_ = resp.Body.Close()
			err = context.Cause(wctx)
		}
	}
	if err != nil {
		cancel()
		if c.ctx.Err() == nil {
			c.pushSet(pushDown, "standalone GET stream: request failed")
			c.fail(fmt.Errorf("standalone SSE request failed (session ID: %v): %v", c.SessionID(), err))
		}
		return
	}
	// hctx ends with the body (the stream's first response).
	resp.Body = &cancelBody{ReadCloser: resp.Body, stop: func() bool { return true }, cancel: cancel}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case standaloneRefused(resp.StatusCode):
		// 405 is the specification's "no stream here"; servers answer other
		// 4xx too (go-sdk's client takes those as the same).
		_ = resp.Body.Close()
		c.pushSet(pushNone, fmt.Sprintf("the upstream offers no standalone GET stream (HTTP %d): a stateless server", resp.StatusCode))
		return
	case resp.StatusCode >= 200 && resp.StatusCode < 300 && ct != "text/event-stream":
		_ = resp.Body.Close()
		c.t.log.Warn("upstream answered the standalone GET stream with another content type", "contentType", ct)
		c.pushSet(pushDown, "standalone GET stream refused: content type "+ct)
		return
	}
	if err := c.check(summary, resp); err != nil {
		c.pushSet(pushDown, fmt.Sprintf("standalone GET stream refused: HTTP %d", resp.StatusCode))
		c.fail(err)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = c.followStream(c.ctx, summary, resp, nil, standaloneOrigin, true) // no call: no final response
	}()
}

// followStream reads an SSE stream, resuming it with Last-Event-ID when it
// breaks, until forCall's response (nil: the standalone stream, until the
// connection closes). A stream that breaks without progress more than
// maxRetries times in a row fails the connection. The call's response is
// returned, not queued, unless long (readStream): the caller hands it over.
func (c *streamConn) followStream(ctx context.Context, summary string, resp *http.Response, forCall *jsonrpc.Request, from *msgOrigin, long bool) (final *jsonrpc.Response) {
	standalone := forCall == nil
	var prevID string
	noProgress := 0
	for {
		if standalone {
			c.pushUp()
		}
		lastID, delay, over, final := c.readStream(ctx, summary, resp, forCall, from, long)
		if standalone {
			c.pushEnd("standalone GET stream closed")
		}
		if final != nil {
			return final
		}
		if over || (lastID == "" && !standalone) {
			return nil
		}
		if lastID != "" && lastID != prevID {
			noProgress, prevID = 0, lastID
		} else if noProgress++; noProgress > c.t.maxRetries {
			if ctx.Err() == nil {
				c.fail(fmt.Errorf("%s: exceeded %d retries without progress (session ID: %v)", summary, c.t.maxRetries, c.SessionID()))
			}
			return nil
		}
		next, err := c.connectSSE(ctx, lastID, delay, false)
		if err != nil {
			if ctx.Err() == nil {
				c.fail(fmt.Errorf("%s: failed to reconnect (session ID: %v): %v", summary, c.SessionID(), err))
			}
			return nil
		}
		if err := c.check(summary, next); err != nil {
			c.fail(err)
			return nil
		}
		resp = next
	}
}

// readStream reads one response stream's events through the message
// limit, decoding each message once, until forCall's response, the end of
// the body, or the connection's close (over: nothing more to do). The
// response is queued like every message before it when long (a listen
// stream, whose end is reported after it); otherwise it is returned as
// final, unqueued.
func (c *streamConn) readStream(ctx context.Context, summary string, resp *http.Response, forCall *jsonrpc.Request, from *msgOrigin, long bool) (lastID string, delay time.Duration, over bool, final *jsonrpc.Response) {
	// Closing the connection ends every stream, whatever its request's
	// context; its failure ends a call's stream read on the caller's
	// goroutine (startStream): go-sdk's reader stops at the failure and
	// fails the calls in flight, which the caller would otherwise learn
	// only once its stream ended (the goroutines of the other streams
	// read on until Close, as go-sdk's client's do).
	end := c.ctx
	if forCall != nil && !long {
		end = c.failCtx
	}
	stop := context.AfterFunc(end, func() { _ = resp.Body.Close() })
	defer stop()
	br, pooled := (*bufio.Reader)(nil), false
	if long {
		// An idle stream would pin a pooled 64 KiB buffer for the
		// session's life: it gets a small one of its own.
		br = bufio.NewReaderSize(resp.Body, streamReaderSize)
	} else {
		br, pooled = pooledReader(resp.Body), true
	}
	fr := &frameReader{r: br, pooled: pooled, body: resp.Body, limit: c.t.limit,
		end: func(line []byte, whole bool) bool { return whole && isBlankLine(line) },
		replace: func(f *frameScan, n int64) []byte {
			return replacement(f, n, c.t.limit, c.t.log, "sse")
		}}
	defer func() {
		fr.release()
		_ = resp.Body.Close()
	}()
	for {
		frame, err := fr.nextFrame()
		if err == nil && fr.err != nil && fr.err != io.EOF {
			// The body broke (the call was cancelled, the connection
			// dropped) in the middle of this frame: what came of the event
			// is not an event. (At the end of the body, a last event
			// without its blank line still counts, as in go-sdk's client.)
			err = fr.err
		}
		if err != nil && err != io.EOF {
			break
		}
		if len(frame) > 0 {
			ev, ok := parseEvent(frame)
			if !ok {
				c.fail(fmt.Errorf("%s: malformed line in SSE stream", summary))
				return "", 0, true, nil
			}
			if ev.id != "" && len(ev.id) <= maxEventID {
				lastID = ev.id
			}
			if ev.retry != "" {
				if n, err := strconv.ParseInt(ev.retry, 10, 64); err == nil && n >= 0 {
					delay = time.Duration(min(n, reconnectCap.Milliseconds())) * time.Millisecond
				}
			}
			if len(ev.data) > 0 && (ev.name == "" || ev.name == "message") {
				msg, err := jsonrpc.DecodeMessage(ev.data)
				if err != nil {
					c.fail(fmt.Errorf("%s: failed to decode event: %v", summary, err))
					return "", 0, true, nil
				}
				r, ok := msg.(*jsonrpc.Response)
				last := ok && forCall != nil && r.ID == forCall.ID
				if last && !long {
					return "", 0, true, r
				}
				if !c.enqueue(msg, from, true) {
					return "", 0, true, nil
				}
				if last {
					return "", 0, true, nil
				}
			}
		}
		if err != nil {
			break
		}
	}
	if ctx.Err() != nil || end.Err() != nil {
		return "", 0, true, nil // the caller gave up, or the connection closed (or failed)
	}
	if lastID == "" && forCall != nil {
		// Not resumable: the call's answer will never come.
		c.enqueue(&jsonrpc.Response{ID: forCall.ID, Error: errors.New("request terminated without response")}, from, true)
	}
	return lastID, delay, false, nil
}

// maxEventID bounds the event id toolsvc keeps to resume a stream with
// (Last-Event-ID): an upstream's longer id is not sent back to it; its
// stream is then not resumable.
const maxEventID = 1 << 10

type sseEvent struct {
	name, id, retry string
	data            []byte
}

// parseEvent reads one SSE event's fields (the frame ends with its blank
// line). ok is false for a line without a colon, which go-sdk's client
// also takes as a corrupt stream.
func parseEvent(frame []byte) (ev sseEvent, ok bool) {
	var data [][]byte
	for len(frame) > 0 {
		line := frame
		if i := bytes.IndexByte(frame, '\n'); i >= 0 {
			line, frame = frame[:i], frame[i+1:]
		} else {
			frame = nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			continue
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if !found {
			return ev, false
		}
		switch string(field) {
		case "event":
			ev.name = string(bytes.TrimSpace(value))
		case "id":
			ev.id = string(bytes.TrimSpace(value))
		case "retry":
			ev.retry = string(bytes.TrimSpace(value))
		case "data":
			data = append(data, bytes.TrimSpace(value))
		}
	}
	switch len(data) {
	case 0:
	case 1:
		ev.data = data[0]
	default:
		ev.data = bytes.Join(data, []byte("\n"))
	}
	return ev, true
}

// connectSSE GETs an event stream (the standalone one, or lastID's to
// resume), retrying a failed request up to maxRetries times with backoff.
func (c *streamConn) connectSSE(ctx context.Context, lastID string, delay time.Duration, initial bool) (*http.Response, error) {
	attempt := 0
	if !initial {
		// Connected once already: a server that answers and hangs up at
		// once is not reconnected to as fast as possible.
		attempt = 1
	}
	wait := reconnectDelay(attempt)
	if delay > 0 {
		wait = delay // the server's retry field
	}
	var last error
	for ; attempt <= c.t.maxRetries; attempt++ {
		t := time.NewTimer(wait)
		select {
		case <-c.done:
			t.Stop()
			return nil, errors.New("connection closed by client during reconnect")
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		// A call's stream is resumed with the call's context; closing
		// the connection ends it too (Close waits for this goroutine).
		rctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(c.ctx, cancel)
		hr, err := c.newRequest(rctx, http.MethodGet, nil, nil)
		if err != nil {
			stop()
			cancel()
			return nil, err
		}
		if lastID != "" {
			hr.Header.Set("Last-Event-ID", lastID)
		}
		hr.Header.Set("Accept", "text/event-stream")
		resp, err := c.t.client.Do(hr)
		if err != nil {
			stop()
			cancel()
			last = err
			wait = reconnectDelay(attempt + 1)
			continue
		}
		resp.Body = &cancelBody{ReadCloser: resp.Body, stop: stop, cancel: cancel}
		return resp, nil
	}
	if last != nil {
		return nil, fmt.Errorf("connection failed after %d attempts: %w", c.t.maxRetries, last)
	}
	return nil, fmt.Errorf("connection aborted after %d attempts", c.t.maxRetries)
}

// cancelBody releases its request's context when the body is closed.
type cancelBody struct {
	io.ReadCloser
	stop   func() bool
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.stop()
	b.cancel()
	return err
}

// Reconnect backoff, as go-sdk's client: 1 s, growing by 1.5 per
// attempt, capped at 30 s, plus full jitter.
const (
	reconnectBase   = time.Second
	reconnectGrowth = 1.5
	reconnectCap    = 30 * time.Second
)

func reconnectDelay(attempt int) time.Duration {
	if attempt == 0 {
		return 0
	}
	d := min(time.Duration(float64(reconnectBase)*math.Pow(reconnectGrowth, float64(attempt-1))), reconnectCap)
	return d + rand.N(d)
}

// closeDeleteTimeout bounds Close's DELETE: a peer that accepts the
// connection and never answers must not hold teardown open.
const closeDeleteTimeout = 5 * time.Second

// Close ends the session upstream (DELETE, unless it is gone, has no id,
// or keepSession says to keep it), then every stream, and waits for their
// goroutines.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		sid := c.SessionID()
		keep := c.t.hooks.keepSession != nil && c.t.hooks.keepSession()
		if sid != "" && !keep && !errors.Is(c.failedErr(), mcp.ErrSessionMissing) {
			ctx, stop := context.WithTimeout(c.ctx, closeDeleteTimeout)
			if hr, err := c.newRequest(ctx, http.MethodDelete, nil, nil); err != nil {
				c.closeErr = err
			} else if resp, err := c.t.client.Do(hr); err != nil {
				c.closeErr = err
			} else {
				drain(resp.Body)
			}
			stop()
		}
		c.cancel()
		close(c.done)
		c.wg.Wait()
	})
	return c.closeErr
}
