package console

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
)

// TestCallsRing: the tee passes every audit line on unchanged and keeps
// the last MaxCallLines, values clipped, arguments left out; a principal
// sees only its own lines, an operator every line, each filter applied.
func TestCallsRing(t *testing.T) {
	var out bytes.Buffer
	cl := NewCalls()
	audit := slog.New(cl.Tee(slog.NewJSONHandler(&out, nil))).With("audit", true)
	for i := range MaxCallLines + 10 {
		who := "alice"
		if i%2 == 1 {
			who = "bob"
		}
		audit.Info("tool call", "principal", who, "tool", "s__t", "server", "s", "outcome", "ok",
			"duration", time.Millisecond, "arguments", `{"secret": 1}`, "uri", strings.Repeat("x", 1000))
	}
	if n := strings.Count(out.String(), "\n"); n != MaxCallLines+10 {
		t.Fatalf("the audit log got %d lines, want %d", n, MaxCallLines+10)
	}
	bob := &caller{p: core.Principal{Name: "bob"}}
	keep, e := callFilter(bob, httptest.NewRequest("GET", "/ui/api/calls", nil))
	if e != nil {
		t.Fatal(e)
	}
	lines, seq := cl.since(0, keep)
	if seq != MaxCallLines+10 || len(lines) != maxCallsSent {
		t.Fatalf("bob's lines: %d, seq %d", len(lines), seq)
	}
	for _, l := range lines {
		if l.Principal != "bob" || l.Attrs["arguments"] != "" || len(l.Attrs["uri"]) > MaxCallValueBytes+len("…") || l.Attrs["tool"] != "s__t" {
			t.Fatalf("bob's line %+v", l)
		}
	}
	if lines[len(lines)-1].Seq != seq {
		t.Errorf("the newest line is %d, want %d", lines[len(lines)-1].Seq, seq)
	}
	ops := &caller{admin: true}
	keep, _ = callFilter(ops, httptest.NewRequest("GET", "/ui/api/calls?principal=alice", nil))
	lines, _ = cl.since(seq-10, keep)
	if len(lines) != 5 || lines[0].Principal != "alice" {
		t.Errorf("the operator's last 10 lines filtered to alice: %+v", lines)
	}
	if lines, _ := cl.since(seq, keep); len(lines) != 0 {
		t.Errorf("nothing new: %d lines", len(lines))
	}
}
