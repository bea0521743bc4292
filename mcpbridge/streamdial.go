package mcpbridge

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
)

// ownConnStreams sends a long-lived stream (a session's standalone GET
// stream, a subscriptions/listen stream: longLivedStream, msglimit.go) over
// a connection of its own that nothing but the stream's reader reads: the
// request is written with net/http's Request.Write and the response read
// with http.ReadResponse (chunked bodies included), on the caller's
// goroutine.
//
// Through an http.Transport, an HTTP/1.1 connection has two goroutines of
// its own for its whole life (persistConn's readLoop and writeLoop), and a
// stream that sits idle for hours keeps its connection busy for hours: two
// of the six goroutines an idle upstream cost (docs/benchmarks.md, "What an
// idle HTTP upstream costs, after fleet45c"). A stream's connection is
// never reused (the stream ends it), so the pool had nothing to give it.
//
// Only plain http:// without a proxy takes this path (in-cluster upstreams:
// every one Kubernetes discovery finds); https:// and a request the
// environment's proxy applies to go to fallback, the http.Transport they
// always used (TLS, HTTP/2 and proxies stay net/http's). Everything above
// the round tripper (headers, credentials, redirects: http.Client's
// CheckRedirect, the message limit) is unchanged.
type ownConnStreams struct {
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	proxy func(*http.Request) (*url.URL, error)
	// newFallback makes the fallback transport when a stream first needs
	// it: a plain-HTTP upstream never does, and an http.Transport with its
	// pools is a few KiB kept per upstream.
	newFallback func() *http.Transport
	once        sync.Once
	fb          atomic.Pointer[http.Transport]
}

func (t *ownConnStreams) fallback() *http.Transport {
	t.once.Do(func() { t.fb.Store(t.newFallback()) })
	return t.fb.Load()
}

// streamConnBuf is the size of a stream connection's read and write
// buffers: an idle stream reads a notification now and then and writes
// only its request (the stream reader has its own buffer above).
const streamConnBuf = 1 << 10

func (t *ownConnStreams) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "http" {
		return t.fallback().RoundTrip(r)
	}
	if t.proxy != nil {
		if p, err := t.proxy(r); err != nil || p != nil {
			return t.fallback().RoundTrip(r)
		}
	}
	ctx := r.Context()
	addr := r.URL.Host
	if r.URL.Port() == "" {
		addr = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	// The request's context ends the stream, as net/http's does: closing
	// the connection fails a read in progress. No goroutine until then.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	bw := bufio.NewWriterSize(conn, streamConnBuf)
	if err := r.Write(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	hl := &headerLimit{r: conn, n: maxStreamHeaderBytes}
	br := bufio.NewReaderSize(hl, streamConnBuf)
	var resp *http.Response
	for informational := 0; ; informational++ {
		if informational > maxStream1xx {
			return fail(errStreamTooMany1xx)
		}
		resp, err = http.ReadResponse(br, r)
		if err != nil {
			if hl.n <= 0 {
				err = errStreamHeaderTooLarge
			}
			return fail(err)
		}
		// An informational answer (103 Early Hints) precedes the response:
		// net/http's transport skips it too.
		if resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		_ = resp.Body.Close()
	}
	hl.off = true // the body is bounded above (the message limit, msglimit.go)
	resp.Body = &connBody{body: resp.Body, conn: conn, stop: stop}
	return resp, nil
}

// maxStreamHeaderBytes bounds what a stream's response may send before its
// body (status line, headers, informational answers): net/http's
// transport's default (Transport.MaxResponseHeaderBytes), which bounded
// these responses before they had a connection of their own.
const maxStreamHeaderBytes = 10 << 20

var errStreamHeaderTooLarge = errors.New("upstream stream response headers exceed 10 MiB")

// maxStream1xx bounds the informational (1xx) answers skipped before a
// stream's response. The header bound alone let a flood of tiny ones
// through: 10 MiB of "HTTP/1.1 103" lines is some 300,000 responses parsed
// and allocated (longer than a 5 s connect timeout under -race;
// TestStreamOwnConn1xxFlood). net/http's transport once stopped at 5; the
// Go this builds with counts them against the header bound only. A server
// sends one or two (100 Continue, 103 Early Hints).
const maxStream1xx = 16

var errStreamTooMany1xx = errors.New("upstream stream sent more than 16 informational (1xx) responses")

// headerLimit reads at most n bytes from r until off is set: http.ReadResponse
// itself reads a header line of any length.
type headerLimit struct {
	r   io.Reader
	n   int64
	off bool
}

func (l *headerLimit) Read(p []byte) (int, error) {
	if l.off {
		return l.r.Read(p)
	}
	if l.n <= 0 {
		return 0, errStreamHeaderTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// CloseIdleConnections closes the fallback's idle connections; a stream's
// own connection is never idle (the stream's Close ends it).
func (t *ownConnStreams) CloseIdleConnections() {
	if fb := t.fb.Load(); fb != nil {
		fb.CloseIdleConnections()
	}
}

// connBody is a stream's body on its own connection: Close ends the
// connection. The connection is closed before the body: closing a body
// that has not reached its end reads it to the end (net/http's body), which
// a stream never reaches; with the connection closed that read fails at
// once, and a Read in progress elsewhere returns.
type connBody struct {
	body io.ReadCloser
	conn net.Conn
	stop func() bool
	once sync.Once
}

func (b *connBody) Read(p []byte) (int, error) { return b.body.Read(p) }

func (b *connBody) Close() error {
	b.once.Do(func() {
		b.stop()
		_ = b.conn.Close()
		_ = b.body.Close()
	})
	return nil
}
