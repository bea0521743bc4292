package tests

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/kubetest"
	"github.com/toolsvc/toolsvc/kubediscovery"
)

// changeDeadline is the bound: an object change reaches every
// watcher within 1 s.
const changeDeadline = time.Second

// kubeMCPServer creates an MCPServer whose status (through the status
// subresource, as the operator writes it) says Available and Verified at
// url.
func kubeMCPServer(t *testing.T, env *kubetest.Env, ns, name, url string) {
	t.Helper()
	ctx := t.Context()
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "mcp.x-k8s.io/v1beta1", "kind": "MCPServer",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"source": map[string]any{"type": "ContainerImage"}, "config": map[string]any{"port": int64(8080)}},
	}}
	created, err := env.Dyn.Resource(kubediscovery.MCPServerResource).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create MCPServer: %v", err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	cond := func(typ string) any {
		return map[string]any{"type": typ, "status": "True", "reason": "Test", "message": "", "lastTransitionTime": now}
	}
	created.Object["status"] = map[string]any{"address": map[string]any{"url": url},
		"conditions": []any{cond("Accepted"), cond("Available"), cond("Verified")}}
	if _, err := env.Dyn.Resource(kubediscovery.MCPServerResource).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set MCPServer status: %v", err)
	}
}

// awaitServerTools waits on w for a change that upserts a tool of server
// (present) or removes every tool named server__* (!present), and returns
// how long after start (the change to the object) it came.
func awaitServerTools(t *testing.T, w *watcher, server string, present bool, start time.Time, within time.Duration) time.Duration {
	t.Helper()
	for {
		left := within - time.Since(start)
		if left <= 0 {
			t.Fatalf("server %s (present=%v): no watch event within %s", server, present, within)
		}
		var ev *toolsvcv1.WatchCatalogResponse
		select {
		case e, ok := <-w.events:
			if !ok {
				t.Fatalf("watch ended: %v", <-w.done)
			}
			ev = e
		case <-time.After(left):
			t.Fatalf("server %s (present=%v): no watch event within %s", server, present, within)
		}
		if present {
			for _, tool := range append(ev.GetChanges().GetUpserted(), ev.GetSnapshot().GetTools()...) {
				if tool.GetServer() == server {
					return time.Since(start)
				}
			}
			continue
		}
		for _, name := range ev.GetChanges().GetRemoved() {
			if strings.HasPrefix(name, strings.ReplaceAll(server, ".", "_")+"__") || strings.HasPrefix(name, server+"__") {
				return time.Since(start)
			}
		}
	}
}

// TestKubernetesDiscoveryReplicas: three toolsvc replicas discover from a
// real API server (with RBAC: a user allowed list/watch on exactly
// mcpservers and services): an MCPServer and an annotated Service created
// and deleted come to and leave every replica's WatchCatalog within 1 s;
// a Service asking for a file server's name is refused with the reason in
// ListServers; the replicas reach equal revisions; the API server restarted
// under them changes nothing and discovery goes on.
func TestKubernetesDiscoveryReplicas(t *testing.T) {
	t.Parallel()
	env := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*defaultTestTimeout)
	defer cancel()
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tools"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.Grant(t, "toolsvc", "mcp.x-k8s.io", "mcpservers")
	env.Grant(t, "toolsvc", "", "services")
	_, kubeconfig := env.User(t, "toolsvc")
	upURL := startHTTPUpstream(t)
	c := cfg{
		Kubernetes: &kubeCfg{Sources: []string{"mcpservers", "services"}, Namespaces: []string{"tools"}, Debounce: "50ms"},
		Servers:    servers{"tools.clash": goHTTP(upURL, upstream{})},
	}
	var reps []*toolsvcProc
	var watches []*watcher
	for range 3 {
		p := startToolsvc(t, c, "--kubeconfig", kubeconfig)
		reps = append(reps, p)
		w := startWatch(t, ctx, p.client, "")
		w.next(t, defaultTestTimeout) // the snapshot
		watches = append(watches, w)
	}

	// An MCPServer: its tools reach every watcher within 1 s.
	start := time.Now()
	kubeMCPServer(t, env, "tools", "files", upURL)
	for i, w := range watches {
		took := awaitServerTools(t, w, "tools.files", true, start, changeDeadline)
		t.Logf("replica %d: MCPServer created → tools in WatchCatalog after %v", i, took)
	}
	// An annotated Service with an explicit URL (no cluster network here).
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "search", Namespace: "tools",
		Annotations: map[string]string{kubediscovery.AnnEnabled: "true", kubediscovery.AnnURL: upURL}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}}
	start = time.Now()
	if _, err := env.Kube.CoreV1().Services("tools").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, w := range watches {
		took := awaitServerTools(t, w, "tools.search", true, start, changeDeadline)
		t.Logf("replica %d: Service created → tools in WatchCatalog after %v", i, took)
	}
	// A Service asking for the file's server name: refused, with the reason.
	clash := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "clash", Namespace: "tools",
		Annotations: map[string]string{kubediscovery.AnnEnabled: "true", kubediscovery.AnnURL: upURL, kubediscovery.AnnServerName: "tools.clash"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}}
	if _, err := env.Kube.CoreV1().Services("tools").Create(ctx, clash, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the clash refused in ListServers", func() bool {
		st, err := reps[0].client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
		if err != nil {
			return false
		}
		for _, s := range st.GetServers() {
			if s.GetName() == "kubernetes:services/tools/clash" {
				return strings.Contains(s.GetLastError(), `server name "tools.clash" is taken by the configuration file`)
			}
		}
		return false
	})
	reps[0].log.waitFor(t, regexpMust(`not an upstream.*kubernetes:services/tools/clash`), 10*time.Second)

	// Equal revisions on the three replicas.
	eventually(t, 10*time.Second, "equal revisions", func() bool {
		var revs []string
		for _, p := range reps {
			_, rev := listAll(t, ctx, p.client, 100)
			revs = append(revs, rev)
		}
		return revs[0] == revs[1] && revs[1] == revs[2]
	})

	// A file reload (a server added) keeps the discovered servers: the
	// reload merges the latest snapshot.
	c2 := c
	c2.Servers = servers{"tools.clash": goHTTP(upURL, upstream{}), "extra": goHTTP(upURL, upstream{})}
	writeConfig(t, reps[0].configPath, c2.String())
	eventually(t, 20*time.Second, "the reloaded file's extra server", func() bool {
		tools, _ := listAll(t, ctx, reps[0].client, 100)
		return hasServerTool(tools, "extra")
	})
	if tools, _ := listAll(t, ctx, reps[0].client, 100); !hasServerTool(tools, "tools.files") || !hasServerTool(tools, "tools.search") {
		t.Fatalf("after a file reload: the discovered servers are gone: %v", tools)
	}
	if st := serverStatus(t, ctx, reps[0].client, "kubernetes:services/tools/clash"); !strings.Contains(st.GetLastError(), "taken by the configuration file") {
		t.Errorf("after a file reload: the clash's reason is %q", st.GetLastError())
	}
	writeConfig(t, reps[0].configPath, c.String()) // back to the others' file, for equal revisions below
	eventually(t, 20*time.Second, "the extra server removed again", func() bool {
		tools, _ := listAll(t, ctx, reps[0].client, 100)
		return !hasServerTool(tools, "extra")
	})

	// The API server restarted under the replicas: nothing is lost, and
	// discovery goes on.
	env.StopAPIServer(t)
	env.StartAPIServer(t)
	for _, p := range reps {
		if tools, _ := listAll(t, ctx, p.client, 100); !hasServerTool(tools, "tools.files") || !hasServerTool(tools, "tools.search") {
			t.Fatalf("after the API server restart: tools %v, want tools.files and tools.search kept", tools)
		}
	}
	start = time.Now()
	if err := env.Dyn.Resource(kubediscovery.MCPServerResource).Namespace("tools").Delete(ctx, "files", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// (The informers reconnect after client-go's backoff, a few seconds
	// after a restart: no 1 s bound on this one.)
	for i, w := range watches {
		took := awaitServerTools(t, w, "tools.files", false, start, defaultTestTimeout)
		t.Logf("replica %d: MCPServer deleted after an API server restart → tools gone after %v", i, took)
	}
	start = time.Now()
	if err := env.Kube.CoreV1().Services("tools").Delete(ctx, "search", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Services informer reconnects on a backoff of its own, which the
	// MCPServers informer's return says nothing about (CI, load 10: not
	// within 1 s): no 1 s bound on this one either.
	for i, w := range watches {
		took := awaitServerTools(t, w, "tools.search", false, start, defaultTestTimeout)
		t.Logf("replica %d: Service deleted → tools gone after %v", i, took)
	}
}

func hasServerTool(tools []*toolsvcv1.Tool, server string) bool {
	for _, t := range tools {
		if t.GetServer() == server {
			return true
		}
	}
	return false
}

// TestKubernetesForbidden: a toolsvc whose user may not list MCPServers
// starts, serves its file's servers, and says why in ListServers; no crash.
func TestKubernetesForbidden(t *testing.T) {
	t.Parallel()
	env := kubetest.Start(t)
	_, kubeconfig := env.User(t, "nobody")
	p := startToolsvc(t, cfg{Kubernetes: &kubeCfg{Sources: []string{"mcpservers"}},
		Servers: servers{"up": goStdio(upstream{RefreshInterval: "1h"})}}, "--kubeconfig", kubeconfig)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	st := serverStatus(t, ctx, p.client, "kubernetes:mcpservers")
	if !strings.Contains(st.GetLastError(), "cannot list/watch mcpservers") || !strings.Contains(st.GetLastError(), "forbidden") {
		t.Errorf("kubernetes:mcpservers last_error = %q, want list/watch forbidden", st.GetLastError())
	}
	if tools, _ := listAll(t, ctx, p.client, 100); !hasServerTool(tools, "up") {
		t.Errorf("the file's server is not served: %v", tools)
	}
}

// discoverySource is the named source of p's ListServers (nil if absent).
func discoverySource(t *testing.T, ctx context.Context, p *toolsvcProc, name string) *toolsvcv1.DiscoverySource {
	t.Helper()
	resp, err := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
	if err != nil {
		t.Fatalf("ListServers: %v", err)
	}
	for _, d := range resp.GetDiscoverySources() {
		if d.GetName() == name {
			return d
		}
	}
	return nil
}

// TestKubernetesAPIServerOutage: kube-apiserver killed
// for 20 s under a toolsvc. The source turns failing, with the connection
// error and since when, in ListServers, `toolsvc servers` and the log;
// nothing discovered is dropped; once the API server is back (same port,
// same etcd), an MCPServer created then reaches WatchCatalog (client-go's
// default backoff took 20–65 s here) and the source is watching again.
func TestKubernetesAPIServerOutage(t *testing.T) {
	t.Parallel()
	env := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*defaultTestTimeout)
	defer cancel()
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tools"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.Grant(t, "toolsvc", "mcp.x-k8s.io", "mcpservers")
	_, kubeconfig := env.User(t, "toolsvc")
	upURL := startHTTPUpstream(t)
	kubeMCPServer(t, env, "tools", "early", upURL)
	p := startToolsvc(t, cfg{Kubernetes: &kubeCfg{Sources: []string{"mcpservers"}, Namespaces: []string{"tools"}, Debounce: "50ms"}},
		"--kubeconfig", kubeconfig)
	w := startWatch(t, ctx, p.client, "")
	w.next(t, defaultTestTimeout) // the snapshot
	eventually(t, defaultTestTimeout, "the source watching with the early MCPServer", func() bool {
		d := discoverySource(t, ctx, p, "mcpservers/tools")
		tools, _ := listAll(t, ctx, p.client, 100)
		return d.GetState() == toolsvcv1.DiscoverySourceState_DISCOVERY_SOURCE_STATE_WATCHING && d.GetSynced() && d.GetObjectCount() == 1 &&
			hasServerTool(tools, "tools.early")
	})

	stopped := time.Now()
	env.StopAPIServer(t)
	var failing *toolsvcv1.DiscoverySource
	eventually(t, defaultTestTimeout, "the source failing in ListServers", func() bool {
		failing = discoverySource(t, ctx, p, "mcpservers/tools")
		return failing.GetState() == toolsvcv1.DiscoverySourceState_DISCOVERY_SOURCE_STATE_FAILING
	})
	if !strings.Contains(failing.GetLastError(), "connection refused") || failing.GetStateTime().AsTime().Before(stopped.Add(-time.Second)) {
		t.Errorf("failing source = %v, want the connection refused since the stop (%v)", failing, stopped)
	}
	p.log.waitFor(t, regexpMust(`source failing.*source=mcpservers/tools.*connection refused`), defaultTestTimeout)
	out, err := exec.CommandContext(ctx, bin.toolsvc, "servers", "--addr", p.addr).CombinedOutput()
	if err != nil || !regexpMust(`(?m)^mcpservers/tools\s+failing\s+\d\d:\d\d:\d\d\s+true\s+1\s+.*connection refused`).Match(out) {
		t.Errorf("toolsvc servers (%v):\n%s", err, out)
	}
	// 20 s down: nothing discovered is dropped.
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if tools, _ := listAll(t, ctx, p.client, 100); !hasServerTool(tools, "tools.early") {
			t.Fatalf("during the outage: tools %v, want tools.early kept", tools)
		}
	}

	// The source may be watching again before StartAPIServer has seen the
	// server ready: "since the return" is since the restart began.
	restarting := time.Now()
	env.StartAPIServer(t)
	start := time.Now()
	kubeMCPServer(t, env, "tools", "late", upURL)
	took := awaitServerTools(t, w, "tools.late", true, start, defaultTestTimeout)
	t.Logf("API server back after a 20 s outage → an MCPServer created then reached WatchCatalog after %v", took)
	d := discoverySource(t, ctx, p, "mcpservers/tools")
	if d.GetState() != toolsvcv1.DiscoverySourceState_DISCOVERY_SOURCE_STATE_WATCHING || d.GetLastError() != "" || d.GetStateTime().AsTime().Before(restarting) {
		t.Errorf("after the MCPServer arrived: source %v, want watching since the return", d)
	}
	p.log.waitFor(t, regexpMust(`source watching.*source=mcpservers/tools.*was=(failing|listing)`), defaultTestTimeout)
}
