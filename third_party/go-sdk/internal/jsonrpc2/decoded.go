// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package jsonrpc2

import "reflect"

// Decoded is a [Response]'s Extra when the transport has the call's result
// as a value already, not as JSON (toolsvc patch: see
// mcp.DecodedResponse): Await hands that value to its caller instead of
// decoding Result, which is nil. A transport that translates another wire
// (the MCP gRPC binding) would otherwise encode what it received as JSON
// only for Await to decode it again.
type Decoded struct {
	Value any
}

// assign sets *result to *d.Value when both are non-nil pointers of the
// same type (the result type the caller awaits), and reports whether it
// did. Any other pairing is left to the caller (a decode of Result).
func (d Decoded) assign(result any) bool {
	rv, dv := reflect.ValueOf(result), reflect.ValueOf(d.Value)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Type() != dv.Type() || dv.IsNil() {
		return false
	}
	rv.Elem().Set(dv.Elem())
	return true
}
