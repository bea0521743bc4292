package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/catalogwatch"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// startManyTools runs toolsvc with one stdio upstream "many"
// (tests/manytools with args) and waits until its catalog holds want tools.
func startManyTools(t *testing.T, want int32, toolsvcArgs []string, args ...string) *toolsvcProc {
	t.Helper()
	exe := helperBinary(t, "manytools")
	p := startToolsvcWith(t, cfg{RefreshInterval: "1h", Servers: servers{"many": {Command: exe, Args: append([]string{}, args...)}}},
		startOpts{args: toolsvcArgs, noWait: true})
	eventually(t, 5*time.Minute, fmt.Sprintf("%d tools listed", want), func() bool {
		resp, err := p.client.ListServers(t.Context(), &toolsvcv1.ListServersRequest{})
		return err == nil && len(resp.GetServers()) == 1 && resp.GetServers()[0].GetToolCount() == want
	})
	return p
}

// TestWatchLargeCatalog: a real upstream with 100,000 tools (a 9 MB
// snapshot). catalogwatch (which asks for fragments) receives the snapshot
// in parts and holds the whole catalog, then the change of one tool; a raw
// client that does not ask for fragments gets RESOURCE_EXHAUSTED /
// RESPONSE_TOO_LARGE with ErrorInfo, and toolsvc logs it.
//
// CI runs it at a tenth of the scale against a quarter of the default
// response limit (the same number of parts); TOOLSVC_FULL_WATCH_TEST=1 runs
// 100,000 tools at the defaults (about 90 s under -race).
func TestWatchLargeCatalog(t *testing.T) {
	t.Parallel()
	n, flags := 10_000, []string{"--max-response-bytes", "262144"}
	if os.Getenv("TOOLSVC_FULL_WATCH_TEST") == "1" {
		n, flags = 100_000, nil
	}
	p := startManyTools(t, int32(n+1), flags, "-tools", fmt.Sprint(n)) // + bump
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	events := make(chan catalogwatch.Event, 16)
	w := catalogwatch.New(p.client, catalogwatch.Options{OnEvent: func(ev catalogwatch.Event) {
		select { // never blocks Run past the test's end
		case events <- ev:
		case <-ctx.Done():
		}
	}})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	next := func() catalogwatch.Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case err := <-done:
			t.Fatalf("catalogwatch ended: %v", err)
		case <-time.After(2 * time.Minute):
			t.Fatal("no catalogwatch event within 2m")
		}
		return catalogwatch.Event{}
	}
	ev := next()
	if ev.Kind != catalogwatch.Snapshot || len(ev.Tools) != n+1 || len(w.Tools()) != n+1 || ev.Parts < 2 {
		t.Fatalf("first event: %v of %d tools in %d part(s), local catalog %d; want a snapshot of %d tools in parts",
			ev.Kind, len(ev.Tools), ev.Parts, len(w.Tools()), n+1)
	}
	list, err := p.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1})
	if err != nil || list.GetRevision() != w.Revision() {
		t.Fatalf("ListTools revision %s (%v), catalogwatch holds %s", list.GetRevision(), err, w.Revision())
	}
	if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "many__bump"}); err != nil {
		t.Fatal(err)
	}
	for {
		ev = next()
		if ev.Kind == catalogwatch.Changes {
			break
		}
	}
	if len(ev.Upserted) != 1 || ev.Upserted[0].GetName() != "many__tool00000" || len(w.Tools()) != n+1 {
		t.Fatalf("after bump: %d upserted (%v), %d tools", len(ev.Upserted), ev.Upserted, len(w.Tools()))
	}
	if got, _ := w.Lookup("many__tool00000"); got.GetDescription() != "generated tool number 0, version 1" {
		t.Fatalf("many__tool00000 = %q after bump", got.GetDescription())
	}

	// Without fragment: the specific error, every time.
	for range 2 {
		st, err := p.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{})
		if err == nil {
			_, err = st.Recv()
		}
		info := errorInfo(t, err)
		if status.Code(err) != codes.ResourceExhausted || info.GetReason() != "RESPONSE_TOO_LARGE" || info.GetMetadata()["event"] != "snapshot" {
			t.Fatalf("unfragmented watch of %d tools: %v (%v), want RESOURCE_EXHAUSTED / RESPONSE_TOO_LARGE", n, err, info)
		}
	}
	p.log.waitFor(t, regexpMust(`level=WARN msg="watch: event too large to send`), 10*time.Second)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("catalogwatch Run = %v, want context.Canceled", err)
	}
}

// TestWatchOversizedToolSkipped: one tool too large for any watch part
// (200 KB against a 64 KiB response limit) would end every watch stream;
// the bridge never exposes it (a tool is at most a quarter of the response
// limit), says so in ListServers, and catalogwatch receives the rest.
// (The watch's own answer to a tool over the limit, RESOURCE_EXHAUSTED /
// RESPONSE_TOO_LARGE naming the tool, is covered by service's
// TestWatchFragments.)
func TestWatchOversizedToolSkipped(t *testing.T) {
	t.Parallel()
	p := startManyTools(t, 3, []string{"--max-response-bytes", "65536"}, "-tools", "2", "-huge", "200000")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	warned := false
	for _, w := range serverStatus(t, ctx, p.client, "many").GetWarnings() {
		warned = warned || strings.Contains(w, `"huge"`) && strings.Contains(w, "the limit per tool")
	}
	if !warned {
		t.Errorf("ListServers warnings %q, want one naming the skipped tool \"huge\" and the limit per tool", serverStatus(t, ctx, p.client, "many").GetWarnings())
	}
	events := make(chan catalogwatch.Event, 4)
	w := catalogwatch.New(p.client, catalogwatch.Options{OnEvent: func(ev catalogwatch.Event) {
		select { // never blocks Run past the test's end
		case events <- ev:
		case <-ctx.Done():
		}
	}})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case ev := <-events:
		if ev.Kind != catalogwatch.Snapshot || len(ev.Tools) != 3 {
			t.Fatalf("first event %v with %d tools, want a snapshot of 3 (huge skipped)", ev.Kind, len(ev.Tools))
		}
	case err := <-done:
		t.Fatalf("catalogwatch ended: %v", err)
	}
	cancel()
	<-done
}

// TestWatchTooLargeForTheClientIsNotRetried: a client whose receive limit
// (64 KiB) is below the watch's parts gets grpc-go's own RESOURCE_EXHAUSTED
// (a real peer's error, not one built by hand); catalogwatch returns it
// after one stream instead of resuming forever.
func TestWatchTooLargeForTheClientIsNotRetried(t *testing.T) {
	t.Parallel()
	p := startManyTools(t, 5_001, nil, "-tools", "5000")
	conn := grpcConn(t, p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<10)))
	w := catalogwatch.New(toolsvcv1.NewToolServiceClient(conn), catalogwatch.Options{MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := w.Run(ctx)
	if status.Code(err) != codes.ResourceExhausted || ctx.Err() != nil {
		t.Fatalf("Run = %v, want grpc-go's RESOURCE_EXHAUSTED", err)
	}
	if w.Streams() != 1 {
		t.Fatalf("catalogwatch opened %d streams, want 1 (the answer is not retryable)", w.Streams())
	}
}
