package mcpfront

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// TestMCPFrontRecoveredPanic: a panic in a front-door handler (here in the
// tools/call path, made to dereference a nil counter after the upstream
// answered) reaches a go-sdk client over HTTP as the one error value, as
// on gRPC: JSON-RPC InternalError with data code Internal, reason
// INTERNAL, and the generic message, never the panic's text; the session
// goes on serving.
func TestMCPFrontRecoveredPanic(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, core.AuthConfig{})
	front := New(f.core, Options{ListenAddr: "127.0.0.1:0"})
	front.paths = nil // the call's result counter: a nil dereference once the call has answered
	srv := httptest.NewServer(front.Handler())
	t.Cleanup(func() {
		front.Close()
		srv.Close()
	})
	ctx := ctxT(t)
	cs := connectFront(t, ctx, mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil), srv.URL, "", "2025-11-25")
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{"text": "x"}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("tools/call with a panic in its handler = %v (%T), want a JSON-RPC error", err, err)
	}
	var data struct{ Code, Reason string }
	if jerr := json.Unmarshal(werr.Data, &data); jerr != nil || werr.Code != jsonrpc.CodeInternalError ||
		data.Code != "Internal" || data.Reason != core.ReasonInternal || werr.Message != "internal error" {
		t.Errorf("after a panic: JSON-RPC %d %q data %s, want %d \"internal error\" with code Internal, reason INTERNAL",
			werr.Code, werr.Message, werr.Data, jsonrpc.CodeInternalError)
	}
	if strings.Contains(err.Error(), "nil pointer") {
		t.Errorf("the panic's text reached the client: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list after the panic = %v", err)
	}
}
