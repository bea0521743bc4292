package mcpbridge

import (
	"context"
	"fmt"
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
// The bridge watches the channel from below (the streamable HTTP connection,
// streamhttp.go, and, for stdio, the JSON-RPC connection), so a lost channel is noticed: while it is
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

// The streamable HTTP connection (streamhttp.go) reports its push
// channel's streams here: the standalone GET stream (before 2026-07-28)
// and subscriptions/listen (2026-07-28), whose response streams it follows
// to their end. The listen rewrite is the listen tap's (tap.go), above it.

// pushSet records the push channel's state (no channel watched: nothing).
func (c *streamConn) pushSet(st pushState, reason string) {
	if p := c.t.hooks.push; p != nil {
		p.set(st, reason)
	}
}

// pushUp counts a push stream established.
func (c *streamConn) pushUp() {
	c.pushStreams.Add(1)
	c.pushSet(pushUp, "")
}

// pushEnd counts a push stream ended: the channel is down when none is left.
func (c *streamConn) pushEnd(reason string) {
	if c.pushStreams.Add(-1) == 0 {
		c.pushSet(pushDown, reason)
	}
}

// pushKind is what a POSTed request is to the push channel: the
// list_changed listen stream, a resource subscription's listen stream
// (uris), or neither ("").
func (c *streamConn) pushKind(pi *postInfo) (kind string, uris []string) {
	if c.t.hooks.push == nil || pi.req == nil || pi.method != listenMethod || !pi.call {
		return "", nil
	}
	if listensForListChanged(pi.req.Params) {
		return "subscriptions/listen stream", nil
	}
	if uris := subscribedURIs(pi.req.Params); len(uris) > 0 && c.t.hooks.push.subStream != nil {
		// A resource subscription's listen stream (SubscribeResource) is
		// no push channel: its end must not hide, or fake, the
		// list_changed stream's. It is followed on its own (resubscribe
		// in resourcecalls.go).
		return "resource subscription", uris
	}
	return "", nil
}

// pushRequestFailed: a push stream's request did not reach the upstream.
func (c *streamConn) pushRequestFailed(ctx context.Context, pi *postInfo) {
	kind, uris := c.pushKind(pi)
	switch {
	case kind == "" || ctx.Err() != nil:
	case uris != nil:
		c.t.hooks.push.subStream(uris, false)
	default:
		c.pushSet(pushDown, kind+": request failed")
	}
}

// pushRefused: a push stream's request was answered with an error status.
func (c *streamConn) pushRefused(ctx context.Context, pi *postInfo, status int) {
	kind, uris := c.pushKind(pi)
	switch {
	case kind == "":
	case uris != nil:
		if ctx.Err() == nil {
			c.t.hooks.push.subStream(uris, false)
		}
	case c.pushStreams.Load() == 0:
		c.pushSet(pushDown, fmt.Sprintf("%s refused: HTTP %d", kind, status))
	}
}

// pushStream reports a push stream established by req's answer and returns
// what to call when it ends (nil: req opens none).
func (c *streamConn) pushStream(ctx context.Context, req *jsonrpc.Request) func() {
	kind, uris := c.pushKind(&postInfo{req: req, method: req.Method, call: req.IsCall()})
	switch {
	case kind == "":
		return nil
	case uris != nil:
		c.t.hooks.push.subStream(uris, true)
		return func() {
			if ctx.Err() == nil {
				c.t.hooks.push.subStream(uris, false)
			}
		}
	}
	c.pushUp()
	return func() { c.pushEnd(kind + " closed") }
}

// pushTap is a stdio session's tap (tap.go) for its push channel: over
// stdio a subscriptions/listen request is the stream, up once written and
// ended by the upstream answering it. (It sees the request rewritten: the
// listen tap runs first.) Streamable HTTP reports its streams from the
// connection instead (pushStream above): a stream's end is not a message.
type pushTap struct {
	noTap
	push *pushChannel

	mu      sync.Mutex
	listens map[jsonrpc.ID]bool // open subscriptions/listen requests
}

func (t *pushTap) wrote(_ context.Context, m jsonrpc.Message) jsonrpc.Message {
	req, ok := m.(*jsonrpc.Request)
	if !ok || req.Method != listenMethod || !req.IsCall() || !listensForListChanged(req.Params) {
		return nil // a resource subscription is not the push channel
	}
	t.mu.Lock()
	if t.listens == nil {
		t.listens = map[jsonrpc.ID]bool{}
	}
	t.listens[req.ID] = true
	t.mu.Unlock()
	t.push.set(pushUp, "")
	return nil
}

func (t *pushTap) read(m jsonrpc.Message, _ *msgOrigin) {
	resp, ok := m.(*jsonrpc.Response)
	if !ok {
		return
	}
	t.mu.Lock()
	listen := t.listens[resp.ID]
	delete(t.listens, resp.ID)
	open := len(t.listens)
	t.mu.Unlock()
	if listen && open == 0 {
		t.push.set(pushDown, "subscriptions/listen stream ended by the upstream")
	}
}
