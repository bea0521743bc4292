package mcpbridge

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session's taps read (and, for the listen rewrite, change) the JSON-RPC
// messages go-sdk would otherwise decode into types that drop what toolsvc
// needs: exact schema text (rawSchemas, rawschema.go), task capabilities
// and answers and the raw results the front door passes on (taskTap,
// tasktap.go), the listen request's rewrite (listenTap, push.go). Each is
// written once, against decoded messages; the transport feeds them:
//
//   - a connection toolsvc can wrap (stdio, legacy SSE, gRPC and custom
//     transports) through tapConn, which hands each message the connection
//     already decoded to every tap: nothing is parsed again;
//   - streamable HTTP, whose go-sdk connection cannot be wrapped (it
//     implements an unexported interface a wrapper would hide:
//     TestGoSDKStreamableConnCannotBeWrapped), through tapRoundTripper on
//     the session's HTTP client: it decodes each POSTed message once for
//     every tap (and hands it down in the request's context to the round
//     trippers below, pushRoundTripper), and, when a tap wants the reply,
//     decodes each message of the response body once (tapBody) for every
//     tap, before go-sdk decodes it.
//
// The call links of input requests and log messages (interact.go: linkConn,
// linkRoundTripper) are not a tap yet: on HTTP they depend on the stream a
// message came on and rewrite messages on every event stream.

// tap is one concern reading a session's messages.
type tap interface {
	// wrote sees a message toolsvc is about to send, with the sender's
	// context. repl, when not nil, is sent instead; wantReply asks for the
	// reply to this request (on HTTP, its POST's response is read only
	// when some tap asks).
	wrote(ctx context.Context, m jsonrpc.Message) (repl jsonrpc.Message, wantReply bool)
	// unsent: m (as sent to wrote, or its replacement) was not sent, or
	// its reply will not be read.
	unsent(m jsonrpc.Message)
	// read sees a message read from the upstream before go-sdk decodes it.
	// The message is shared: a tap must not modify it.
	read(m jsonrpc.Message)
	// wants says, from a message's encoded form and its sender's context,
	// whether wrote may act on it: where messages come encoded (an HTTP
	// POST's body), one no tap wants is not decoded. False positives only
	// cost a decode.
	wants(ctx context.Context, encoded []byte) bool
}

// sessionTaps are a session's taps, in the order they see a written
// message.
func (s *session) sessionTaps(tr Transport) []tap {
	return []tap{
		listenTap{}, // the listen rewrite (push.go)
		&s.raw,      // exact schema text (rawschema.go)
		&taskTap{st: &s.tasks, rawResults: tr != TransportStreamableHTTP}, // tasks, raw results (tasktap.go)
	}
}

// withTaps wraps a transport other than streamable HTTP so that its
// connection feeds taps (tapConn); streamable HTTP feeds them from its HTTP
// client (tapRoundTripper, transport.go).
func withTaps(t mcp.Transport, taps []tap) mcp.Transport {
	if _, ok := t.(*mcp.StreamableClientTransport); ok {
		return t
	}
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
	return &tapConn{Connection: c, taps: t.taps}, nil
}

// tapConn feeds a connection's decoded messages to the taps.
type tapConn struct {
	mcp.Connection
	taps []tap
}

func (c *tapConn) Write(ctx context.Context, m jsonrpc.Message) error {
	for _, t := range c.taps {
		if r, _ := t.wrote(ctx, m); r != nil {
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
	m, err := c.Connection.Read(ctx)
	if err == nil {
		for _, t := range c.taps {
			t.read(m)
		}
	}
	return m, err
}

// tapRoundTripper feeds a streamable HTTP session's messages to the taps:
// each POSTed message is decoded once (and encoded again only when a tap
// replaced it); the response body of a POST whose reply a tap wants is
// read through tapBody.
type tapRoundTripper struct {
	base http.RoundTripper
	taps []tap
}

type postedKey struct{}

// postedMessage is the message a POST carries, as the taps left it, for the
// round trippers below tapRoundTripper (nil: not a single message).
func postedMessage(ctx context.Context) jsonrpc.Message {
	m, _ := ctx.Value(postedKey{}).(jsonrpc.Message)
	return m
}

func (rt *tapRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.GetBody == nil {
		return rt.base.RoundTrip(r)
	}
	ctx := r.Context()
	msg := rt.decodePost(r)
	if msg == nil {
		return rt.base.RoundTrip(r)
	}
	want, replaced := false, false
	for _, t := range rt.taps {
		repl, w := t.wrote(ctx, msg)
		if repl != nil {
			msg, replaced = repl, true
		}
		want = want || w
	}
	r = r.WithContext(context.WithValue(ctx, postedKey{}, msg))
	if replaced {
		body, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
	}
	resp, err := rt.base.RoundTrip(r)
	if !want {
		return resp, err
	}
	if err != nil || resp.StatusCode != http.StatusOK || resp.Body == nil {
		for _, t := range rt.taps {
			t.unsent(msg)
		}
		return resp, err
	}
	resp.Body = &tapBody{ReadCloser: resp.Body, taps: rt.taps,
		sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	return resp, nil
}

// maxTapPost bounds the POST body tapRoundTripper decodes: toolsvc's own
// requests are bounded like arguments well below it; a larger one passes
// untapped.
const maxTapPost = 64 << 20

// decodePost decodes the single JSON-RPC message a POST carries when a tap
// wants it (nil for none, a batch, or anything that does not decode).
func (rt *tapRoundTripper) decodePost(r *http.Request) jsonrpc.Message {
	if r.ContentLength > maxTapPost {
		return nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var data []byte
	if r.ContentLength > 0 {
		data = make([]byte, r.ContentLength)
		if _, err := io.ReadFull(body, data); err != nil {
			return nil
		}
	} else if data, err = io.ReadAll(io.LimitReader(body, maxTapPost)); err != nil {
		return nil
	}
	want := false
	for _, t := range rt.taps {
		if t.wants(r.Context(), data) {
			want = true
			break
		}
	}
	if !want {
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil
	}
	return msg
}

// tapBodyMax bounds what one response body may buffer; past it, the rest
// of the body passes untapped (a tools/list result that large keeps
// go-sdk's decoded schemas; the message limit below is normally smaller).
const tapBodyMax = 64 << 20

// tapBody passes a POST's response body through, keeping a copy: each SSE
// event is decoded as it completes, a JSON body at its end, and each
// message goes to every tap before go-sdk (which reads the bytes only once
// Read returns) can decode it.
type tapBody struct {
	io.ReadCloser
	taps []tap
	sse  bool
	buf  []byte
	done bool
}

func (t *tapBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if !t.done && n > 0 {
		if len(t.buf)+n > tapBodyMax {
			t.done, t.buf = true, nil
		} else {
			t.buf = append(t.buf, p[:n]...)
			if t.sse {
				t.events()
			}
		}
	}
	if err != nil && !t.done {
		t.finish()
	}
	return n, err
}

func (t *tapBody) Close() error {
	if !t.done {
		t.finish()
	}
	return t.ReadCloser.Close()
}

func (t *tapBody) finish() {
	if !t.sse {
		t.message(t.buf)
	}
	t.done, t.buf = true, nil
}

// events hands on every complete SSE event in the buffer and keeps the
// rest.
func (t *tapBody) events() {
	for {
		i, sep := bytes.Index(t.buf, []byte("\n\n")), 2
		if j := bytes.Index(t.buf, []byte("\r\n\r\n")); j >= 0 && (i < 0 || j < i) {
			i, sep = j, 4
		}
		if i < 0 {
			return
		}
		var data [][]byte
		for _, line := range bytes.Split(t.buf[:i], []byte("\n")) {
			line = bytes.TrimSuffix(line, []byte("\r"))
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimPrefix(d, []byte(" ")))
			}
		}
		if len(data) > 0 {
			t.message(bytes.Join(data, []byte("\n")))
		}
		t.buf = t.buf[i+sep:]
	}
}

// message decodes one message and hands it to the taps. Its bytes are a
// copy (bytes.Join, or the buffer finish drops), so nothing aliases what
// go-sdk reads.
func (t *tapBody) message(data []byte) {
	if len(data) == 0 {
		return
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return
	}
	for _, tp := range t.taps {
		tp.read(msg)
	}
}

// noTap is a tap's default: it neither asks for replies nor keeps state.
type noTap struct{}

func (noTap) wrote(context.Context, jsonrpc.Message) (jsonrpc.Message, bool) { return nil, false }
func (noTap) unsent(jsonrpc.Message)                                         {}
func (noTap) read(jsonrpc.Message)                                           {}

// listenKey finds a subscriptions/listen request's encoded form: every one
// is decoded, for the push channel's round tripper (postedMessage), not
// only those the listen tap rewrites.
var listenKey = []byte(`"` + listenMethod + `"`)

// listenTap rewrites the listen sentinel (rewriteListen, gosdk.go) in a
// subscriptions/listen request toolsvc sends into the request the upstream
// expects.
type listenTap struct{ noTap }

func (listenTap) wants(_ context.Context, b []byte) bool { return bytes.Contains(b, listenKey) }

func (listenTap) wrote(_ context.Context, m jsonrpc.Message) (jsonrpc.Message, bool) {
	req, ok := m.(*jsonrpc.Request)
	if !ok || req.Method != listenMethod || !req.IsCall() {
		return nil, false
	}
	params, ok := rewriteListen(req.Params)
	if !ok {
		return nil, false
	}
	cp := *req
	cp.Params = params
	return &cp, false
}
