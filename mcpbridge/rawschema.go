package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// go-sdk decodes a tool's inputSchema and outputSchema into map[string]any
// with float64 numbers: 10 and 10.0 become the same value and integers
// beyond 2^53 are rounded. The catalog keeps each schema's JSON text as the
// upstream sent it (Tool.InputSchemaJSON), so the bridge lists tools under
// mcp.WithRawToolSchemas (a go-sdk patch): each listed schema comes as the
// text the upstream sent, scanned and copied but not decoded. attach
// decodes a schema once, when its text differs from the one last listed
// for the tool; an unchanged schema (most of a re-list: a storm's 50,000
// tools) is compared as text and shares the object decoded before
// (docs/architecture.md, "Schemas as text through a re-list").

// rawSchemas is a session's record of its listed tools' schemas and task
// support.
type rawSchemas struct {
	mu sync.Mutex
	// support is each listed tool's execution.taskSupport (2025-11-25
	// tasks; go-sdk's Tool has no execution), by name, as last listed.
	support map[string]string
	// required names the tools of a 2026-07-28 session that refused a
	// plain call for want of the tasks extension (learnRequired): the
	// listing cannot say so. Kept to the last complete listing (keep).
	required map[string]bool
	// verified is each tool's schemas as attach last took them in (text
	// and object), by name: a listing that sends the same text again
	// shares that object without decoding the text. Kept to the names of
	// the last complete listing (keep).
	verified map[string]verifiedSchemas
}

// verifiedSchemas are one tool's checked schemas (a zero decodedSchema:
// none).
type verifiedSchemas struct{ in, out decodedSchema }

// rawSchemas is a session's tap (tap.go) for the tools' task support,
// which go-sdk's Tool does not carry: it reads it from every result that
// has a tools array, before go-sdk decodes it.
var _ tap = (*rawSchemas)(nil)

var (
	inputSchemaKey = []byte(`"inputSchema"`)
	taskSupportKey = []byte(`taskSupport`)
	unicodeEscape  = []byte(`\u`)
)

func (r *rawSchemas) wrote(context.Context, jsonrpc.Message) jsonrpc.Message { return nil }

func (r *rawSchemas) unsent(jsonrpc.Message) {}

func (r *rawSchemas) read(m jsonrpc.Message, _ *msgOrigin) {
	if resp, ok := m.(*jsonrpc.Response); ok && resp.Error == nil && bytes.Contains(resp.Result, inputSchemaKey) {
		r.record(resp.Result)
	}
}

// record remembers the task support of the tools of a result that has a
// tools array. Anything else (or anything malformed: go-sdk reports that)
// is ignored. A result that cannot name a task support (no such bytes,
// nor a \u escape that could spell them) is not parsed while no tool has
// one recorded: most upstreams' listings, whose schemas are then read
// once, by go-sdk.
func (r *rawSchemas) record(result json.RawMessage) {
	r.mu.Lock()
	none := len(r.support) == 0
	r.mu.Unlock()
	if none && !bytes.Contains(result, taskSupportKey) && !bytes.Contains(result, unicodeEscape) {
		return
	}
	var res struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	// go-sdk's own decoder and key matching (its internal/json).
	if _, err := sjson.Parse(result, &res, sjson.DontMatchCaseInsensitiveStructFields); err != nil || len(res.Tools) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range res.Tools {
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

// taskSupport is each listed tool's task support for the catalog
// (Tool.TaskSupport). A 2025-11-25 session's comes from the listing
// (execution.taskSupport). A 2026-07-28 tools/list carries none: under the
// tasks extension the client opts in per request and the tool decides
// (fastmcp-tasks lists a mode "required" tool exactly like a plain one), so
// every tool of a session that runs the extension is TaskSupportOptional:
// a task may be asked for, and the upstream answers a task or a result.
// Without it a caller reading the catalog would never ask for a task of a
// tool that only runs as one, and its plain call is refused (-32021). A
// value the upstream does list is kept.
func (s *session) taskSupport(tools []*mcp.Tool) map[string]string {
	listed := s.raw.taskSupport(tools)
	if era, _ := s.tasks.current(); era != TaskEra2026 {
		return listed
	}
	out := make(map[string]string, len(tools))
	for _, t := range tools {
		if t != nil {
			out[t.Name] = TaskSupportOptional
		}
	}
	for name, ts := range listed {
		out[name] = ts
	}
	s.raw.mu.Lock()
	for name := range s.raw.required {
		if _, ok := out[name]; ok {
			out[name] = TaskSupportRequired
		}
	}
	s.raw.mu.Unlock()
	return out
}

// learnRequired records that tool refused a plain call for want of the
// tasks extension, reporting whether that is news (the catalog then needs
// a new listing to say "required").
func (r *rawSchemas) learnRequired(tool string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.required[tool] {
		return false
	}
	if r.required == nil {
		r.required = map[string]bool{}
	}
	r.required[tool] = true
	return true
}

// codeMissingCapability is the 2026-07-28 JSON-RPC error a server answers
// a request that lacks a capability it requires of the client; its data's
// requiredCapabilities names what was missing.
const codeMissingCapability = -32021

// needsTasksExtension reports whether err is the upstream's answer that a
// call needs the tasks extension: -32021 whose
// data.requiredCapabilities.extensions names it (fastmcp-tasks' answer to
// a plain call of a mode "required" tool).
func needsTasksExtension(err error) bool {
	werr, ok := answered(err)
	if !ok || werr.Code != codeMissingCapability || len(werr.Data) == 0 {
		return false
	}
	var data struct {
		RequiredCapabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"requiredCapabilities"`
	}
	if json.Unmarshal(werr.Data, &data) != nil {
		return false
	}
	_, ok = data.RequiredCapabilities.Extensions[TasksExtension]
	return ok
}

// attach returns tools with each schema listed as text (json.RawMessage,
// mcp.WithRawToolSchemas) replaced by a decodedSchema: the text with the
// value it decodes to, decoded here unless it is the text last listed for
// the tool (then that object is shared). A schema that is not text (none,
// or a listing made without the option) is left as it is. The tools
// themselves are not modified (go-sdk may cache them): changed ones are
// copies.
func (r *rawSchemas) attach(tools []*mcp.Tool) []*mcp.Tool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := tools
	for i, t := range tools {
		if t == nil {
			continue
		}
		last := r.verified[t.Name]
		in, inOK := schemaFromText(t.InputSchema, last.in)
		outS, outOK := schemaFromText(t.OutputSchema, last.out)
		if !inOK && !outOK {
			delete(r.verified, t.Name)
			continue
		}
		if r.verified == nil {
			r.verified = map[string]verifiedSchemas{}
		}
		r.verified[t.Name] = verifiedSchemas{in: in, out: outS}
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
	if len(r.verified) == 0 && len(r.required) == 0 {
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
	for name := range r.required {
		if !listed[name] {
			delete(r.required, name)
		}
	}
}

// schemaFromText returns v, a schema listed as text, with the value it
// decodes to: last itself when v is last's very text (not decoded again),
// else decoded now. It reports false for a v that is not text (nothing
// listed, or a value go-sdk decoded) or does not decode (go-sdk's decoder
// read it as one JSON value; encoding/json, which the catalog's objects
// have always come from, is stricter about invalid UTF-8 only in what it
// replaces, never in what it refuses).
func schemaFromText(v any, last decodedSchema) (decodedSchema, bool) {
	raw, ok := v.(json.RawMessage)
	if !ok || len(raw) == 0 {
		return decodedSchema{}, false
	}
	if last.text != nil && bytes.Equal(raw, last.text) {
		return last, true
	}
	var obj any
	if json.Unmarshal(raw, &obj) != nil {
		return decodedSchema{}, false
	}
	return decodedSchema{text: raw, obj: obj}, true
}

// decodedSchema is a schema as the upstream sent it (text) with the value
// it decodes to (obj: decoded here by encoding/json; read-only once
// attached: the catalog's snapshots and the next listing's check share it,
// as catalog snapshots share unchanged schemas), which attach puts in a
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

// inputSchema is the input schema text of the tool last listed as name
// (nil if none).
func (r *rawSchemas) inputSchema(name string) json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.verified[name].in.text
}
