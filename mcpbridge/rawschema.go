package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// go-sdk decodes a tool's inputSchema and outputSchema into map[string]any
// with float64 numbers: 10 and 10.0 become the same value and integers
// beyond 2^53 are rounded. The catalog keeps each schema's JSON text as the
// upstream sent it (Tool.InputSchemaJSON), so the transport is wrapped: it
// remembers the raw schemas of every tools/list result it reads, and the
// refresher swaps them in for the decoded values (rawSchemas.attach).

// rawSchema is one tool's schemas as the upstream sent them.
type rawSchema struct {
	in, out json.RawMessage
}

// rawSchemas holds the raw schemas of the tools/list results a session has
// read and not yet attached, by tool name (the latest wins).
type rawSchemas struct {
	mu     sync.Mutex
	byName map[string]rawSchema
	// support is each listed tool's execution.taskSupport (2025-11-25
	// tasks; go-sdk's Tool has no execution), by name, as last listed.
	support map[string]string
	// verified is each tool's schemas as attach last checked them (text
	// and object), by name: a listing that sends the same text again is
	// checked against that object without decoding the text. Kept to the
	// names of the last complete listing (keep).
	verified map[string]verifiedSchemas
}

// verifiedSchemas are one tool's checked schemas (a zero decodedSchema:
// none).
type verifiedSchemas struct{ in, out decodedSchema }

// rawTransport wraps a transport so that its connection records raw
// schemas into r.
type rawTransport struct {
	mcp.Transport
	r *rawSchemas
}

func (t *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rawConn{Connection: c, r: t.r}, nil
}

type rawConn struct {
	mcp.Connection
	r *rawSchemas
}

var inputSchemaKey = []byte(`"inputSchema"`)

func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); ok && err == nil && bytes.Contains(resp.Result, inputSchemaKey) {
		c.r.record(resp.Result)
	}
	return m, err
}

// record remembers the raw schemas of a result that has a tools array.
// Anything else (or anything malformed: go-sdk reports that) is ignored.
func (r *rawSchemas) record(result json.RawMessage) {
	var res struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
			Execution    struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	// go-sdk's own decoder and key matching (its internal/json): raw
	// values are copies, so nothing here aliases result.
	if _, err := sjson.Parse(result, &res, sjson.DontMatchCaseInsensitiveStructFields); err != nil || len(res.Tools) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = make(map[string]rawSchema, len(res.Tools))
	}
	for _, t := range res.Tools {
		r.byName[t.Name] = rawSchema{in: t.InputSchema, out: t.OutputSchema}
		if ts := t.Execution.TaskSupport; ts != "" || r.support[t.Name] != "" {
			if r.support == nil {
				r.support = map[string]string{}
			}
			r.support[t.Name] = ts
		}
	}
}

// taskSupport is the execution.taskSupport last listed for each of tools
// that has one (nil if none does): TaskSupportOptional,
// TaskSupportRequired or TaskSupportForbidden; anything else is dropped.
func (r *rawSchemas) taskSupport(tools []*mcp.Tool) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out map[string]string
	for _, t := range tools {
		if t == nil {
			continue
		}
		switch ts := r.support[t.Name]; ts {
		case TaskSupportOptional, TaskSupportRequired, TaskSupportForbidden:
			if out == nil {
				out = map[string]string{}
			}
			out[t.Name] = ts
		}
	}
	return out
}

// attach returns tools with each schema replaced by its raw JSON
// (decodedSchema) where one was recorded and decodes to exactly the value
// go-sdk decoded (so a result read for another request cannot be mixed
// in). The tools themselves are not modified (go-sdk may cache them):
// changed ones are copies. Recorded entries are consumed.
func (r *rawSchemas) attach(tools []*mcp.Tool) []*mcp.Tool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := tools
	for i, t := range tools {
		if t == nil {
			continue
		}
		raw, ok := r.byName[t.Name]
		if !ok {
			continue
		}
		delete(r.byName, t.Name)
		last := r.verified[t.Name]
		in, inOK := sameJSONAs(raw.in, t.InputSchema, last.in)
		outS, outOK := sameJSONAs(raw.out, t.OutputSchema, last.out)
		if r.verified == nil {
			r.verified = map[string]verifiedSchemas{}
		}
		r.verified[t.Name] = verifiedSchemas{in: in, out: outS}
		if !inOK && !outOK {
			continue
		}
		c := *t
		if inOK {
			c.InputSchema = in
		}
		if outOK {
			c.OutputSchema = outS
		}
		if &out[0] == &tools[0] {
			out = append([]*mcp.Tool(nil), tools...)
		}
		out[i] = &c
	}
	return out
}

// keep forgets the checked schemas of every tool not in tools (the last
// complete listing).
func (r *rawSchemas) keep(tools []*mcp.Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.verified) == 0 {
		return
	}
	listed := make(map[string]bool, len(tools))
	for _, t := range tools {
		if t != nil {
			listed[t.Name] = true
		}
	}
	for name := range r.verified {
		if !listed[name] {
			delete(r.verified, name)
		}
	}
}

// sameJSONAs is sameJSON with the schema last checked for the same tool:
// when raw is that schema's very text, its object (the text's value) is
// compared with decoded, and the text is not decoded again.
func sameJSONAs(raw json.RawMessage, decoded any, last decodedSchema) (decodedSchema, bool) {
	if len(raw) > 0 && decoded != nil && last.text != nil && bytes.Equal(raw, last.text) {
		if reflect.DeepEqual(last.obj, decoded) {
			return last, true
		}
		return decodedSchema{}, false // the same text never decodes to another value
	}
	return sameJSON(raw, decoded)
}

// sameJSON returns raw, with the value it decodes to, if it is present
// and decodes to decoded.
func sameJSON(raw json.RawMessage, decoded any) (decodedSchema, bool) {
	if len(raw) == 0 || decoded == nil {
		return decodedSchema{}, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil || !reflect.DeepEqual(v, decoded) {
		return decodedSchema{}, false
	}
	return decodedSchema{text: raw, obj: v}, true
}

// decodedSchema is a schema as the upstream sent it (text) with the value
// it decodes to (obj: decoded here by encoding/json, found equal to what
// go-sdk decoded; read-only once attached: the catalog's snapshots and the
// next listing's check share it, as catalog snapshots share unchanged
// schemas), which attach puts in a
// tool's InputSchema or OutputSchema: the catalog keeps the text and the
// object (schemaObject) without decoding the text a third time. It
// encodes to JSON as its text.
type decodedSchema struct {
	text json.RawMessage
	obj  any
}

func (d decodedSchema) MarshalJSON() ([]byte, error) { return d.text, nil }

// SchemaText gives the catalog the text and its decoded value
// (catalog.RawSchema).
func (d decodedSchema) SchemaText() (json.RawMessage, any) { return d.text, d.obj }

// rawRoundTripper records the raw schemas of the tools/list responses of a
// streamable HTTP session (whose connection cannot be wrapped, see
// withRawSchemas): it follows the response body of every tools/list POST,
// JSON or SSE, and records the result when its bytes pass, before go-sdk
// can have decoded it.
type rawRoundTripper struct {
	base http.RoundTripper
	r    *rawSchemas
}

func (rt *rawRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.GetBody == nil || !isToolsList(req) {
		return rt.base.RoundTrip(req)
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Body == nil {
		return resp, err
	}
	resp.Body = &rawTee{ReadCloser: resp.Body, keep: inputSchemaKey, record: rt.r.record,
		sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	return resp, nil
}

// isToolsList reports whether a POST carries a tools/list request.
func isToolsList(req *http.Request) bool { return isPostOf(req, "tools/list") }

// isPostOf reports whether a POST carries a request of method (a small
// one: the body is read up to 64 KiB).
func isPostOf(req *http.Request, method string) bool {
	if req.GetBody == nil {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, 64<<10))
	if err != nil || !bytes.Contains(data, []byte(`"`+method+`"`)) {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return false
	}
	r, ok := msg.(*jsonrpc.Request)
	return ok && r.Method == method
}

// rawTeeMax bounds what one response may buffer; a larger tools/list
// result keeps go-sdk's decoded schemas.
const rawTeeMax = 64 << 20

// rawTee passes a response body through, keeping a copy: an SSE stream's
// events are recorded as each completes, a JSON body at its end. Each
// JSON-RPC response whose text contains keep (nil: any) goes to record.
type rawTee struct {
	io.ReadCloser
	keep   []byte
	record func(json.RawMessage)
	sse    bool
	buf    []byte
	done   bool
}

func (t *rawTee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if !t.done && n > 0 {
		if len(t.buf)+n > rawTeeMax {
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

func (t *rawTee) Close() error {
	if !t.done {
		t.finish()
	}
	return t.ReadCloser.Close()
}

func (t *rawTee) finish() {
	if !t.sse {
		t.message(t.buf)
	}
	t.done, t.buf = true, nil
}

// events records every complete SSE event in the buffer and keeps the
// rest.
func (t *rawTee) events() {
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

func (t *rawTee) message(data []byte) {
	if t.keep != nil && !bytes.Contains(data, t.keep) {
		return
	}
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		if resp, ok := msg.(*jsonrpc.Response); ok {
			t.record(resp.Result)
		}
	}
}
