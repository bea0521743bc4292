package mcpbridge

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session's taps read (and, for the listen rewrite and the call links,
// change) the JSON-RPC messages go-sdk would otherwise decode into types
// that drop what toolsvc needs: exact schema text (rawSchemas,
// rawschema.go), task capabilities and answers and the raw results the
// front door passes on (taskTap, tasktap.go), the listen request's rewrite
// (listenTap, push.go), the stdio listen stream's lifecycle (pushTap,
// push.go), and which call an upstream's input request or log message
// belongs to (linkTap, interact.go). Each is written once, against
// decoded messages, and every transport feeds them the same way: withTaps
// wraps the session's connection (tapConn), which hands each message the
// connection already decoded to every tap. Nothing is parsed again.
//
// Streamable HTTP is no exception since toolsvc has its own client
// connection for it (streamConn, streamhttp.go): go-sdk's could not be
// wrapped (it implements an unexported interface a wrapper would hide),
// so every tap used to be written a second time as an HTTP round tripper
// parsing each body again. streamConn also says which stream each message
// came on (msgOrigin), which the call links need; what is genuinely HTTP
// (a task's Mcp-Name header, the DELETE kept while tasks live, the push
// channel's streams) is a hook of that transport (streamHooks), not a tap.
//
// A connection that reads a response on another goroutine than go-sdk's
// reader (streamConn's JSON bodies and call streams, the gRPC binding's
// RPCs) hands it to go-sdk's waiting call itself (BindResponses: a go-sdk
// patch, docs/http-transport.md "A response handed over"); tapConn shows
// it to the taps on that way, so they still see every message once,
// before go-sdk has it.

// tap is one concern reading a session's messages.
type tap interface {
	// wrote sees a message toolsvc is about to send, with the sender's
	// context. repl, when not nil, is sent instead.
	wrote(ctx context.Context, m jsonrpc.Message) (repl jsonrpc.Message)
	// unsent: m (as sent to wrote, or its replacement) was not sent.
	unsent(m jsonrpc.Message)
	// read sees a message read from the upstream before go-sdk has it,
	// and where it was read (nil: a connection that does not say). The
	// message is shared: only the link tap changes it (its _meta link),
	// and no other tap reads that.
	read(m jsonrpc.Message, from *msgOrigin)
}

// sessionTaps are a session's taps on transport t, in the order they see a
// written message.
func (s *session) sessionTaps(t mcp.Transport) []tap {
	_, byStream := t.(*streamableTransport)
	taps := []tap{
		listenTap{}, // the listen rewrite (push.go)
		&s.raw,      // exact schema text (rawschema.go)
		&taskTap{st: &s.tasks, rawResults: !byStream}, // tasks, raw results (tasktap.go)
		newLinkTap(s, byStream),                       // input requests' and log messages' calls (interact.go)
		endWatch{s: s},                                // the session's end (session.go)
	}
	if s.transport() == TransportStdio && s.u.cfg.NewTransport == nil {
		taps = append(taps, &pushTap{push: s.push}) // the listen stream's lifecycle (push.go)
	}
	return taps
}

// withTaps wraps a transport so that its connection feeds the taps
// (tapConn).
func withTaps(t mcp.Transport, taps []tap) mcp.Transport {
	return &tapTransport{Transport: t, taps: taps}
}

type tapTransport struct {
	mcp.Transport
	taps []tap
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	tc := &tapConn{Connection: c, taps: t.taps}
	tc.origins, _ = c.(originConn)
	return tc, nil
}

// endTap is a tap that is told once when its connection's reading ends:
// the first error Read returns, after which go-sdk reads no more and the
// session is over (the session's end watch, session.go).
type endTap interface {
	readEnded()
}

// tapConn feeds a connection's decoded messages to the taps.
type tapConn struct {
	mcp.Connection
	taps    []tap
	origins originConn // the connection, if it says where messages come from
	ended   sync.Once

	// tapped are responses the taps saw on their way to go-sdk's waiting
	// call (BindResponses) that go-sdk refused (it was shutting down), so
	// the connection queued them for Read, which must not show them to the
	// taps again. Almost always empty: ntapped says when it is not.
	tmu     sync.Mutex
	tapped  map[*jsonrpc.Response]bool
	ntapped atomic.Int32
}

// directConn is a connection that reads some responses on another
// goroutine than go-sdk's reader and says where it read them
// (streamConn); a connection that does not say implements
// mcp.DirectConnection itself (the gRPC binding's).
type directConn interface {
	bindDirect(deliver func(*jsonrpc.Response, *msgOrigin) bool)
}

var _ mcp.DirectConnection = (*tapConn)(nil)

// BindResponses implements mcp.DirectConnection (a toolsvc patch of
// go-sdk: docs/go-sdk-decode-garbage.md): the wrapped connection, if it
// can, hands a response it read on the goroutine that read it to the taps
// and then straight to go-sdk's waiting call, skipping go-sdk's reader.
// The taps see it there exactly as Read would have shown it, before
// go-sdk has it; if go-sdk does not take it, the connection queues it for
// Read and Read does not show it to the taps a second time.
func (c *tapConn) BindResponses(deliver func(*jsonrpc.Response) bool) {
	hand := func(r *jsonrpc.Response, from *msgOrigin) bool {
		for _, t := range c.taps {
			t.read(r, from)
		}
		if deliver(r) {
			return true
		}
		c.tmu.Lock()
		if c.tapped == nil {
			c.tapped = map[*jsonrpc.Response]bool{}
		}
		c.tapped[r] = true
		c.ntapped.Add(1)
		c.tmu.Unlock()
		return false
	}
	switch in := c.Connection.(type) {
	case directConn:
		in.bindDirect(hand)
	case mcp.DirectConnection:
		in.BindResponses(func(r *jsonrpc.Response) bool { return hand(r, nil) })
	}
}

// seen reports (once) whether m is a response the taps saw already.
func (c *tapConn) seen(m jsonrpc.Message) bool {
	r, ok := m.(*jsonrpc.Response)
	if !ok || c.ntapped.Load() == 0 {
		return false
	}
	c.tmu.Lock()
	defer c.tmu.Unlock()
	if !c.tapped[r] {
		return false
	}
	delete(c.tapped, r)
	c.ntapped.Add(-1)
	return true
}

func (c *tapConn) Write(ctx context.Context, m jsonrpc.Message) error {
	for _, t := range c.taps {
		if r := t.wrote(ctx, m); r != nil {
			m = r
		}
	}
	err := c.Connection.Write(ctx, m)
	if err != nil {
		for _, t := range c.taps {
			t.unsent(m)
		}
	}
	return err
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	var (
		m    jsonrpc.Message
		from *msgOrigin
		err  error
	)
	if c.origins != nil {
		m, from, err = c.origins.readFrom(ctx)
	} else {
		m, err = c.Connection.Read(ctx)
	}
	if err == nil {
		if !c.seen(m) {
			for _, t := range c.taps {
				t.read(m, from)
			}
		}
		return m, nil
	}
	c.ended.Do(func() {
		for _, t := range c.taps {
			if e, ok := t.(endTap); ok {
				e.readEnded()
			}
		}
	})
	return m, err
}

// noTap is a tap's default: it neither asks for replies nor keeps state.
type noTap struct{}

func (noTap) wrote(context.Context, jsonrpc.Message) jsonrpc.Message { return nil }
func (noTap) unsent(jsonrpc.Message)                                 {}
func (noTap) read(jsonrpc.Message, *msgOrigin)                       {}

// listenTap rewrites the listen sentinel (rewriteListen, gosdk.go) in a
// subscriptions/listen request toolsvc sends into the request the upstream
// expects.
type listenTap struct{ noTap }

func (listenTap) wrote(_ context.Context, m jsonrpc.Message) jsonrpc.Message {
	req, ok := m.(*jsonrpc.Request)
	if !ok || req.Method != listenMethod || !req.IsCall() {
		return nil
	}
	params, ok := rewriteListen(req.Params)
	if !ok {
		return nil
	}
	cp := *req
	cp.Params = params
	return &cp
}
