package mcpbridge

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The 2026-07-28 parameter headers (SEP-2243): a tool whose input schema
// marks a property with "x-mcp-header": "Name" has that argument sent in
// an Mcp-Param-Name header of its tools/call POST too, and a server may
// refuse a call whose headers do not match its arguments. go-sdk's client
// finds the tool in its own list cache through a context key it does not
// export; the streamable connection (streamhttp.go) takes the schema text
// the session listed (rawSchemas) instead.

// schemaProp is the part of a schema property the headers need.
type schemaProp struct {
	Type       string                `json:"type"`
	Header     json.RawMessage       `json:"x-mcp-header"`
	Properties map[string]schemaProp `json:"properties"`
}

// paramHeaders are the Mcp-Param-* headers of a tools/call (its params)
// of the tool with schema (nil if none). Nothing is decoded for a schema
// without the annotation: one that has neither its bytes nor a \u escape,
// which could spell them ("x-mcp-h\u0065ader" is the same key to the
// server, which then asks for the header).
func paramHeaders(schema, params json.RawMessage) map[string]string {
	if len(schema) == 0 || !bytes.Contains(schema, []byte("x-mcp-header")) && !bytes.Contains(schema, []byte(`\u`)) {
		return nil
	}
	var s schemaProp
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	var p struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil || p.Arguments == nil {
		return nil
	}
	a := p.Arguments
	var out map[string]string
	var walk func(props map[string]schemaProp, args map[string]json.RawMessage)
	walk = func(props map[string]schemaProp, args map[string]json.RawMessage) {
		for name, p := range props {
			v, ok := args[name]
			if !ok || string(v) == "null" {
				continue
			}
			var h string
			if json.Unmarshal(p.Header, &h) == nil && h != "" {
				if s, ok := headerValue(v); ok {
					if out == nil {
						out = map[string]string{}
					}
					out["Mcp-Param-"+h] = s
				}
			}
			if len(p.Properties) > 0 {
				var sub map[string]json.RawMessage
				if json.Unmarshal(v, &sub) == nil {
					walk(p.Properties, sub)
				}
			}
		}
	}
	walk(s.Properties, a)
	return out
}

// headerValue is a primitive argument as its header carries it: a string
// as is (Base64 in =?base64?…?= when it is not plain printable ASCII
// without edge blanks, or looks encoded), an integer within ±2^53-1 in
// decimal, a boolean; anything else has no header.
func headerValue(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		const safe = 1<<53 - 1
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) || x > safe || x < -safe {
			return "", false
		}
		return strconv.FormatInt(int64(x), 10), true
	case string:
		if needsBase64(x) {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(x)) + "?=", true
		}
		return x, true
	}
	return "", false
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7E {
			return true
		}
	}
	return strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")
}
