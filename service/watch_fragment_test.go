package service

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// recvEvent reads one whole event of a fragment watch: its parts, checking
// that every part but the last has fragment set, that they agree on
// revision and kind, and that none is over limit bytes.
func recvEvent(t *testing.T, st toolsvcv1.ToolService_WatchCatalogClient, limit int) (parts []*toolsvcv1.WatchCatalogResponse) {
	t.Helper()
	for {
		m := recvT(t, st)
		if n := proto.Size(m); n > limit {
			t.Fatalf("part %d is %d bytes, over the %d-byte limit", len(parts), n, limit)
		}
		if len(parts) > 0 {
			p := parts[0]
			if m.GetRevision() != p.GetRevision() || fmt.Sprintf("%T", m.GetEvent()) != fmt.Sprintf("%T", p.GetEvent()) ||
				m.GetSnapshot().GetReset_() != p.GetSnapshot().GetReset_() {
				t.Fatalf("part %d (%s %T) does not continue part 0 (%s %T)", len(parts), m.GetRevision(), m.GetEvent(), p.GetRevision(), p.GetEvent())
			}
		}
		parts = append(parts, m)
		if !m.GetFragment() {
			return parts
		}
	}
}

func errorInfoOf(err error) *errdetails.ErrorInfo {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// TestWatchFragments: a snapshot larger than a message is split into parts
// (fragment = true on all but the last) for a client that asked for
// fragments, each part within the limit, together exactly the catalog; a
// laggard's large changes event is split the same way; a client that did
// not ask gets RESOURCE_EXHAUSTED / RESPONSE_TOO_LARGE naming the event,
// not a stream cut by gRPC's own size check.
func TestWatchFragments(t *testing.T) {
	t.Parallel()
	const limit = 256 << 10
	names := make([]string, 6000)
	for i := range names {
		names[i] = fmt.Sprintf("a_rather_long_tool_name_for_the_size_of_it_%05d", i)
	}
	f := newWatchFixture(t, &serverOpts{MaxResponseBytes: limit}, map[string][]string{"big": names, "small": {"x"}})
	f.waitCatalog(t, "every tool", f.matchesUpstreams)
	// Its streams live through the whole test (tens of thousands of tools
	// built, sent and compared: 8 s alone, over 20 s on a loaded box).
	ctx, cancel := context.WithTimeout(t.Context(), 3*defaultTestTimeout)
	defer cancel()
	list, _ := listAllTools(t, f.client)

	st, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{Fragment: true})
	if err != nil {
		t.Fatal(err)
	}
	parts := recvEvent(t, st, limit)
	if len(parts) < 2 {
		t.Fatalf("a %d-tool snapshot came in %d part(s), want several under the %d-byte limit", len(list), len(parts), limit)
	}
	var got []*toolsvcv1.Tool
	for _, p := range parts {
		got = append(got, p.GetSnapshot().GetTools()...)
	}
	if toolNames(got) != toolNames(list) {
		t.Fatalf("the parts hold %d tools, want the %d of ListTools in order", len(got), len(list))
	}
	first := parts[0].GetRevision()

	// Unfragmented: a specific error, the same on every resume that needs
	// a snapshot (a resume at the current revision is "synced").
	for _, tok := range []string{"", "0123456789abcdef0123456789abcdef", "malformed"} {
		old, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{ResumeToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		_, err = old.Recv()
		info := errorInfoOf(err)
		if status.Code(err) != codes.ResourceExhausted || info.GetReason() != ReasonResponseTooLarge ||
			info.GetMetadata()["event"] != "snapshot" || !strings.Contains(status.Convert(err).Message(), "fragment") {
			t.Fatalf("unfragmented watch (token %q) of a %d-tool catalog: %v (%v), want RESOURCE_EXHAUSTED / RESPONSE_TOO_LARGE naming the snapshot and fragment", tok, len(list), err, info)
		}
	}

	// Every tool of big changes (its upstream goes down): the open stream
	// and a laggard resuming from the first revision both get the changes
	// in parts, and apply to the same catalog.
	f.servers["big"].setDown(true)
	f.waitCatalog(t, "big unavailable", func(s *mcpbridge.Snapshot) bool {
		for _, tl := range s.Tools {
			if tl.Server == "big" && tl.Available {
				return false
			}
		}
		return true
	})
	laggard, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{Fragment: true, ResumeToken: first})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]toolsvcv1.ToolService_WatchCatalogClient{"open stream": st, "laggard": laggard} {
		var ups []*toolsvcv1.Tool
		var rev string
		for len(ups) < len(names) {
			parts := recvEvent(t, s, limit)
			if parts[0].GetChanges() == nil {
				t.Fatalf("%s: %T, want changes", name, parts[0].GetEvent())
			}
			if len(ups) == 0 && len(parts) < 2 {
				t.Fatalf("%s: %d tools changed in %d part(s), want several", name, len(names), len(parts))
			}
			for _, p := range parts {
				ups = append(ups, p.GetChanges().GetUpserted()...)
			}
			rev = parts[0].GetRevision()
		}
		for _, tl := range ups {
			if tl.GetAvailable() {
				t.Fatalf("%s: %s upserted as available", name, tl.GetName())
			}
		}
		if cur := f.bridge.Catalog().Current().Revision; rev != cur {
			t.Fatalf("%s: at %s after the changes, want %s", name, rev, cur)
		}
	}
}

func listAllTools(t *testing.T, c toolsvcv1.ToolServiceClient) ([]*toolsvcv1.Tool, string) {
	t.Helper()
	var out []*toolsvcv1.Tool
	tok, rev := "", ""
	for {
		r, err := c.ListTools(ctxT(t), &toolsvcv1.ListToolsRequest{PageToken: tok, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out, tok, rev = append(out, r.GetTools()...), r.GetNextPageToken(), r.GetRevision()
		if tok == "" {
			return out, rev
		}
	}
}
