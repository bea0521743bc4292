package mcpbridge

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The push channel is how an upstream's list_changed notifications reach a
// session:
//   - stdio and legacy HTTP+SSE: the session's own stream (it closing is
//     the session dying);
//   - streamable HTTP before 2026-07-28: the standalone GET stream, which
//     go-sdk opens after initialize and re-opens itself;
//   - 2026-07-28 (any transport): a subscriptions/listen request whose
//     response stream carries the notifications. go-sdk opens it once in
//     Connect and never again, and tells nobody when it ends.
//
// The bridge watches the channel from below (the HTTP round tripper and, for
// stdio, the JSON-RPC connection), so a lost channel is noticed: while it is
// down the refresher re-lists every PushlessRefresh (bounded by ttlMs), a
// listen stream is re-opened with backoff, and the server's status and
// metrics say so.

// pushState is the state of a session's push channel.
type pushState int32

const (
	pushUnknown pushState = iota // not seen yet
	pushUp                       // open
	pushDown                     // was open, or was refused; re-opened with backoff
	pushNone                     // the upstream offers none (no standalone GET stream)
)

func (p pushState) String() string {
	switch p {
	case pushUp:
		return "up"
	case pushDown:
		return "down"
	case pushNone:
		return "none"
	}
	return "unknown"
}

// pushChannel tracks one session's push channel. Its methods are cheap and
// never block: they run on transport goroutines.
type pushChannel struct {
	state atomic.Int32
	kick  chan struct{} // capacity 1: the state changed (wakes the refresher)

	mu     sync.Mutex
	since  time.Time
	reason string
	known  chan struct{} // closed once the state is first known
	once   sync.Once

	// subStream, if set (by the session, before its transport exists), is
	// told when a resource subscription's subscriptions/listen stream
	// (2026-07-28, streamable HTTP) is established (up) or ends without
	// the bridge having cancelled it (down). It must not block.
	subStream func(uris []string, up bool)
}

func newPushChannel() *pushChannel {
	return &pushChannel{kick: make(chan struct{}, 1), known: make(chan struct{})}
}

func (p *pushChannel) get() pushState { return pushState(p.state.Load()) }

// set records a state change; reason says why a channel is not up.
func (p *pushChannel) set(st pushState, reason string) {
	if pushState(p.state.Swap(int32(st))) == st && st == pushUp {
		return
	}
	p.mu.Lock()
	p.since = time.Now()
	p.reason = reason
	p.mu.Unlock()
	p.once.Do(func() { close(p.known) })
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// status returns the state, since when, and why.
func (p *pushChannel) status() (pushState, time.Time, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.get(), p.since, p.reason
}

// listenMethod is the 2026-07-28 push-channel request.
const listenMethod = "subscriptions/listen"

// reopenListen opens a new subscriptions/listen stream for tools/list_changed
// on a 2026-07-28 session, replacing the previous re-opened one (the stream
// go-sdk opened in Connect is cancelled only by Close).
func (s *session) reopenListen(ctx context.Context) error {
	n := s.listenSeq.Add(1)
	kinds := s.listChangedKinds()
	uri := fmt.Sprintf("%s%d/%s", listenReopenScheme, n, kinds)
	if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return err
	}
	if prev := s.listenURI.Swap(&uri); prev != nil {
		// Ends the SDK's goroutine parked on the previous stream.
		_ = s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: *prev})
	}
	if s.transport() == TransportStdio {
		// Over stdio the request is the stream: it is up once sent.
		s.push.set(pushUp, "")
	}
	return nil
}

// pushRoundTripper watches a streamable-HTTP session's push channel: the
// standalone GET stream (before 2026-07-28) and subscriptions/listen POSTs
// (2026-07-28), whose response streams it follows to their end. The listen
// rewrite is the listen tap's (tap.go), above it.
type pushRoundTripper struct {
	base    http.RoundTripper
	push    *pushChannel
	streams atomic.Int32 // open push streams
}

func (rt *pushRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	kind := ""
	switch {
	case r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream"):
		kind = "standalone GET stream"
	case r.Method == http.MethodPost:
		// The message as tapRoundTripper decoded (and the listen tap
		// rewrote) it: tap.go.
		if req, ok := postedMessage(r.Context()).(*jsonrpc.Request); ok && req.Method == listenMethod {
			if listensForListChanged(req.Params) {
				kind = "subscriptions/listen stream"
			} else if uris := subscribedURIs(req.Params); len(uris) > 0 && rt.push.subStream != nil {
				// A resource subscription's listen stream (SubscribeResource)
				// is no push channel: its end must not hide, or fake, the
				// list_changed stream's. It is followed on its own
				// (resubscribe in resourcecalls.go).
				return rt.followSubscription(r, uris)
			}
		}
	}
	resp, err := rt.base.RoundTrip(r)
	if kind == "" {
		return resp, err
	}
	switch {
	case err != nil:
		if r.Context().Err() == nil {
			rt.push.set(pushDown, fmt.Sprintf("%s: request failed", kind))
		}
	case kind == "standalone GET stream" && standaloneRefused(resp.StatusCode):
		rt.push.set(pushNone, fmt.Sprintf("the upstream offers no standalone GET stream (HTTP %d): a stateless server", resp.StatusCode))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		if rt.streams.Load() == 0 {
			rt.push.set(pushDown, fmt.Sprintf("%s refused: HTTP %d", kind, resp.StatusCode))
		}
	default:
		rt.streams.Add(1)
		rt.push.set(pushUp, "")
		resp.Body = &streamEnd{ReadCloser: resp.Body, end: func() {
			if rt.streams.Add(-1) == 0 {
				rt.push.set(pushDown, kind+" closed")
			}
		}}
	}
	return resp, err
}

// followSubscription sends a resource subscription's listen request and
// reports its stream to the session: up once established, down when it
// fails or ends, unless the request was cancelled (Unsubscribe, Close).
func (rt *pushRoundTripper) followSubscription(r *http.Request, uris []string) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(r)
	down := func() {
		if r.Context().Err() == nil {
			rt.push.subStream(uris, false)
		}
	}
	switch {
	case err != nil:
		down()
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		down()
	default:
		rt.push.subStream(uris, true)
		resp.Body = &streamEnd{ReadCloser: resp.Body, end: down}
	}
	return resp, err
}

// streamEnd calls end once when the stream ends: a read error (EOF
// included) or Close.
type streamEnd struct {
	io.ReadCloser
	once sync.Once
	end  func()
}

func (s *streamEnd) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if err != nil {
		s.once.Do(s.end)
	}
	return n, err
}

func (s *streamEnd) Close() error {
	s.once.Do(s.end)
	return s.ReadCloser.Close()
}

// pushTransport wraps a stdio transport so the session sees its
// subscriptions/listen requests end (the upstream answering one closes the
// stream). It sees them rewritten (the listen tap, tap.go: withTaps wraps
// it).
type pushTransport struct {
	mcp.Transport
	push *pushChannel
}

func (t *pushTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pushConn{Connection: c, push: t.push}, nil
}

type pushConn struct {
	mcp.Connection
	push *pushChannel

	mu      sync.Mutex
	listens map[jsonrpc.ID]bool // open subscriptions/listen requests
}

func (c *pushConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == listenMethod && req.IsCall() {
		if !listensForListChanged(req.Params) {
			return c.Connection.Write(ctx, msg) // a resource subscription, not the push channel
		}
		c.mu.Lock()
		if c.listens == nil {
			c.listens = map[jsonrpc.ID]bool{}
		}
		c.listens[req.ID] = true
		c.mu.Unlock()
		c.push.set(pushUp, "")
	}
	return c.Connection.Write(ctx, msg)
}

func (c *pushConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		listen := c.listens[resp.ID]
		delete(c.listens, resp.ID)
		open := len(c.listens)
		c.mu.Unlock()
		if listen && open == 0 {
			c.push.set(pushDown, "subscriptions/listen stream ended by the upstream")
		}
	}
	return msg, err
}
