package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
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
	// required names the tools of a 2026-07-28 session that refused a
	// plain call for want of the tasks extension (learnRequired): the
	// listing cannot say so. Kept to the last complete listing (keep).
	required map[string]bool
	// verified is each tool's schemas as attach last checked them (text
	// and object), by name: a listing that sends the same text again is
	// checked against that object without decoding the text. Kept to the
	// names of the last complete listing (keep).
	verified map[string]verifiedSchemas
}

// verifiedSchemas are one tool's checked schemas (a zero decodedSchema:
// none).
type verifiedSchemas struct{ in, out decodedSchema }

// rawSchemas is a session's tap (tap.go) for the exact schema text: it
// records the raw schemas of every result that has a tools array, before
// go-sdk decodes it.
var _ tap = (*rawSchemas)(nil)

var inputSchemaKey = []byte(`"inputSchema"`)

func (r *rawSchemas) wrote(context.Context, jsonrpc.Message) jsonrpc.Message { return nil }

func (r *rawSchemas) unsent(jsonrpc.Message) {}

func (r *rawSchemas) read(m jsonrpc.Message, _ *msgOrigin) {
	if resp, ok := m.(*jsonrpc.Response); ok && resp.Error == nil && bytes.Contains(resp.Result, inputSchemaKey) {
		r.record(resp.Result)
	}
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
	if len(r.byName) == 0 {
		// An emptied map keeps its buckets: about 100 bytes a tool, held
		// until the next listing, on every idle session.
		r.byName = nil
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

// sameJSONAs is sameJSON with the schema last checked for the same tool:
// when raw is that schema's very text, its object (the text's value) is
// compared with decoded, and the text is not decoded again.
func sameJSONAs(raw json.RawMessage, decoded any, last decodedSchema) (decodedSchema, bool) {
	if len(raw) > 0 && decoded != nil && last.text != nil && bytes.Equal(raw, last.text) {
		if jsonEqual(last.obj, decoded) {
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
	if json.Unmarshal(raw, &v) != nil || !jsonEqual(v, decoded) {
		return decodedSchema{}, false
	}
	return decodedSchema{text: raw, obj: v}, true
}

// jsonEqual is reflect.DeepEqual for values decoded from JSON (objects,
// arrays, strings, numbers, booleans, null as encoding/json and go-sdk's
// decoder make them), without reflection: a re-listing checks every
// tool's schemas, and reflect.DeepEqual took 7-11 µs and 27 allocations
// for a two-property schema (BenchmarkSameJSONAsRelisted), 50,000 times
// in a fleet's re-list storm. Any other type is left to reflect.DeepEqual.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) || (a == nil) != (bm == nil) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !jsonEqual(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) || (a == nil) != (bs == nil) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], bs[i]) {
				return false
			}
		}
		return true
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case float64:
		bf, ok := b.(float64)
		return ok && a == bf
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
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

// inputSchema is the input schema text of the tool last listed as name
// (nil if none).
func (r *rawSchemas) inputSchema(name string) json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if raw, ok := r.byName[name]; ok {
		return raw.in
	}
	return r.verified[name].in.text
}
