package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Hostile upstreams against the real toolsvc binary: results
// over the message limit, tool names meant to break the catalog, and an
// upstream that never answers tools/list.

// hostileServer is tests/hostileserver, built once per run.
func hostileServer(t *testing.T) string {
	t.Helper()
	return helperBinary(t, "hostileserver")
}

// TestHostileOversizedResults: a result over the upstream message limit (6
// × --max-response-bytes, at least 16 MiB), from a stdio and from a
// streamable-HTTP upstream, fails with RESOURCE_EXHAUSTED
// RESPONSE_TOO_LARGE naming the server and the limit, without RetryInfo;
// the session survives (the next call works on the same connection).
// Before, the stdio line killed the session (UNAVAILABLE session_lost,
// RetryInfo 1 s) and the HTTP body was read whole.
func TestHostileOversizedResults(t *testing.T) {
	t.Parallel()
	p := startCallFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	const limit = 6 * 4 << 20 // 6 × the default --max-response-bytes
	for _, server := range []string{"s", "h"} {
		args, _ := structpb.NewStruct(map[string]any{"bytes": limit + 1<<20})
		_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__big", Arguments: args})
		ei := wantStatus(t, err, codes.ResourceExhausted, "RESPONSE_TOO_LARGE", server, server+"__big")
		if got := ei.GetMetadata()["limit_bytes"]; got != fmt.Sprint(limit) {
			t.Errorf("%s: limit_bytes %q, want %d", server, got, limit)
		}
		if !strings.Contains(status.Convert(err).Message(), fmt.Sprintf("%q", server)) {
			t.Errorf("%s: message %q does not name the server", server, status.Convert(err).Message())
		}
		for _, d := range status.Convert(err).Details() {
			if _, ok := d.(*errdetails.RetryInfo); ok {
				t.Errorf("%s: RetryInfo on RESPONSE_TOO_LARGE invites the same call again", server)
			}
		}
		echo, _ := structpb.NewStruct(map[string]any{"text": "still here"})
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__echo", Arguments: echo})
		if err != nil || resultText(res) != "still here" {
			t.Fatalf("%s: call after the oversized result: %v", server, err)
		}
		if n := serverStatus(t, ctx, p.client, server).GetConnectCount(); n != 1 {
			t.Errorf("%s: connect count %d, want 1 (the session survives an oversized result)", server, n)
		}
	}
}

// TestHostileToolNames: tools listed with an empty name, control or
// format characters, or a 100 KB name are not exposed; ListServers warns
// about each, escaped and short, and the log says so once.
func TestHostileToolNames(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"x": {Command: hostileServer(t), Args: []string{"-mode", "bad-names"}}}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	tools, _ := listAll(t, ctx, p.client, 100)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.GetName())
	}
	if len(names) != 1 || names[0] != "x__echo" {
		t.Fatalf("tools %q, want only x__echo", names)
	}
	ws := serverStatus(t, ctx, p.client, "x").GetWarnings()
	skipped := 0
	for _, w := range ws {
		if strings.Contains(w, "skipped") {
			skipped++
			if len(w) > 200 || strings.ContainsAny(w, "\x1b\u200b") {
				t.Errorf("warning %q: want the name escaped and cut short", w)
			}
		}
	}
	if skipped != 4 {
		t.Errorf("warnings %q, want 4 skipped tools", ws)
	}
	p.log.waitFor(t, regexpMust(`upstream tools skipped.*skipped=4`), 10*time.Second)
}

// TestHostileNeverListsBacksOff: an upstream that connects but never
// answers tools/list is a failed attempt each time, so its reconnects back
// off (attempt 1, 2, 3, …); before, every session outlived stableAfter
// while it listed and the attempt stayed 0.
func TestHostileNeverListsBacksOff(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"x": {Command: hostileServer(t), Args: []string{"-mode", "hang-list"},
		RefreshTimeout: "300ms", StableAfter: "100ms", Backoff: &backoff{Base: "50ms", Max: "10s"}, Breaker: &breaker{Failures: 100}}}})
	for _, n := range []int{1, 2, 3} {
		p.log.waitFor(t, regexpMust(fmt.Sprintf(`msg="upstream down; reconnecting" .*attempt=%d `, n)), 20*time.Second)
	}
	if strings.Contains(p.log.String(), "attempt=0 ") {
		t.Errorf("a reconnect at attempt 0: the backoff did not grow\n%s", p.log.String())
	}
}
