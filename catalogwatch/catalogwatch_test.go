package catalogwatch

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

const (
	rev1 = "11111111111111111111111111111111"
	rev2 = "22222222222222222222222222222222"
)

func snapshot(rev string, reset bool, names ...string) *toolsvcv1.WatchCatalogResponse {
	s := &toolsvcv1.CatalogSnapshot{Reset_: reset}
	for _, n := range names {
		s.Tools = append(s.Tools, &toolsvcv1.Tool{Name: n})
	}
	return &toolsvcv1.WatchCatalogResponse{Revision: rev, Event: &toolsvcv1.WatchCatalogResponse_Snapshot{Snapshot: s}}
}

func changes(rev string, removed []string, upserted ...*toolsvcv1.Tool) *toolsvcv1.WatchCatalogResponse {
	return &toolsvcv1.WatchCatalogResponse{Revision: rev, Event: &toolsvcv1.WatchCatalogResponse_Changes{
		Changes: &toolsvcv1.CatalogChanges{Upserted: upserted, Removed: removed}}}
}

func names(w *Watcher) string {
	s := ""
	for _, t := range w.Tools() {
		s += t.GetName() + " "
	}
	return s
}

func TestApply(t *testing.T) {
	w := New(nil, Options{})
	if _, err := w.apply(changes(rev1, nil, &toolsvcv1.Tool{Name: "a"})); !errors.Is(err, ErrProtocol) {
		t.Fatalf("changes before a snapshot: %v, want ErrProtocol", err)
	}
	if ev, err := w.apply(snapshot(rev1, false, "b", "a")); err != nil || ev.Kind != Snapshot || names(w) != "a b " {
		t.Fatalf("snapshot: %v %v, tools %q", ev.Kind, err, names(w))
	}
	if ev, err := w.apply(changes(rev2, []string{"a"}, &toolsvcv1.Tool{Name: "c"}, &toolsvcv1.Tool{Name: "b", Description: "new"})); err != nil || ev.Kind != Changes {
		t.Fatalf("changes: %v %v", ev.Kind, err)
	}
	if b, _ := w.Lookup("b"); names(w) != "b c " || b.GetDescription() != "new" || w.Revision() != rev2 {
		t.Fatalf("after changes: %q at %s", names(w), w.Revision())
	}
	synced := &toolsvcv1.WatchCatalogResponse{Revision: rev1, Event: &toolsvcv1.WatchCatalogResponse_Synced{Synced: &toolsvcv1.CatalogSynced{}}}
	if _, err := w.apply(synced); !errors.Is(err, ErrProtocol) {
		t.Fatalf("synced to another revision: %v, want ErrProtocol", err)
	}
	if ev, err := w.apply(snapshot(rev1, true, "z")); err != nil || ev.Kind != Reset || names(w) != "z " {
		t.Fatalf("reset: %v %v, tools %q", ev.Kind, err, names(w))
	}
	if _, err := w.apply(&toolsvcv1.WatchCatalogResponse{Event: synced.Event}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("event without revision: %v", err)
	}
}

func TestResumeFromInitial(t *testing.T) {
	w := New(nil, Options{ResumeToken: rev1, Initial: []*toolsvcv1.Tool{{Name: "a"}}})
	synced := &toolsvcv1.WatchCatalogResponse{Revision: rev1, Event: &toolsvcv1.WatchCatalogResponse_Synced{Synced: &toolsvcv1.CatalogSynced{}}}
	if ev, err := w.apply(synced); err != nil || ev.Kind != Synced || names(w) != "a " {
		t.Fatalf("synced after Initial: %v %v %q", ev.Kind, err, names(w))
	}
	if w := New(nil, Options{ResumeToken: rev1}); w.Revision() != "" {
		t.Fatal("a resume token without Initial was used")
	}
}

func TestRetryable(t *testing.T) {
	for code, want := range map[codes.Code]bool{
		codes.Unavailable: true, codes.Internal: true, codes.ResourceExhausted: false, codes.Unknown: true,
		codes.InvalidArgument: false, codes.NotFound: false, codes.PermissionDenied: false, codes.Unimplemented: false,
	} {
		if got := retryable(status.Error(code, "x")); got != want {
			t.Errorf("retryable(%v) = %v, want %v", code, got, want)
		}
	}
	if retryable(ErrProtocol) {
		t.Error("a protocol violation is retried")
	}
	st, _ := status.New(codes.ResourceExhausted, "rate limited").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)})
	if !retryable(st.Err()) {
		t.Error("RESOURCE_EXHAUSTED with RetryInfo is not retried")
	}
}

// TestAssembleParts: a split event is applied whole, once its last part
// arrived; a part that does not continue it is a protocol violation.
func TestAssembleParts(t *testing.T) {
	part := func(m *toolsvcv1.WatchCatalogResponse) *toolsvcv1.WatchCatalogResponse { m.Fragment = true; return m }
	w := New(nil, Options{})
	var parts eventParts
	for _, m := range []*toolsvcv1.WatchCatalogResponse{part(snapshot(rev1, false, "a", "b")), part(snapshot(rev1, false, "c"))} {
		if got, err := assemble(&parts, m); got != nil || err != nil {
			t.Fatalf("assemble(part) = %v, %v; want nil, nil", got, err)
		}
	}
	whole, err := assemble(&parts, snapshot(rev1, false, "d"))
	if err != nil || whole == nil || whole.GetFragment() || len(parts.list) != 0 {
		t.Fatalf("assemble(last part) = %v, %v (%d pending)", whole, err, len(parts.list))
	}
	if _, err := w.apply(whole); err != nil || names(w) != "a b c d " {
		t.Fatalf("apply(assembled) = %v, tools %q", err, names(w))
	}
	for name, next := range map[string]*toolsvcv1.WatchCatalogResponse{
		"another revision": snapshot(rev2, false, "x"),
		"another kind":     changes(rev1, []string{"a"}),
	} {
		parts = eventParts{}
		if _, err := assemble(&parts, part(snapshot(rev1, false, "a"))); err != nil {
			t.Fatal(err)
		}
		if _, err := assemble(&parts, next); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s after a part: %v, want ErrProtocol", name, err)
		}
	}
	synced := &toolsvcv1.WatchCatalogResponse{Revision: rev1, Fragment: true, Event: &toolsvcv1.WatchCatalogResponse_Synced{Synced: &toolsvcv1.CatalogSynced{}}}
	if _, err := assemble(new(eventParts), synced); !errors.Is(err, ErrProtocol) {
		t.Errorf("synced in parts: %v, want ErrProtocol", err)
	}
	// A server that never ends an event: the held parts stop at
	// maxEventParts.
	parts = eventParts{}
	var err2 error
	for i := 0; i <= maxEventParts && err2 == nil; i++ {
		_, err2 = assemble(&parts, part(snapshot(rev1, false, "a")))
	}
	if !errors.Is(err2, ErrProtocol) || len(parts.list) != maxEventParts {
		t.Errorf("part %d: %v with %d held, want ErrProtocol at %d", maxEventParts+1, err2, len(parts.list), maxEventParts)
	}
	// And in bytes (the bound lowered for the test).
	defer func(old int) { maxEventBytes = old }(maxEventBytes)
	maxEventBytes = 1 << 10
	parts = eventParts{}
	big := part(snapshot(rev1, false, strings.Repeat("t", 600)))
	if _, err := assemble(&parts, big); err != nil {
		t.Fatal(err)
	}
	if _, err := assemble(&parts, part(snapshot(rev1, false, strings.Repeat("u", 600)))); !errors.Is(err, ErrProtocol) {
		t.Errorf("parts past the byte bound: %v, want ErrProtocol", err)
	}
}
