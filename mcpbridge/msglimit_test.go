package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// skipMark stands for a skipped frame in the frameReader tests.
const skipMark = "#SKIPPED#\n"

// testLineReader is a stdio frameReader over r whose replacement for an
// oversized line is skipMark, so a test sees where each one was.
func testLineReader(r io.Reader, limit, bufSize int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, bufSize), limit: limit,
		end:     func([]byte, bool) bool { return true },
		replace: func(*frameScan, int64) []byte { return []byte(skipMark) }}
}

// referenceLines is what a line limiter must make of in: every line (with
// its newline) of at most limit bytes as it is, every longer one as
// skipMark; a last line without a newline is passed on if it fits.
func referenceLines(in []byte, limit int) string {
	var out strings.Builder
	for len(in) > 0 {
		i := bytes.IndexByte(in, '\n')
		line := in
		if i >= 0 {
			line = in[:i+1]
		}
		if len(line) > limit {
			out.WriteString(skipMark)
		} else {
			out.Write(line)
		}
		in = in[len(line):]
	}
	return out.String()
}

// TestFrameReaderLines: lines split across reads, CRLF, an oversized line
// followed at once by a normal one, lines exactly at and one past the
// limit (the limit counts the line's terminator), and a last line without
// its newline.
func TestFrameReaderLines(t *testing.T) {
	t.Parallel()
	const limit = 10
	for _, c := range []struct{ name, in string }{
		{"short lines", "{\"a\":1}\n{}\n"},
		{"crlf", "{\"a\":1}\r\n{}\r\n"},
		{"exactly the limit", "123456789\n"},
		{"one over the limit", "1234567890\nok\n"},
		{"oversized then normal", strings.Repeat("x", 100) + "\n{}\n" + strings.Repeat("y", 11) + "\n[1]\n"},
		{"no final newline", "ab\ncd"},
		{"oversized without final newline", "ab\n" + strings.Repeat("z", 30)},
		{"blank lines", "\n\n{}\n\n"},
	} {
		for _, bufSize := range []int{16, 64 << 10} { // 16: lines longer than bufio's buffer
			got, err := io.ReadAll(testLineReader(iotest.OneByteReader(strings.NewReader(c.in)), limit, bufSize))
			if err != nil {
				t.Fatalf("%s: ReadAll: %v", c.name, err)
			}
			if want := referenceLines([]byte(c.in), limit); string(got) != want {
				t.Errorf("%s (buffer %d): frameReader gave %q, want %q", c.name, bufSize, got, want)
			}
		}
	}
}

// FuzzFrameReader compares the line limiter with a reference split of
// newline-delimited input, reading it in pieces of every size, and checks
// that the frame buffer never outgrows the limit.
func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n{\"id\":2}\r\n"), uint8(8), uint8(3), uint8(16))
	f.Add([]byte(strings.Repeat("a", 40)+"\nb\n"), uint8(10), uint8(7), uint8(16))
	f.Add([]byte("\n\n\nxyz"), uint8(1), uint8(1), uint8(16))
	f.Fuzz(func(t *testing.T, in []byte, limit, piece, bufSize uint8) {
		lim := int(limit%64) + 1
		size := int(bufSize%64) + 16 // bufio's minimum
		r := io.Reader(bytes.NewReader(in))
		if p := int(piece%16) + 1; p > 1 {
			r = &chunkReader{b: in, n: p}
		} else {
			r = iotest.OneByteReader(r)
		}
		fr := testLineReader(r, lim, size)
		var got bytes.Buffer
		p := make([]byte, 5)
		for {
			n, err := fr.Read(p)
			got.Write(p[:n])
			if cap(fr.buf) > 2*lim+size {
				t.Fatalf("frame buffer capacity %d with a %d-byte limit", cap(fr.buf), lim)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
		}
		if want := referenceLines(in, lim); got.String() != want {
			t.Fatalf("frameReader(%q, limit %d) = %q, want %q", in, lim, got.String(), want)
		}
	})
}

// chunkReader reads b n bytes at a time.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[n:]
	return n, nil
}

// sseReader is limitRoundTripper's event-stream frameReader over s.
func sseReader(s string, limit, bufSize int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(s)), bufSize), limit: limit,
		end: func(line []byte, whole bool) bool { return whole && isBlankLine(line) },
		replace: func(f *frameScan, n int64) []byte {
			return replacement(f, n, limit, slog.New(slog.DiscardHandler), "sse")
		}}
}

// TestFrameReaderSSE: events with several data lines, CRLF, an oversized
// event replaced by an error for its id, and the event after it intact;
// a line longer than the reader's buffer whose last piece is only its
// newline is not taken for the blank line that ends the event.
func TestFrameReaderSSE(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 100)
	for _, c := range []struct {
		name, in, want string
		limit, bufSize int
	}{
		{name: "multi-line data", limit: 200, bufSize: 64,
			in:   "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":3,\"result\":{}}\r\n\r\n",
			want: "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":3,\"result\":{}}\r\n\r\n"},
		{name: "oversized, then a normal one", limit: 80, bufSize: 64,
			in: "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"t\":\"" + big + "\"}}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n",
			want: "event: message\ndata: " + string(tooLargeReply([]byte(`"a"`))) + "\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n"},
		{
			// The first data line fills the limit but for 16 bytes; the
			// second is exactly one bufio buffer (16 bytes) long, so its
			// newline comes alone in the read that overflows.
			name: "overflow on a line's lone newline", limit: 60, bufSize: 16,
			in: "data: {\"id\":5,\"result\":\"" + strings.Repeat("y", 44-27) + "\",\n" + // 44 bytes
				"data: \"p\":\"zzz\",\n" + // 16 bytes and its newline

				"data: \"tail\":1}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n\n",
			want: "event: message\ndata: " + string(tooLargeReply([]byte(`5`))) + "\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n\n",
		},
	} {
		got, err := io.ReadAll(sseReader(c.in, c.limit, c.bufSize))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestFrameScanEdges: ids as strings with escapes, objects and negative
// numbers; a batch (no single id: nothing to answer); an "id" key inside
// a nested object, or spelled with an escape, before the top-level one.
func TestFrameScanEdges(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ msg, want string }{
		{`{"id":"a\"b","result":1}`, `"a\"b"`},
		{`{"id":-3,"error":{"code":1}}`, `-3`},
		{`{"params":{"id":1,"x":[{"id":2}]},"result":{"id":8},"id":9}`, `9`},
		{`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`, ``},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`, `null`},
		{"{\r\n \"id\" :\t 4 ,\r\n \"result\" : {}\r\n}", `4`},
	} {
		var f frameScan
		f.feed([]byte(c.msg))
		if got := string(f.responseID()); got != c.want {
			t.Errorf("responseID(%s) = %q, want %q", c.msg, got, c.want)
		}
	}
}

// TestStdioMultiLineValueIsBounded: a JSON value spread over many short
// lines, none of them over the limit, must not be buffered past the limit
// above the line limiter: the connection fails rather than holding it
// (stdioConn takes one value per line, so it fails at the first line).
func TestStdioMultiLineValueIsBounded(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	pr, pw := io.Pipe()
	t.Cleanup(func() { pr.Close() })
	conn, err := limitedStdio(pr, nopWriteCloser{io.Discard}, limit, slog.New(slog.DiscardHandler)).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		w := bufio.NewWriter(pw)
		w.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"a":[` + "\n")
		for range 20 * limit / 4 { // 20 times the limit in 4-byte lines
			if _, err := w.WriteString("11,\n"); err != nil {
				return
			}
		}
		w.WriteString("1]}}\n")
		w.Flush()
		pw.Close()
	}()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	msg, err := conn.Read(ctx)
	if err == nil {
		if r, ok := msg.(*jsonrpc.Response); ok {
			t.Fatalf("Read = a response of %d bytes, want an error past the %d-byte limit", len(r.Result), limit)
		}
		t.Fatalf("Read = %T, want an error past the %d-byte limit", msg, limit)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read: %v", err)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

var _ mcp.Transport = (*mcp.IOTransport)(nil)

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestLimitRoundTripperErrorBodies: go-sdk reads a non-2xx answer's body
// whole to look for a JSON-RPC error in it; whatever the status and
// content type, no body reaches it past the limit.
func TestLimitRoundTripperErrorBodies(t *testing.T) {
	t.Parallel()
	const limit = 1 << 10
	for _, c := range []struct {
		status int
		ct     string
	}{{400, "application/json"}, {500, "text/plain"}, {404, ""}, {200, "application/json"}} {
		rt := &limitRoundTripper{limit: limit, log: slog.New(slog.DiscardHandler),
			base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				h := http.Header{}
				if c.ct != "" {
					h.Set("Content-Type", c.ct)
				}
				return &http.Response{StatusCode: c.status, Header: h, ContentLength: -1, Request: r,
					Body: io.NopCloser(io.LimitReader(zeros{}, 100*limit))}, nil
			})}
		req, _ := http.NewRequest(http.MethodPost, "http://h/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
		req.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)), nil
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(body) > limit {
			t.Errorf("HTTP %d %q: %d bytes of body read, want at most the %d-byte limit", c.status, c.ct, len(body), limit)
		}
	}
}

// zeros reads as endless '0's.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// TestLimitRoundTripperLongLivedStreams: the standalone GET stream and a
// 2026-07-28 subscriptions/listen stream read through a small buffer of
// their own (an idle stream pins no pooled 64 KiB buffer); events longer
// than it arrive whole, and one over the limit is still replaced.
func TestLimitRoundTripperLongLivedStreams(t *testing.T) {
	t.Parallel()
	const limit = 16 << 10
	long := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("z", 5*streamReaderSize) + `"}}`
	huge := `{"jsonrpc":"2.0","id":"h","result":{"t":"` + strings.Repeat("q", 2*limit) + `"}}`
	in := "data: " + long + "\n\n" + "data: " + huge + "\n\n" + "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n"
	want := "data: " + long + "\n\n" + "event: message\ndata: " + string(tooLargeReply([]byte(`"h"`))) + "\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n"
	rt := &limitRoundTripper{limit: limit, log: slog.New(slog.DiscardHandler),
		base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			h := http.Header{}
			h.Set("Content-Type", "text/event-stream")
			return &http.Response{StatusCode: 200, Header: h, ContentLength: -1, Request: r, Body: io.NopCloser(strings.NewReader(in))}, nil
		})}
	get, _ := http.NewRequest(http.MethodGet, "http://h/mcp", nil)
	listen, _ := http.NewRequest(http.MethodPost, "http://h/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"}`))
	listen.Header.Set("Mcp-Method", "subscriptions/listen")
	call, _ := http.NewRequest(http.MethodPost, "http://h/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
	for _, c := range []struct {
		name     string
		req      *http.Request
		longLive bool
	}{{"standalone GET", get, true}, {"subscriptions/listen", listen, true}, {"tools/call", call, false}} {
		resp, err := rt.RoundTrip(c.req)
		if err != nil {
			t.Fatal(err)
		}
		fr := resp.Body.(*frameReader)
		if fr.pooled == c.longLive || (c.longLive && fr.r.Size() != streamReaderSize) {
			t.Errorf("%s: pooled %v, buffer %d bytes; want pooled %v", c.name, fr.pooled, fr.r.Size(), !c.longLive)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != want {
			t.Errorf("%s: read %d bytes, want %d:\n got %.200q", c.name, len(got), len(want), got)
		}
	}
}
