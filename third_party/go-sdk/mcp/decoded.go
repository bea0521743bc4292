// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package mcp

import (
	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DecodedResponse is the response to the call id carrying res, the
// result as a value of the type the call awaits (*CallToolResult for
// tools/call), instead of JSON (toolsvc patch). A [Connection] whose wire
// is not JSON-RPC (one that translates another protocol's answers) hands
// it to the session, by Read or by a [DirectConnection]'s deliver, and the
// waiting call gets res itself: no encoding by the connection, no decoding
// by the session. Its Result is nil; a reader of the connection's messages
// that needs the bytes asks [DecodedResult] for the value and encodes it.
//
// res must be complete as a decode would leave it: fields only a decode
// sets (a result's resultType) are unset, so a result that needs them is
// sent as JSON.
func DecodedResponse(id jsonrpc.ID, res Result) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Extra: jsonrpc2.Decoded{Value: res}}
}

// DecodedResult is the value a [DecodedResponse] carries.
func DecodedResult(r *jsonrpc.Response) (Result, bool) {
	if d, ok := r.Extra.(jsonrpc2.Decoded); ok && r.Result == nil {
		res, ok := d.Value.(Result)
		return res, ok
	}
	return nil, false
}
