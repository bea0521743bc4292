package mcpfront

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPeekTaskRequest: a tools/call's params.task goes into
// taskCallHeader; a 2026-07-28 tasks/* request whose Mcp-Name names
// another task is answered 400 / -32020 before go-sdk; an absent Mcp-Name,
// a matching one, and everything else go on untouched.
func TestPeekTaskRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body, mcpName string
		modern              bool
		wantOn              bool
		wantHeader          string
		wantCode            int
	}{
		{name: "task", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":5000}}}`,
			wantOn: true, wantHeader: `{"ttl":5000}`},
		{name: "empty task", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}`,
			wantOn: true, wantHeader: `{}`},
		{name: "null task", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task","task":null}}`, wantOn: true},
		{name: "no task", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tasks/get"}}`, wantOn: true},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}]`, wantOn: true},
		{name: "name matches", body: `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t1.a"}}`, mcpName: "t1.a",
			modern: true, wantOn: true},
		{name: "no name", body: `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t1.a"}}`, modern: true, wantOn: true},
		{name: "name differs", body: `{"jsonrpc":"2.0","id":2,"method":"tasks/cancel","params":{"taskId":"t1.a"}}`, mcpName: "t1.b",
			modern: true, wantCode: http.StatusBadRequest},
		{name: "name differs, 2025-11-25", body: `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t1.a"}}`,
			mcpName: "t1.b", wantOn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tc.body))
			if tc.mcpName != "" {
				r.Header.Set(mcpNameHeader, tc.mcpName)
			}
			w := httptest.NewRecorder()
			on := peekTaskRequest(w, r, []byte(tc.body), tc.modern)
			if on != tc.wantOn || r.Header.Get(taskCallHeader) != tc.wantHeader {
				t.Errorf("peekTaskRequest(%s) = %v, header %q; want %v, %q", tc.body, on, r.Header.Get(taskCallHeader), tc.wantOn, tc.wantHeader)
			}
			if !on && (w.Code != tc.wantCode || !strings.Contains(w.Body.String(), `"code":-32020`) || !strings.Contains(w.Body.String(), `"id":2`)) {
				t.Errorf("answered %d %s; want %d with -32020 and the request's id", w.Code, w.Body, tc.wantCode)
			}
		})
	}
}
