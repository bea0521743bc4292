package mcpbridge

import (
	"slices"
	"testing"
	"time"
)

func TestChildEnvScrubsSecrets(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/bin", "HOME=/root", "GITHUB_TOKEN=t", "AWS_SECRET_ACCESS_KEY=s", "MY_API_KEY=k",
		"DB_PASSWORD=p", "LANG=C", "KEEP_TOKEN=k2", "OVERRIDE=old"}
	got := childEnv(environ, []string{"KEEP_TOKEN"}, map[string]string{"OVERRIDE": "new", "SERVER_TOKEN": "explicit"})
	want := map[string]bool{"PATH=/bin": true, "HOME=/root": true, "LANG=C": true, "KEEP_TOKEN=k2": true,
		"OVERRIDE=new": true, "SERVER_TOKEN=explicit": true}
	if len(got) != len(want) {
		t.Fatalf("childEnv = %q, want %v", got, want)
	}
	for _, kv := range got {
		if !want[kv] {
			t.Errorf("childEnv kept or made %q", kv)
		}
	}
}

// TestServerProblems: every problem of a server's settings at once, each
// naming its config-file field.
func TestServerProblems(t *testing.T) {
	t.Parallel()
	sc := ServerConfig{Name: "a__b", Transport: TransportStreamableHTTP, URL: "ftp://x", ProtocolVersion: "2025-13-01",
		Elicitation: "ask", BackoffBase: time.Second, BackoffMax: time.Millisecond, PushlessRefresh: -time.Second,
		ToolsDeny: []string{"ok", "[bad"}, MaxQueuedCalls: -1}
	var fields []string
	for _, p := range sc.Problems() {
		fields = append(fields, p.Field)
	}
	want := []string{"name", "url", "pushlessRefresh", "backoff.max", "maxQueuedCalls", "protocolVersion", "elicitation", "tools.deny[1]"}
	if !slices.Equal(fields, want) {
		t.Fatalf("fields %q, want %q", fields, want)
	}
	for _, pv := range []string{"", ProtocolAuto, ProtocolLatest, "2025-06-18", "2026-07-28"} {
		ok := ServerConfig{Name: "s", Transport: TransportStdio, Command: "x", ProtocolVersion: pv}
		if probs := ok.Problems(); len(probs) != 0 {
			t.Errorf("protocolVersion %q: %v", pv, probs[0])
		}
	}
}
