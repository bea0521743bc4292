package tests

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestSubscriptionLifecycleBothWires: one resource subscription lifecycle
// on both wires (docs/resources.md, "One subscription lifecycle"). A gRPC
// SubscribeResource stream and a front-door session subscribe to the same
// resource of the Python SDK's server (streamable HTTP, 2026-07-28); the
// upstream is killed with SIGKILL and started again (its note reset).
// Neither subscriber is ended by the loss: the core's hub subscribes again
// once the upstream is back, the gRPC stream sends the new process's
// contents, the front door sends resources/updated, and later updates keep
// reaching both.
func TestSubscriptionLifecycleBothWires(t *testing.T) {
	t.Parallel()
	up, srv, restart := startResourcesPython(t, "http", upstream{ProtocolVersion: "2026-07-28", RefreshDebounce: "50ms",
		Backoff: &backoff{Base: "50ms", Max: "200ms"}, PingInterval: "300ms"})
	p := startToolsvc(t, cfg{Servers: servers{"py": up}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	stream, err := p.client.SubscribeResource(ctx, &toolsvcv1.SubscribeResourceRequest{Uri: "py://note"})
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		text, version string
		err           error
	}
	events := make(chan event, 16)
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				events <- event{err: err}
				return
			}
			text := ""
			if cs := ev.GetContents().GetContents(); len(cs) > 0 {
				text = cs[0].GetText()
			}
			events <- event{text: text, version: ev.GetVersion()}
		}
	}()
	next := func(what string) event {
		t.Helper()
		ev := waitSignal(t, events, what)
		if ev.err != nil {
			t.Fatalf("gRPC subscription, %s: the stream ended: %v", what, ev.err)
		}
		return ev
	}
	if ev := next("the first contents"); ev.text != "first note" {
		t.Fatalf("first event %+v, want the contents %q", ev, "first note")
	}

	front := connectFrontRes(t, ctx, "http://"+p.mcpAddr+"/mcp", "2025-11-25")
	if err := front.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "py://note"}); err != nil {
		t.Fatalf("resources/subscribe on the front door: %v", err)
	}

	// An update reaches both wires.
	callJSON(t, ctx, p.client, "py__set_note", `{"text": "second note"}`)
	if ev := next("the update"); ev.text != "second note" {
		t.Fatalf("update %+v, want %q", ev, "second note")
	}
	if uri := waitSignal(t, front.updated, "resources/updated on the front door"); uri != "py://note" {
		t.Fatalf("resources/updated for %q", uri)
	}

	// The upstream is killed and comes back: both subscriptions outlive
	// it, and both are told the contents may have changed.
	drain(front.updated)
	if err := syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv = restart()
	if ev := next("the contents after the upstream came back"); ev.text != "first note" {
		t.Fatalf("after the restart: %+v, want the new process's %q", ev, "first note")
	}
	if uri := waitSignal(t, front.updated, "resources/updated after the upstream came back"); uri != "py://note" {
		t.Fatalf("resources/updated for %q", uri)
	}
	if got := front.readText(t, ctx, "py://note"); got != "first note" {
		t.Fatalf("front door: py://note = %q after the restart, want %q", got, "first note")
	}

	// Subscribed again upstream: later updates reach both.
	drain(front.updated)
	callJSON(t, ctx, p.client, "py__set_note", `{"text": "after restart"}`)
	if ev := next("an update after the restart"); ev.text != "after restart" {
		t.Fatalf("update after the restart %+v, want %q", ev, "after restart")
	}
	waitSignal(t, front.updated, "resources/updated after the restart")
	if got := front.readText(t, ctx, "py://note"); got != "after restart" {
		t.Fatalf("front door: py://note = %q, want %q", got, "after restart")
	}
	cancel()
}
