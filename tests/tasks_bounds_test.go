package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Bounds of tasks (docs/security.md, "Log lines and tasks of one
// principal"): ListTasks answers from the ledger instead of asking the
// upstream about every unfinished task on every call, and one principal's
// task watches are bounded.

// methodCounter is a reverse proxy in front of an HTTP upstream that
// counts the JSON-RPC methods POSTed through it.
type methodCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (mc *methodCounter) start(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	mc.n = map[string]int{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.FlushInterval = -1 // SSE
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method != "" {
				mc.mu.Lock()
				mc.n[m.Method]++
				mc.mu.Unlock()
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL + u.Path
}

func (mc *methodCounter) count(method string) int {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.n[method]
}

// TestListTasksFromLedger: with 40 unfinished tasks of ann's on each task
// upstream (TypeScript SDK, 2025-11-25; Python fastmcp-tasks, 2026-07-28),
// 5 ListTasks send at most 5×16 tasks/get to each upstream (they sent
// 5×40 when every ListTasks asked about every unfinished task), list every
// task, and a task that ends is still seen ended by a later ListTasks.
func TestListTasksFromLedger(t *testing.T) {
	t.Parallel()
	const tasks, lists, perList = 40, 5, 16 // perList: core's maxListRefresh
	all := taskServers(t)
	counters := map[string]*methodCounter{"tsh": {}, "py": {}}
	ss := servers{}
	for name, mc := range counters {
		up := all[name]
		up.URL = mc.start(t, up.URL)
		ss[name] = up
	}
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: ss})
	c := p.client
	for name, mc := range counters {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			ann := as(ctx, annTasks)
			// The short task first: fastmcp-tasks runs a few tasks at a
			// time, so one created after 40 long ones would wait for them.
			short := startTask(t, ann, c, name+"__slow", `{"ms": 50}`)
			for range tasks {
				startTask(t, ann, c, name+"__slow", `{"ms": 60000}`)
			}
			before := mc.count("tasks/get")
			for range lists {
				lst, err := c.ListTasks(ann, &toolsvcv1.ListTasksRequest{Server: name})
				if err != nil || len(lst.GetTasks()) != tasks+1 {
					t.Fatalf("ListTasks = %d tasks, %v; want %d", len(lst.GetTasks()), err, tasks+1)
				}
			}
			got := mc.count("tasks/get") - before
			t.Logf("%d ListTasks over %d tasks (%d of them 60 s long): %d tasks/get upstream", lists, tasks+1, tasks, got)
			if got > lists*perList {
				t.Errorf("%d ListTasks sent %d tasks/get upstream, want at most %d", lists, got, lists*perList)
			}
			// The short task ends upstream; a later ListTasks shows it.
			eventually(t, 60*time.Second, "ListTasks shows the short task completed", func() bool {
				lst, err := c.ListTasks(ann, &toolsvcv1.ListTasksRequest{Server: name})
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range lst.GetTasks() {
					if x.GetTaskId() == short.GetTaskId() {
						return x.GetStatus() == toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED
					}
				}
				t.Fatalf("the short task is not listed")
				return false
			})
		})
	}
}

// TestWatchTaskBound: with --max-task-watches-per-principal 3, ann's
// fourth concurrent WatchTask is RESOURCE_EXHAUSTED TOO_MANY_TASK_WATCHES
// (metadata limit), while bob still watches his own task; once one of
// ann's watches ends she may watch again.
func TestWatchTaskBound(t *testing.T) {
	t.Parallel()
	all := taskServers(t)
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: servers{"tsh": all["tsh"]}}, "--max-task-watches-per-principal", "3")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ann, bob := as(ctx, annTasks), as(ctx, bobTasks)
	c := p.client
	type watch struct {
		cancel context.CancelFunc
		first  *toolsvcv1.WatchTaskResponse
	}
	open := func(who context.Context, handle string) (*watch, error) {
		wctx, wcancel := context.WithCancel(who)
		st, err := c.WatchTask(wctx, &toolsvcv1.WatchTaskRequest{Handle: handle})
		if err != nil {
			wcancel()
			return nil, err
		}
		m, err := st.Recv()
		if err != nil {
			wcancel()
			return nil, err
		}
		return &watch{cancel: wcancel, first: m}, nil
	}
	var watches []*watch
	for i := range 3 {
		task := startTask(t, ann, c, "tsh__slow", `{"ms": 60000}`)
		w, err := open(ann, task.GetHandle())
		if err != nil {
			t.Fatalf("ann's watch %d: %v", i+1, err)
		}
		defer w.cancel()
		watches = append(watches, w)
	}
	fourth := startTask(t, ann, c, "tsh__slow", `{"ms": 60000}`)
	_, err := open(ann, fourth.GetHandle())
	wantStatus(t, err, codes.ResourceExhausted, "TOO_MANY_TASK_WATCHES", "tsh", "tsh__slow")
	if md := errorInfo(t, err).GetMetadata(); md["limit"] != "max_task_watches_per_principal" || md["principal"] != "ann" {
		t.Errorf("TOO_MANY_TASK_WATCHES metadata = %v", md)
	}

	// bob is not limited by ann's watches.
	bobTask := startTask(t, bob, c, "tsh__slow", `{"ms": 60000}`)
	bw, err := open(bob, bobTask.GetHandle())
	if err != nil {
		t.Fatalf("bob's watch while ann is at her bound: %v", err)
	}
	defer bw.cancel()

	// One of ann's watches ends: she may watch the fourth task.
	watches[0].cancel()
	eventually(t, 30*time.Second, "ann watches again once a watch ended", func() bool {
		w, err := open(ann, fourth.GetHandle())
		if err != nil {
			return false
		}
		w.cancel()
		return true
	})
}
