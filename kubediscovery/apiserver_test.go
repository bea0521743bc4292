package kubediscovery

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/internal/kubetest"
)

// The tests in this file run against a real kube-apiserver and etcd
// (internal/kubetest). Deadlines are generous: they bound a wait, they do
// not measure.
const waitFor = 20 * time.Second

// running is a Discovery under test and its latest snapshot.
type running struct {
	d    *Discovery
	mu   sync.Mutex
	last Snapshot
	n    int
}

func (r *running) snapshot() (Snapshot, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.n
}

func startDiscovery(t *testing.T, cfg *rest.Config, k *config.Kubernetes) *running {
	t.Helper()
	return startDiscoveryLogged(t, cfg, k, nil)
}

func startDiscoveryLogged(t *testing.T, cfg *rest.Config, k *config.Kubernetes, log *slog.Logger) *running {
	t.Helper()
	if k.Debounce.D == 0 {
		k.Debounce.D = 50 * time.Millisecond
	}
	if k.Resync.D == 0 {
		k.Resync.D = time.Hour
	}
	r := &running{}
	d, err := New(Options{Config: cfg, Kubernetes: k, Logger: log, OnChange: func(s Snapshot) {
		r.mu.Lock()
		r.last, r.n = s, r.n+1
		r.mu.Unlock()
	}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.d = d
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// await polls the latest snapshot until cond holds.
func (r *running) await(t *testing.T, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	return r.awaitWithin(t, waitFor, what, cond)
}

func (r *running) awaitWithin(t *testing.T, waitFor time.Duration, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		s, _ := r.snapshot()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot with %s within %s; last: %+v", what, waitFor, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func find(s Snapshot, source string) *Found {
	for i := range s.Found {
		if s.Found[i].Source == source {
			return &s.Found[i]
		}
	}
	return nil
}

func createNamespace(t *testing.T, env *kubetest.Env, ns string) {
	t.Helper()
	if _, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
}

// newMCPServer creates an MCPServer and, when url is set, gives it the
// status the operator would (through the status subresource).
func newMCPServer(t *testing.T, env *kubetest.Env, ns, name, url string) {
	t.Helper()
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "mcp.x-k8s.io/v1beta1", "kind": "MCPServer",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"source": map[string]any{"type": "ContainerImage", "containerImage": map[string]any{"ref": "example.com/mcp:1"}}, "config": map[string]any{"port": int64(8080)}},
	}}
	created, err := env.Dyn.Resource(MCPServerResource).Namespace(ns).Create(t.Context(), o, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create MCPServer %s/%s: %v", ns, name, err)
	}
	if url != "" {
		setStatus(t, env, created, url, "True")
	}
}

// setStatus writes status.address.url and the Available and Verified
// conditions through the status subresource.
func setStatus(t *testing.T, env *kubetest.Env, o *unstructured.Unstructured, url, ready string) {
	t.Helper()
	now := time.Now().UTC().Format(time.RFC3339)
	cond := func(typ string) map[string]any {
		return map[string]any{"type": typ, "status": ready, "reason": "Test", "message": "set by the test", "lastTransitionTime": now}
	}
	o.Object["status"] = map[string]any{
		"address":    map[string]any{"url": url},
		"serverInfo": map[string]any{"name": "test", "version": "1", "protocolVersion": "2025-11-25"},
		"conditions": []any{cond("Accepted"), cond("Available"), cond("Verified")},
	}
	if _, err := env.Dyn.Resource(MCPServerResource).Namespace(o.GetNamespace()).UpdateStatus(t.Context(), o, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status of %s: %v", o.GetName(), err)
	}
}

func getMCPServer(t *testing.T, env *kubetest.Env, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := env.Dyn.Resource(MCPServerResource).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get MCPServer: %v", err)
	}
	return o
}

// TestDiscoveryAgainstAPIServer: Services and MCPServers created, updated
// and deleted in a real API server come and go in the snapshots; only the
// selected namespace and labels are read.
func TestDiscoveryAgainstAPIServer(t *testing.T) {
	env := kubetest.Start(t)
	createNamespace(t, env, "tools")
	createNamespace(t, env, "other")
	r := startDiscovery(t, env.Config, &config.Kubernetes{
		Sources: []string{config.SourceMCPServers, config.SourceServices}, Namespaces: []string{"tools"}, LabelSelector: "toolsvc!=ignore"})
	if !r.d.WaitForSync(t.Context()) {
		t.Fatal("WaitForSync = false")
	}

	// A Service opts in with its annotations.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "search", Namespace: "tools",
		Annotations: map[string]string{AnnEnabled: "true", AnnURL: "http://127.0.0.1:1/mcp", AnnCallTimeout: "7s"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}}
	if _, err := env.Kube.CoreV1().Services("tools").Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := r.await(t, "the Service", func(s Snapshot) bool { return find(s, "services/tools/search") != nil })
	if f := find(s, "services/tools/search"); f.Problem != "" || f.Name != "tools.search" || f.Server.URL != "http://127.0.0.1:1/mcp" || f.Server.CallTimeout != 7*time.Second {
		t.Fatalf("found %+v", f)
	}
	// Updated: the new URL; a bad annotation: refused, naming it.
	svc, _ = env.Kube.CoreV1().Services("tools").Get(t.Context(), "search", metav1.GetOptions{})
	svc.Annotations[AnnURL] = "http://127.0.0.1:2/mcp"
	if svc, _ = env.Kube.CoreV1().Services("tools").Update(t.Context(), svc, metav1.UpdateOptions{}); svc == nil {
		t.Fatal("update the Service failed")
	}
	r.await(t, "the Service's new URL", func(s Snapshot) bool {
		f := find(s, "services/tools/search")
		return f != nil && f.Server.URL == "http://127.0.0.1:2/mcp"
	})
	svc.Annotations[AnnCallTimeout] = "soon"
	if _, err := env.Kube.CoreV1().Services("tools").Update(t.Context(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.await(t, "the Service refused for its call-timeout", func(s Snapshot) bool {
		f := find(s, "services/tools/search")
		return f != nil && strings.Contains(f.Problem, `services/tools/search: annotation toolsvc.dev/call-timeout: "soon" is not a duration`)
	})
	if err := env.Kube.CoreV1().Services("tools").Delete(t.Context(), "search", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.await(t, "the Service gone", func(s Snapshot) bool { return find(s, "services/tools/search") == nil })

	// An MCPServer: waiting until Available, then an upstream at its
	// status.address.url, then gone.
	newMCPServer(t, env, "tools", "files", "")
	r.await(t, "the MCPServer waiting", func(s Snapshot) bool {
		f := find(s, "mcpservers/tools/files")
		return f != nil && strings.Contains(f.Problem, "Available condition is True (not set)")
	})
	setStatus(t, env, getMCPServer(t, env, "tools", "files"), "http://127.0.0.1:3/mcp", "True")
	r.await(t, "the MCPServer available", func(s Snapshot) bool {
		f := find(s, "mcpservers/tools/files")
		return f != nil && f.Problem == "" && f.Server.URL == "http://127.0.0.1:3/mcp" && f.Name == "tools.files"
	})
	setStatus(t, env, getMCPServer(t, env, "tools", "files"), "http://127.0.0.1:3/mcp", "False")
	r.await(t, "the MCPServer unavailable again", func(s Snapshot) bool {
		f := find(s, "mcpservers/tools/files")
		return f != nil && strings.Contains(f.Problem, "Available condition is True (False")
	})
	if err := env.Dyn.Resource(MCPServerResource).Namespace("tools").Delete(t.Context(), "files", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.await(t, "the MCPServer gone", func(s Snapshot) bool { return find(s, "mcpservers/tools/files") == nil })

	// Other namespaces and unselected labels are not read: once a later
	// object is seen, the earlier ones would have been.
	newMCPServer(t, env, "other", "elsewhere", "http://127.0.0.1:4/mcp")
	ignored := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ignored", Namespace: "tools", Labels: map[string]string{"toolsvc": "ignore"},
		Annotations: map[string]string{AnnEnabled: "true", AnnURL: "http://127.0.0.1:5/mcp"}}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := env.Kube.CoreV1().Services("tools").Create(t.Context(), ignored, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	newMCPServer(t, env, "tools", "marker", "http://127.0.0.1:6/mcp")
	s = r.await(t, "the marker", func(s Snapshot) bool { return find(s, "mcpservers/tools/marker") != nil })
	if len(s.Found) != 1 {
		t.Errorf("found %+v, want only the marker (other namespaces and labels not selected are not read)", s.Found)
	}
}

// TestForbiddenThenGranted: a user without list/watch gets a clear status
// (the source's error, a refused entry naming it), no crash; once granted,
// discovery recovers by itself.
func TestForbiddenThenGranted(t *testing.T) {
	env := kubetest.Start(t)
	createNamespace(t, env, "tools")
	newMCPServer(t, env, "tools", "files", "http://127.0.0.1:3/mcp")
	cfg, _ := env.User(t, "toolsvc")
	r := startDiscovery(t, cfg, &config.Kubernetes{Sources: []string{config.SourceMCPServers}})
	s := r.await(t, "the source forbidden", func(s Snapshot) bool {
		return len(s.Sources) == 1 && strings.Contains(s.Sources[0].Err, "forbidden")
	})
	_, refused := Merge(nil, s)
	if len(refused) != 1 || refused[0].Name != "kubernetes:mcpservers" || !strings.Contains(refused[0].Reason, `cannot list/watch mcpservers`) ||
		!strings.Contains(refused[0].Reason, "forbidden") {
		t.Errorf("refused = %+v, want kubernetes:mcpservers saying list/watch is forbidden", refused)
	}
	env.Grant(t, "toolsvc", "mcp.x-k8s.io", "mcpservers")
	r.await(t, "the MCPServer once granted", func(s Snapshot) bool {
		return find(s, "mcpservers/tools/files") != nil && s.Sources[0].Err == "" && s.Sources[0].Synced
	})
}

// TestAPIServerOutage: kube-apiserver stopped for 20 s under a running
// discovery (SIGTERM, then SIGKILL) loses no upstream (the caches stay);
// the sources turn failing with the connection error, logged once each;
// once it is back on the same port and etcd, an MCPServer created and one
// deleted then reach a snapshot (Backoff: within a few seconds, where
// client-go's default took 20–65 s) and the sources are watching again.
func TestAPIServerOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s outage")
	}
	env := kubetest.Start(t)
	createNamespace(t, env, "tools")
	for _, n := range []string{"a", "b", "c"} {
		newMCPServer(t, env, "tools", n, "http://127.0.0.1:3/"+n)
	}
	var logs syncBuffer
	r := startDiscoveryLogged(t, env.Config, &config.Kubernetes{Sources: []string{config.SourceMCPServers, config.SourceServices}},
		slog.New(slog.NewTextHandler(&logs, nil)))
	watching := func(s Snapshot) bool {
		for _, st := range s.Sources {
			if st.State != StateWatching || st.Err != "" {
				return false
			}
		}
		return len(s.Sources) == 2
	}
	r.await(t, "three MCPServers, both sources watching", func(s Snapshot) bool { return len(s.Found) == 3 && watching(s) })
	stopped := time.Now()
	env.StopAPIServer(t)
	s := r.await(t, "both sources failing: connection refused", func(s Snapshot) bool {
		for _, st := range s.Sources {
			if st.State != StateFailing || !strings.Contains(st.Err, "connection refused") {
				return false
			}
		}
		return len(s.Sources) == 2
	})
	for _, st := range s.Sources {
		if st.Since.Before(stopped) || !st.Synced || st.Source == "mcpservers" && st.Objects != 3 {
			t.Errorf("during the outage: source %+v, want failing since the stop with the connection refused, synced, its objects kept", st)
		}
	}
	if _, refused := Merge(nil, s); len(refused) != 2 || !strings.Contains(refused[0].Reason, "cannot list/watch mcpservers (the upstreams found before stay)") {
		t.Errorf("during the outage: refused %+v, want both sources reported", refused)
	}
	end := time.Now().Add(20 * time.Second)
	for time.Now().Before(end) {
		if s, _ := r.snapshot(); len(s.Found) != 3 {
			t.Fatalf("during the outage: found %+v, want the three MCPServers kept", s.Found)
		}
		if got := len(r.d.Snapshot().Found); got != 3 {
			t.Fatalf("during the outage: the caches hold %d objects, want 3", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, src := range []string{"mcpservers", "services"} {
		// One line per change of state, not one per retry (about 15 in
		// 20 s); the API server's shutdown may let one call through.
		if n := strings.Count(logs.String(), "source failing; keeping the upstreams found so far, retrying\" source="+src+" "); n < 1 || n > 2 {
			t.Errorf("%d 'source failing' log lines for %s during one outage, want 1 (2 if the shutdown let a call through):\n%s", n, src, logs.String())
		}
	}
	// A source may be watching again before StartAPIServer has seen the
	// server ready: "since the return" is since the restart began.
	restarting := time.Now()
	env.StartAPIServer(t)
	back := time.Now()
	newMCPServer(t, env, "tools", "d", "http://127.0.0.1:3/d")
	if err := env.Dyn.Resource(MCPServerResource).Namespace("tools").Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The bound is generous: the order is what is checked; the time it
	// took is logged (docs/kubernetes.md has the figures).
	s = r.awaitWithin(t, 60*time.Second, "changes after the outage, both sources watching", func(s Snapshot) bool {
		return len(s.Found) == 3 && find(s, "mcpservers/tools/d") != nil && find(s, "mcpservers/tools/a") == nil && watching(s)
	})
	t.Logf("after a 20 s outage: the changes made on the API server's return reached a snapshot %v after it was back", time.Since(back))
	for _, st := range s.Sources {
		if st.Since.Before(restarting) {
			t.Errorf("source %+v: watching since before the API server was restarted (%v)", st, restarting)
		}
	}
	if !strings.Contains(logs.String(), "source watching") || !strings.Contains(logs.String(), "was=failing") {
		t.Errorf("no log line of the return:\n%s", logs.String())
	}
}
