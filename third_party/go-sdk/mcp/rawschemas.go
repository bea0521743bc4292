// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
)

// This file is a toolsvc patch: a client may ask for a tools/list result
// whose tools keep their schemas as the JSON text the server sent.

type rawToolSchemasKey struct{}

// WithRawToolSchemas returns a context for [ClientSession.ListTools] that
// has each listed tool's InputSchema and OutputSchema set to the
// json.RawMessage the server sent (a copy; nil when absent or null),
// instead of a map[string]any: the schemas are scanned, not decoded, for
// a caller that keeps or compares their text. (toolsvc patch)
func WithRawToolSchemas(ctx context.Context) context.Context {
	return context.WithValue(ctx, rawToolSchemasKey{}, true)
}

func rawToolSchemasRequested(ctx context.Context) bool {
	v, _ := ctx.Value(rawToolSchemasKey{}).(bool)
	return v
}

// listToolsFields is ListToolsResult without its methods (decoded as a
// plain struct).
type listToolsFields ListToolsResult

// toolFields is Tool without its methods.
type toolFields Tool

// rawSchemasTool decodes a tool with its schemas as text: the outer
// fields hide the embedded ones of the same names.
type rawSchemasTool struct {
	toolFields
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

// rawSchemasListToolsResult is what a ListToolsResult decodes into under
// WithRawToolSchemas.
type rawSchemasListToolsResult struct {
	listToolsFields
	Tools []*rawSchemasTool `json:"tools"`
}

func (*rawSchemasListToolsResult) isResult() {}

// callListToolsRaw is call for a tools/list under WithRawToolSchemas: the
// result is decoded as rawSchemasListToolsResult and set in res.
func callListToolsRaw(ctx context.Context, conn *jsonrpc2.Connection, method string, params Params, res *ListToolsResult) error {
	var wire rawSchemasListToolsResult
	if err := call(ctx, conn, method, params, &wire); err != nil {
		return err
	}
	*res = ListToolsResult(wire.listToolsFields)
	res.Tools = nil
	if wire.Tools != nil {
		res.Tools = make([]*Tool, len(wire.Tools))
	}
	for i, rt := range wire.Tools {
		if rt == nil {
			continue // a null entry stays nil, as decoded without the option
		}
		t := (*Tool)(&rt.toolFields)
		t.InputSchema, t.OutputSchema = schemaText(rt.InputSchema), schemaText(rt.OutputSchema)
		res.Tools[i] = t
	}
	return nil
}

// schemaText is raw as a schema value: nil for an absent or null schema
// (what decoding into an interface gives), else raw itself.
func schemaText(raw json.RawMessage) any {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}

// mayHaveHeaderKey reports whether raw, a schema's JSON text, may have an
// x-mcp-header key: it has those bytes, or a \u escape that could spell
// them. Keys match exactly in this package's decoder.
func mayHaveHeaderKey(raw json.RawMessage) bool {
	return bytes.Contains(raw, []byte("x-mcp-header")) || bytes.Contains(raw, []byte(`\u`))
}
