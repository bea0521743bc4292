package mcpfront

import "testing"

// TestPlainCall: which request bodies the JSON rule looks at further (a
// tools/call with an ID, no progress token, no task) and which it leaves
// to the event stream at once.
func TestPlainCall(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"text":"hi"}}}`, true},
		{` {"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"s__echo","_meta":{"progressToken":null}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","_meta":{"progressToken":"t"}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","_meta":{"progressToken":0}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","task":{"ttl":1000}}}`, false},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"s__echo"}}`, false},           // no ID: a notification
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"s__echo"}}`, false}, // null ID
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, false},                                // no params
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo"}}]`, false},  // a batch
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/call"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`, false}, // cut short
	} {
		if got := plainCall([]byte(tc.body)) != nil; got != tc.want {
			t.Errorf("plainCall(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}
