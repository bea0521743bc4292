package mcpbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// toolsvc's own stdio connection: newline-delimited JSON-RPC over a child's
// stdout and stdin, each line decoded once, straight from the line
// limiter's buffer.
//
// go-sdk v1.8.0's IOTransport decodes every incoming line three times, and
// unpatched each decode goes through its internal json.Unmarshal, which
// builds a streaming segmentio decoder over a bytes.Reader whose first
// read allocates a 32 KiB buffer (docs/go-sdk-decode-garbage.md; toolsvc
// carries a patch for that, third_party/go-sdk): the read loop's stream
// decoder copies the line out, mcp.readBatch first tries it as a batch
// (32 KiB, then fails), then jsonrpc2.DecodeMessage decodes it (32 KiB).
// Here a line costs one copy of itself (the message's params or
// result alias it; go-sdk keeps them past the next read) and a
// segmentio.Parse over that copy, with go-sdk's own decoding rules (exact
// key matching, numbers as float64 ids, the version tag checked).
//
// Writes encode a request's envelope by hand into a buffer reused under
// the write lock (params are go-sdk's already-marshalled JSON); anything
// else goes through jsonrpc.EncodeMessage, as go-sdk does.
//
// What differs from go-sdk's IOTransport, on purpose:
//   - a JSON value must be one line (the MCP stdio framing: "messages are
//     delimited by newlines, and MUST NOT contain embedded newlines");
//     go-sdk's stream decoder also took a value spread over several lines;
//     here such a line is malformed and ends the session, as malformed
//     JSON did there. Blank lines are skipped, as go-sdk's decoder did.
//   - a batch (a JSON array, before 2025-06-18) is decoded and its
//     messages delivered in order, as go-sdk does; answers to requests in
//     it go back one by one, not as one batch array.
//
// The line limiter (msglimit.go) stays in front: a line over the message
// limit never reaches the decoder.

// stdioTransport is toolsvc's newline-delimited JSON transport over a
// reader (a child's stdout) and a writer (its stdin). Close closes the
// writer (childStdin: the MCP shutdown sequence), then the reader.
type stdioTransport struct {
	r     io.ReadCloser
	w     io.WriteCloser
	limit int
	log   *slog.Logger
	// absorb, when set, is asked about every plain list_changed
	// notification read (plainListChanged); true takes it off the
	// connection (stdioConn.absorb).
	absorb func() bool
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	return &stdioConn{lines: newLineLimiter(t.r, t.limit, t.log), r: t.r, w: t.w, absorb: t.absorb}, nil
}

// stdioConn is a stdioTransport's connection. Read reads and decodes on
// the calling goroutine, go-sdk's one reader per session (jsonrpc2's
// readIncoming): go-sdk's IOTransport reads on a goroutine of its own and
// hands each message over a channel, one more wake-up per message. Close
// unblocks a Read waiting for input by closing the reader (a child's
// stdout pipe, which the runtime poller interrupts).
type stdioConn struct {
	lines *frameReader // Read only
	queue []jsonrpc.Message
	r     io.Closer
	w     io.WriteCloser
	// absorb is asked about each plain list_changed notification: true
	// means the session has noted it and a re-list that starts after it is
	// certain (session.absorbListChanged), so go-sdk need not see it. In a
	// storm of them this skips go-sdk's dispatch per message (a context,
	// two goroutines, the handler) and the refresher's wake-up per mark.
	absorb func() bool

	writeMu sync.Mutex
	wbuf    []byte // guarded by writeMu

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// readLine reads the next non-blank line and decodes its messages.
func (c *stdioConn) readLine() ([]jsonrpc.Message, error) {
	for {
		line, err := c.lines.nextFrame()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		// One copy per line: the messages alias it.
		return decodeLine(bytes.Clone(line))
	}
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.next(ctx)
		if err != nil || c.absorb == nil || !plainListChanged(m) || !c.absorb() {
			return m, err
		}
	}
}

// next is the next message read.
func (c *stdioConn) next(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.closed.Load() {
		return nil, io.EOF
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	msgs, err := c.readLine()
	if err != nil {
		if c.closed.Load() {
			return nil, io.EOF // as go-sdk's connection says once closed
		}
		return nil, err
	}
	c.queue = msgs[1:]
	return msgs[0], nil
}

// plainListChanged reports a tools, resources or prompts list_changed
// notification with no params (absent, null or {}): toolsvc handles the
// three alike (session.markDirty), so one such notification means what
// another does. One with params (say _meta) is always delivered.
func plainListChanged(m jsonrpc.Message) bool {
	req, ok := m.(*jsonrpc.Request)
	if !ok || req.IsCall() {
		return false
	}
	switch req.Method {
	case "notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed":
	default:
		return false
	}
	p := bytes.TrimSpace(req.Params)
	switch {
	case len(p) == 0, string(p) == "null":
		return true
	case len(p) >= 2 && p[0] == '{' && p[len(p)-1] == '}':
		return len(bytes.TrimSpace(p[1:len(p)-1])) == 0
	}
	return false
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	buf, err := appendMessage(c.wbuf[:0], msg)
	if err != nil {
		return err
	}
	buf = append(buf, '\n')
	_, err = c.w.Write(buf)
	if cap(buf) <= maxKeptWriteBuffer {
		c.wbuf = buf
	} else {
		c.wbuf = nil // one large request does not pin its buffer
	}
	return err
}

// maxKeptWriteBuffer is the largest write buffer a connection keeps
// between writes.
const maxKeptWriteBuffer = 64 << 10

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.closeErr = c.w.Close()
		_ = c.r.Close()
	})
	return c.closeErr
}

func (c *stdioConn) SessionID() string { return "" }

// wireMessage is a JSON-RPC message as read: go-sdk's own decode form
// (jsonrpc2.wireDecode). Method is raw so a present but empty method
// still makes a request.
type wireMessage struct {
	VersionTag string           `json:"jsonrpc"`
	ID         any              `json:"id,omitempty"`
	Method     sjson.RawMessage `json:"method"`
	Params     sjson.RawMessage `json:"params,omitempty"`
	Result     sjson.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error   `json:"error,omitempty"`
}

// parseFlags are go-sdk's decoding rules (exact key matching), and
// raw values and strings that alias the line (decodeLine's copy).
const parseFlags = sjson.DontMatchCaseInsensitiveStructFields | sjson.ZeroCopy

// decodeLine decodes one line: a message, or a batch (a JSON array) of
// them. The messages alias line.
func decodeLine(line []byte) ([]jsonrpc.Message, error) {
	if err := checkDepth(line, maxJSONDepth); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if line[0] == '[' {
		var raws []sjson.RawMessage
		if err := parseWhole(line, &raws); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
		}
		if len(raws) == 0 {
			return nil, errors.New("empty batch")
		}
		msgs := make([]jsonrpc.Message, 0, len(raws))
		for _, raw := range raws {
			m, err := decodeMessage(raw)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		}
		return msgs, nil
	}
	m, err := decodeMessage(line)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{m}, nil
}

// parseWhole parses b, which must be one JSON value (spaces around it
// allowed), into v.
func parseWhole(b []byte, v any) error {
	rest, err := sjson.Parse(b, v, parseFlags)
	if err != nil {
		return err
	}
	if rest = bytes.TrimSpace(rest); len(rest) > 0 {
		return fmt.Errorf("invalid trailing data after the JSON value: %.20q", rest)
	}
	return nil
}

// decodeMessage is jsonrpc.DecodeMessage without its per-call decoder: the
// same checks, in the same order.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := parseWhole(data, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.VersionTag, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 {
		var method string
		if err := parseWhole(w.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: nilIfEmpty(w.Params)}, nil
	}
	if !id.IsValid() {
		return nil, errInvalidRequest
	}
	resp := &jsonrpc.Response{ID: id, Result: nilIfEmpty(w.Result)}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

// errInvalidRequest is go-sdk's answer to a response without an id
// (jsonrpc2.ErrInvalidRequest, which the jsonrpc package does not export).
var errInvalidRequest = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}

func nilIfEmpty(b sjson.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// appendMessage appends msg's wire form to buf: a request's envelope by
// hand, byte for byte what jsonrpc.EncodeMessage writes for it; anything
// else (responses to the upstream's requests, unusual ids or params)
// through jsonrpc.EncodeMessage.
func appendMessage(buf []byte, msg jsonrpc.Message) ([]byte, error) {
	if req, ok := msg.(*jsonrpc.Request); ok && plainRequest(req) {
		buf = append(buf, `{"jsonrpc":"2.0"`...)
		switch id := req.ID.Raw().(type) {
		case int64:
			buf = append(buf, `,"id":`...)
			buf = strconv.AppendInt(buf, id, 10)
		case string:
			buf = append(buf, `,"id":"`...)
			buf = append(buf, id...)
			buf = append(buf, '"')
		}
		buf = append(buf, `,"method":"`...)
		buf = append(buf, req.Method...)
		buf = append(buf, '"')
		if len(req.Params) > 0 {
			buf = append(buf, `,"params":`...)
			buf = append(buf, req.Params...)
		}
		return append(buf, '}'), nil
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return buf, err
	}
	return append(buf, data...), nil
}

// plainRequest reports a request appendMessage can write by hand: a
// non-empty method and a string id that need no JSON escaping, params
// that are one compact line (go-sdk marshals them so; anything else, say
// a caller's raw JSON with newlines, is left to EncodeMessage, which
// compacts it).
func plainRequest(req *jsonrpc.Request) bool {
	if req.Method == "" || !plainString(req.Method) {
		return false
	}
	switch id := req.ID.Raw().(type) {
	case nil, int64:
	case string:
		if !plainString(id) {
			return false
		}
	default:
		return false
	}
	p := req.Params
	if len(p) > 0 && (p[0] != '{' && p[0] != '[' || bytes.IndexByte(p, '\n') >= 0 || bytes.IndexByte(p, '\r') >= 0) {
		return false
	}
	return true
}

// plainString reports a string of printable ASCII without '"' or '\\',
// which JSON writes as it is (go-sdk's encoder does not escape HTML).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// maxJSONDepth is go-sdk's bound on the nesting of a JSON value it decodes
// (internal/json: "far more than any legitimate message requires while
// keeping worst-case parse cost bounded").
const maxJSONDepth = 1000

// checkDepth reports an error when data nests objects and arrays deeper
// than max, as go-sdk checks before every decode: a line of 16 MiB of '['
// must not become a deep recursion in the parser.
func checkDepth(data []byte, max int) error {
	depth, inStr, esc := 0, false, false
	for _, c := range data {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			if depth++; depth > max {
				return fmt.Errorf("json: exceeded maximum nesting depth of %d", max)
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
