package mcpbridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Message limits. An upstream's message (a stdio line, a streamable-HTTP
// JSON body or SSE event) is read through a limiter before anything
// buffers it whole: a message over the limit is skipped to its end without
// being kept, and a response among them is replaced by a small JSON-RPC
// error for the same request id, which Call reports as a
// *ResponseTooLargeError. The session survives: the stream's framing
// (newline, blank line, end of body) tells where the next message starts.
// Before this, an HTTP result was read whole (a 200 MB result took the
// process from 38 MB to 1.4 GB) and a stdio line over go-sdk's 16 MiB frame
// limit ended the session (docs/security.md).

// transportRefusal is the error for a request toolsvc's own transport layer
// refused, or nil: a redirect to another origin (transport.go) or an answer
// over the message limit, which the limiter replaced with its stand-in
// error. Neither means the session is in trouble. Every request meets it
// (request.go).
func (u *upstream) transportRefusal(err error) error {
	server := u.cfg.Name
	var (
		rerr *RedirectError
		werr *jsonrpc.Error
		big  *tooLargeRefusal
	)
	switch {
	case errors.As(err, &rerr):
		return &UnavailableError{Server: server, Reason: ReasonRedirectRefused}
	case errors.As(err, &werr) && werr.Code == codeMessageTooLarge && werr.Message == messageTooLargeText:
		return &ResponseTooLargeError{Server: server, Limit: u.maxMessage()}
	case errors.As(err, &big):
		return &RequestTooLargeError{Server: server, Status: big.status}
	}
	return nil
}

// RequestTooLargeError is an upstream's refusal of a request as too large
// for it: HTTP 413, 414 or 431 to a streamable-HTTP POST. The upstream is
// alive and answered, about that request alone (its own body bound: go-sdk's
// handler refuses a body over 4 MiB, and toolsvc's request bound counts the
// arguments, not the JSON-RPC envelope around them), so the session goes
// on: ending it would let one caller's large call drop every principal's
// calls in flight on that upstream.
type RequestTooLargeError struct {
	Server string
	Status int // the HTTP status
}

func (e *RequestTooLargeError) Error() string {
	return fmt.Sprintf("upstream %q refused the request as too large for it (HTTP %d %s)", e.Server, e.Status, http.StatusText(e.Status))
}

// tooLargeRefusal marks a transport error that is an upstream's refusal of
// one request as too large (streamConn.check); transportRefusal turns it
// into *RequestTooLargeError.
type tooLargeRefusal struct{ status int }

func (e *tooLargeRefusal) Error() string {
	return fmt.Sprintf("refused as too large: %d %s", e.status, http.StatusText(e.status))
}

// DefaultMaxMessageBytes is the message limit when Config.MaxMessageBytes
// is 0: go-sdk's own stdio frame and SSE event limit (gosdk.go).
const DefaultMaxMessageBytes = sdkMaxFrame

// codeMessageTooLarge is the JSON-RPC error code of the replacement for an
// oversized response: in the implementation-defined server-error range
// (https://www.jsonrpc.org/specification#error_object), recognised together
// with messageTooLargeText, so an upstream's own -32097 stays its own.
const codeMessageTooLarge = -32097

const messageTooLargeText = "toolsvc: the upstream's response is over the message limit and was discarded unread"

// MessageTooLarge is the error a transport of Config.Transports answers a
// request with when the upstream's answer was over the message limit and
// was refused unread: the request then fails with *ResponseTooLargeError
// like on the bridge's own transports, and the session goes on.
func MessageTooLarge() *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeMessageTooLarge, Message: messageTooLargeText}
}

// ResponseTooLargeError is an upstream answer over the message limit: it
// was discarded without being buffered, and the session goes on.
type ResponseTooLargeError struct {
	Server string
	Limit  int // bytes
}

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("server %q answered with a message over the %d-byte limit; it was discarded unread", e.Server, e.Limit)
}

// maxMessage is the upstream's message limit.
func (u *upstream) maxMessage() int {
	if n := u.b.cfg.MaxMessageBytes; n > 0 {
		return n
	}
	return DefaultMaxMessageBytes
}

// tooLargeReply is the JSON-RPC error that replaces an oversized response
// with id (raw JSON).
func tooLargeReply(id json.RawMessage) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, codeMessageTooLarge, messageTooLargeText)
}

// frameScan follows a JSON value streamed through it, keeping only what
// identifies a JSON-RPC message: its top-level keys of interest and its
// "id" (at most maxIDBytes). It never holds the rest.
type frameScan struct {
	depth      int
	inStr, esc bool
	expectKey  bool
	inKey      bool
	key        []byte
	lastKey    string
	capturing  bool
	id         []byte
	idTooLong  bool
	hasMethod  bool
	isResponse bool
}

const (
	maxIDBytes  = 256
	maxKeyBytes = 16
)

func (f *frameScan) feed(b []byte) {
	for _, c := range b {
		if f.capturing {
			if !f.inStr && (f.depth == 1 && (c == ',' || c == '}') || f.depth == 0) {
				f.capturing = false
			} else if len(f.id) > 0 || !isSpace(c) {
				if len(f.id) >= maxIDBytes {
					f.idTooLong = true
				} else {
					f.id = append(f.id, c)
				}
			}
		}
		if f.inStr {
			switch {
			case f.esc:
				f.esc = false
			case c == '\\':
				f.esc = true
			case c == '"':
				f.inStr = false
				if f.inKey {
					f.inKey, f.expectKey = false, false
					f.lastKey = string(f.key)
					f.key = f.key[:0]
				}
				continue
			}
			if f.inKey && len(f.key) <= maxKeyBytes {
				f.key = append(f.key, c)
			}
			continue
		}
		switch c {
		case '"':
			f.inStr = true
			f.inKey = f.depth == 1 && f.expectKey
		case '{', '[':
			f.depth++
			if f.depth == 1 {
				f.expectKey = c == '{'
			}
		case '}', ']':
			f.depth--
		case ',':
			if f.depth == 1 {
				f.expectKey = true
			}
		case ':':
			if f.depth == 1 {
				switch f.lastKey {
				case "id":
					f.capturing, f.id = true, f.id[:0]
				case "method":
					f.hasMethod = true
				case "result", "error":
					f.isResponse = true
				}
			}
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// responseID is the id of the scanned message if it is a response whose id
// was read whole, else nil.
func (f *frameScan) responseID() json.RawMessage {
	if !f.isResponse || f.hasMethod || f.idTooLong || len(f.id) == 0 || !json.Valid(f.id) {
		return nil
	}
	return bytes.TrimSpace(f.id)
}

// frameReader delivers a stream of frames whole, each at most limit bytes;
// an oversized frame is read to its end through a frameScan (or, with
// stopAtOverflow, not read further) and replaced by what replace makes of
// the scan: nothing, or a small replacement frame.
type frameReader struct {
	r     *bufio.Reader
	body  io.Closer // closed by Close (HTTP bodies); nil for stdio
	limit int
	// end reports whether line ends the current frame; whole is false
	// for the tail of a line longer than the reader's buffer.
	end            func(line []byte, whole bool) bool
	replace        func(f *frameScan, n int64) []byte
	stopAtOverflow bool // the frame is the whole stream (a JSON body)
	// pooled: r came from bodyReaders and goes back once the stream has
	// ended (release), on the reading goroutine: Close may run
	// concurrently with a Read, so it never touches r.
	pooled bool

	buf, out []byte
	err      error
}

// bodyReaders are the 64 KiB read buffers of HTTP response bodies: one per
// response was the largest allocation of toolsvc's own on a streamable
// HTTP call (a tools/call answered on an SSE stream), 64 KiB of garbage
// per call.
var bodyReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// streamReaderSize is the read buffer of a long-lived event stream.
const streamReaderSize = 1 << 10

// longLivedStream reports a request whose event stream stays open while
// idle: the standalone GET stream (and resumption GETs) before 2026-07-28,
// subscriptions/listen since (go-sdk names the method in Mcp-Method).
func longLivedStream(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Header.Get("Mcp-Method") == "subscriptions/listen"
}

func pooledReader(r io.Reader) *bufio.Reader {
	br := bodyReaders.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

// release gives a pooled read buffer back once the stream has ended (err
// is set: next is never called again). Nothing read stays in it: frames
// are copied into buf, replacements are built apart.
func (fr *frameReader) release() {
	if fr.pooled && fr.r != nil {
		fr.r.Reset(nil)
		bodyReaders.Put(fr.r)
		fr.r = nil
	}
}

// shrinkAbove is the buffer capacity a frameReader keeps between frames.
const shrinkAbove = 1 << 20

func (fr *frameReader) Read(p []byte) (int, error) {
	for len(fr.out) == 0 {
		if fr.err != nil {
			return 0, fr.err
		}
		fr.next()
	}
	n := copy(p, fr.out)
	fr.out = fr.out[n:]
	return n, nil
}

// nextFrame returns the next frame whole, for a reader that takes frames
// rather than bytes (stdioConn). The frame is valid until the next call;
// a replaced oversized frame comes as its replacement, a dropped one not
// at all. Not to be mixed with Read.
func (fr *frameReader) nextFrame() ([]byte, error) {
	for len(fr.out) == 0 {
		if fr.err != nil {
			return nil, fr.err
		}
		fr.next()
	}
	f := fr.out
	fr.out = nil
	return f, nil
}

func (fr *frameReader) Close() error {
	if fr.body != nil {
		return fr.body.Close()
	}
	return nil
}

// next reads one frame into out (or sets err).
func (fr *frameReader) next() {
	if cap(fr.buf) > shrinkAbove {
		fr.buf = nil // one big frame does not pin its buffer for the session's life
	}
	fr.buf = fr.buf[:0]
	lineStart, whole := 0, true
	for {
		chunk, err := fr.r.ReadSlice('\n')
		if len(fr.buf)+len(chunk) > fr.limit {
			fr.skip(chunk, err, whole)
			return
		}
		fr.buf = append(fr.buf, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			whole = false // the next chunk goes on this line
			continue
		case err != nil:
			fr.out, fr.err = fr.buf, err // a last frame without its end, then the error
			fr.release()
			return
		}
		if fr.end(fr.buf[lineStart:], true) {
			fr.out = fr.buf
			return
		}
		lineStart, whole = len(fr.buf), true
	}
}

// skip reads the rest of an oversized frame, keeping none of it. whole
// says whether chunk starts a line: a chunk that ends a line longer than
// the reader's buffer may be just its newline, which is not a blank line.
func (fr *frameReader) skip(chunk []byte, err error, whole bool) {
	var f frameScan
	f.feed(fr.buf)
	n := int64(len(fr.buf))
	fr.buf = nil
	if fr.stopAtOverflow {
		f.feed(chunk)
		fr.out, fr.err = fr.replace(&f, n+int64(len(chunk))), io.EOF
		fr.release()
		_ = fr.Close()
		return
	}
	for {
		f.feed(chunk)
		n += int64(len(chunk))
		if err == nil {
			if fr.end(chunk, whole) {
				break
			}
			whole = true
		} else if err == bufio.ErrBufferFull {
			whole = false
		} else {
			fr.err = err
			fr.release()
			break
		}
		chunk, err = fr.r.ReadSlice('\n')
	}
	fr.out = fr.replace(&f, n)
}

// newLineLimiter limits the newline-delimited JSON of a stdio upstream.
func newLineLimiter(r io.Reader, limit int, log *slog.Logger) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), limit: limit,
		end: func([]byte, bool) bool { return true }, // every newline ends a message
		replace: func(f *frameScan, n int64) []byte {
			return replacement(f, n, limit, log, "\n")
		}}
}

// replacement is the frame that stands for an oversized one: a JSON-RPC
// error for a response (so its caller hears at once), nothing otherwise.
func replacement(f *frameScan, n int64, limit int, log *slog.Logger, wrap string) []byte {
	id := f.responseID()
	log.Warn("upstream message over the limit discarded unread", "bytes", n, "limit", limit, "response", id != nil)
	if id == nil {
		return nil
	}
	if wrap == "\n" {
		return append(tooLargeReply(id), '\n')
	}
	return fmt.Appendf(nil, "event: message\ndata: %s\n\n", tooLargeReply(id))
}

// isBlankLine reports an SSE event's end: an empty line.
func isBlankLine(line []byte) bool {
	return len(line) == 1 && line[0] == '\n' || len(line) == 2 && line[0] == '\r' && line[1] == '\n'
}

// maxErrorBody bounds the body of a non-2xx answer that is read (for a
// JSON-RPC error in it): room for any JSON-RPC error, far less than a
// message.
const maxErrorBody = 64 << 10

// limitRoundTripper applies the message limit to the HTTP responses of
// go-sdk's legacy SSE client (the event stream: a message per event; a
// JSON body: one message). Streamable HTTP reads through the same
// frameReader in its own connection (streamhttp.go).
type limitRoundTripper struct {
	base  http.RoundTripper
	limit int
	log   *slog.Logger
}

func (rt *limitRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// go-sdk reads an error answer's body whole (for a JSON-RPC error
		// in it): it gets at most maxErrorBody, cut short rather than
		// replaced, so a body over it is no error it can decode.
		resp.Body = &limitedBody{Reader: io.LimitReader(resp.Body, int64(min(rt.limit, maxErrorBody))), Closer: resp.Body}
		return resp, nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream":
		br, pooled := pooledReader(resp.Body), true
		if longLivedStream(r) {
			// An idle stream would pin a pooled 64 KiB buffer for the
			// session's life (per-user sessions: 1,000s of them): it gets a
			// small one of its own, and longer lines are joined in buf.
			br, pooled = bufio.NewReaderSize(resp.Body, streamReaderSize), false
		}
		resp.Body = &frameReader{r: br, pooled: pooled, body: resp.Body, limit: rt.limit,
			end: func(line []byte, whole bool) bool { return whole && isBlankLine(line) },
			replace: func(f *frameScan, n int64) []byte {
				return replacement(f, n, rt.limit, rt.log, "sse")
			}}
		// The events are re-framed: a length no longer applies.
		resp.ContentLength = -1
	case "application/json":
		if resp.ContentLength > int64(rt.limit) {
			// Known too large before a byte is read.
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(rt.jsonReplacement(r, resp.ContentLength)))
			resp.ContentLength = -1
			return resp, nil
		}
		if resp.ContentLength >= 0 {
			// Known within the limit (net/http reads no more than a
			// Content-Length): go-sdk reads it as it is, without a second
			// buffer of ours on every call.
			return resp, nil
		}
		body := resp.Body
		resp.Body = &frameReader{r: pooledReader(body), pooled: true, body: body, limit: rt.limit,
			end:            func([]byte, bool) bool { return false }, // the body is one message
			stopAtOverflow: true,
			replace: func(_ *frameScan, n int64) []byte {
				// The answer to this request: its id is the request's.
				return rt.jsonReplacement(r, n)
			}}
		resp.ContentLength = -1
	}
	return resp, nil
}

// limitedBody is a response body read through a limit and closed whole.
type limitedBody struct {
	io.Reader
	io.Closer
}

// jsonReplacement stands for an oversized JSON response body to request r.
func (rt *limitRoundTripper) jsonReplacement(r *http.Request, n int64) []byte {
	rt.log.Warn("upstream message over the limit discarded unread", "bytes", n, "limit", rt.limit, "response", true)
	id := requestID(r)
	if id == nil {
		return nil
	}
	return tooLargeReply(id)
}

// requestID is the JSON-RPC id of the request r carries, or nil.
func requestID(r *http.Request) json.RawMessage {
	if r.GetBody == nil {
		return nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.NewDecoder(body).Decode(&m) != nil || len(m.ID) == 0 || len(m.ID) > maxIDBytes || strings.TrimSpace(string(m.ID)) == "null" {
		return nil
	}
	return m.ID
}
