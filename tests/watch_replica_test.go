package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolsvc/toolsvc/catalogwatch"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// startReplicas runs two toolsvc processes, each in front of its own
// instance of the same go-sdk test upstream (same server name, same tools).
func startReplicas(t *testing.T) (a, b *toolsvcProc) {
	t.Helper()
	c := func(url string) cfg {
		return cfg{RefreshInterval: "1h", Servers: servers{"x": goHTTP(url, upstream{})}}
	}
	return startToolsvc(t, c(startHTTPUpstream(t))), startToolsvc(t, c(startHTTPUpstream(t)))
}

func firstEvent(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, resume string) *toolsvcv1.WatchCatalogResponse {
	t.Helper()
	return startWatch(t, ctx, c, resume).next(t, 10*time.Second)
}

func addTool(t *testing.T, ctx context.Context, p *toolsvcProc, name string) {
	t.Helper()
	if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "x__add_tool", ArgumentsJson: fmt.Sprintf(`{"name": %q}`, name)}); err != nil {
		t.Fatalf("x__add_tool(%s): %v", name, err)
	}
}

// TestWatchAcrossReplicas: revisions are content-derived, so two processes
// with equal upstream catalogs report the same revision and a watch resumed
// on the other process gets "synced". After only one process's upstream
// changes, a resume there gets exactly the changes, and the other process,
// which never saw that revision, answers it with a reset, until its own
// upstream makes the same change and the revision is equal again.
func TestWatchAcrossReplicas(t *testing.T) {
	t.Parallel()
	a, b := startReplicas(t)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	toolsA, revA := listAll(t, ctx, a.client, 1000)
	toolsB, revB := listAll(t, ctx, b.client, 1000)
	if revA != revB || len(toolsA) != len(toolsB) {
		t.Fatalf("replicas report revisions %s and %s (%d and %d tools), want equal", revA, revB, len(toolsA), len(toolsB))
	}
	wa := startWatch(t, ctx, a.client, "")
	snap := wa.next(t, 10*time.Second)
	r1 := snap.GetRevision()
	if snap.GetSnapshot() == nil || r1 != revA {
		t.Fatalf("first event on A = %v, want a snapshot at %s", snap, revA)
	}
	if ev := firstEvent(t, ctx, b.client, r1); ev.GetSynced() == nil || ev.GetRevision() != r1 {
		t.Fatalf("resume on B from A's revision: %v, want synced", ev)
	}

	addTool(t, ctx, a, "only_on_a")
	wa.waitUpsert(t, "x__only_on_a", 10*time.Second)
	_, r2 := listAll(t, ctx, a.client, 1000)
	if r2 == r1 {
		t.Fatal("A's revision did not change")
	}
	ev := firstEvent(t, ctx, a.client, r1)
	if ch := ev.GetChanges(); ch == nil || ev.GetRevision() != r2 || len(ch.GetRemoved()) != 0 ||
		len(ch.GetUpserted()) != 1 || ch.GetUpserted()[0].GetName() != "x__only_on_a" {
		t.Fatalf("resume on A from %s: %v, want exactly the upsert of x__only_on_a at %s", r1, ev, r2)
	}
	ev = firstEvent(t, ctx, b.client, r2)
	if !ev.GetSnapshot().GetReset_() || ev.GetRevision() != r1 || len(ev.GetSnapshot().GetTools()) != len(toolsB) {
		t.Fatalf("resume on B from A's new revision: %v, want a reset snapshot of B's catalog at %s", ev, r1)
	}
	if ev := firstEvent(t, ctx, b.client, r1); ev.GetSynced() == nil {
		t.Fatalf("resume on B from the shared revision: %v, want synced", ev)
	}

	// B's upstream makes the same change: equal content, equal revision.
	wb := startWatch(t, ctx, b.client, r1)
	wb.next(t, 10*time.Second) // synced
	addTool(t, ctx, b, "only_on_a")
	if ev := wb.next(t, 10*time.Second); ev.GetRevision() != r2 {
		t.Fatalf("B after the same change: %v, want revision %s", ev, r2)
	}
	if ev := firstEvent(t, ctx, b.client, r2); ev.GetSynced() == nil {
		t.Fatalf("resume on B from %s: %v, want synced", r2, ev)
	}
}

// proxy forwards TCP connections to a target that can be switched, as a
// load balancer moving clients between replicas.
type proxy struct {
	lis    net.Listener
	target atomic.Value // string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, conns: map[net.Conn]struct{}{}}
	p.target.Store(target)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.forward(c) }()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func dialT(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func (p *proxy) forward(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target.Load().(string))
	if err != nil {
		return
	}
	defer up.Close()
	p.track(c, true)
	p.track(up, true)
	defer p.track(c, false)
	defer p.track(up, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// TestWatchClientsResumeOnOtherReplica: the Go client (catalogwatch) and
// `toolsvc watch` reach replica A through a proxy; A shuts down (streams end
// with UNAVAILABLE), the proxy now leads to B, and both resume there with
// their last revision and get "synced", not a reset.
func TestWatchClientsResumeOnOtherReplica(t *testing.T) {
	t.Parallel()
	a, b := startReplicas(t)
	px := startProxy(t, a.addr)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	conn := dialT(t, px.lis.Addr().String())
	events := make(chan catalogwatch.Event, 16)
	w := catalogwatch.New(toolsvcv1.NewToolServiceClient(conn), catalogwatch.Options{
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		OnEvent: func(ev catalogwatch.Event) {
			if ev.Kind != catalogwatch.Progress {
				events <- ev
			}
		},
	})
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-runDone
	}()

	cli := exec.CommandContext(ctx, bin.toolsvc, "watch", "--addr", px.lis.Addr().String())
	cli.Cancel = func() error { return cli.Process.Signal(syscall.SIGTERM) }
	stdout, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cliErr := newLogBuffer()
	stderr, err := cli.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	cliOut := newLogBuffer()
	var logs sync.WaitGroup
	logs.Add(2)
	go func() { defer logs.Done(); cliOut.consume(bufio.NewReader(stdout)) }()
	go func() { defer logs.Done(); cliErr.consume(stderr) }()
	defer func() {
		_ = cli.Process.Signal(syscall.SIGTERM)
		logs.Wait()
		if err := cli.Wait(); err != nil {
			t.Errorf("toolsvc watch exited with %v; stderr:\n%s", err, cliErr)
		}
	}()

	first := <-events
	rev := first.Revision
	if first.Kind != catalogwatch.Snapshot {
		t.Fatalf("first event %v, want a snapshot", first.Kind)
	}
	cliOut.waitFor(t, regexp.MustCompile(regexp.QuoteMeta(rev)+` snapshot +\d+ tools: .*x__echo`), 10*time.Second)

	px.target.Store(b.addr)
	_ = a.cmd.Process.Signal(syscall.SIGTERM)

	select {
	case ev := <-events:
		if ev.Kind != catalogwatch.Synced || !ev.Resumed || ev.Revision != rev {
			t.Fatalf("after A stopped: %v resumed=%v at %s, want synced at %s", ev.Kind, ev.Resumed, ev.Revision, rev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Go client did not resume on B")
	}
	cliErr.waitFor(t, regexp.MustCompile(`stream ended \(Unavailable: .*\); resuming in`), 10*time.Second)
	cliOut.waitFor(t, regexp.MustCompile(regexp.QuoteMeta(rev)+` synced`), 10*time.Second)
	// (A draining replica may refuse a retry or two before the client's
	// connection moves: at least one resume, every one without a reset.)
	if w.Streams() < 2 {
		t.Errorf("the Go client opened %d streams, want at least 2", w.Streams())
	}
	toolsB, _ := listAll(t, ctx, b.client, 1000)
	local := w.Tools()
	if len(local) != len(toolsB) {
		t.Fatalf("local catalog has %d tools, B has %d", len(local), len(toolsB))
	}
	for i := range local {
		if local[i].GetName() != toolsB[i].GetName() {
			t.Fatalf("local tool %d = %s, B has %s", i, local[i].GetName(), toolsB[i].GetName())
		}
	}

	// Changes on B reach both clients.
	addTool(t, ctx, b, "after_move")
	select {
	case ev := <-events:
		if ev.Kind != catalogwatch.Changes || len(ev.Upserted) != 1 || ev.Upserted[0].GetName() != "x__after_move" {
			t.Fatalf("after adding x__after_move on B: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Go client did not get x__after_move")
	}
	if _, ok := w.Lookup("x__after_move"); !ok {
		t.Fatal("x__after_move is not in the local catalog")
	}
	cliOut.waitFor(t, regexp.MustCompile(` changes +\+x__after_move`), 10*time.Second)
}
