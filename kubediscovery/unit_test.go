package kubediscovery

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestDebounce: a burst is one fire after it has been quiet; a steady
// stream fires at least every maxWait.
func TestDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		dirty := make(chan struct{}, 1)
		var fires []time.Duration
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			runDebounced(ctx, dirty, 100*time.Millisecond, 500*time.Millisecond, func() { fires = append(fires, time.Since(start)) })
		}()
		for range 5 { // a burst of 5 marks 10 ms apart
			dirty <- struct{}{}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(fires) != 1 || fires[0] != 140*time.Millisecond {
			t.Fatalf("burst: fires at %v, want one at 140ms (100ms after the last mark)", fires)
		}
		fires = nil
		start = time.Now()
		for range 100 { // a mark every 50 ms for 5 s: never quiet
			dirty <- struct{}{}
			time.Sleep(50 * time.Millisecond)
		}
		synctest.Wait()
		if len(fires) < 9 {
			t.Errorf("steady stream: %d fires in 5s, want one at least every 500ms", len(fires))
		}
		cancel()
		<-done
	})
}

func mcpServer(ns, name string, ann map[string]string, url string, conds ...[2]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "mcp.x-k8s.io/v1beta1", "kind": "MCPServer"}}
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetAnnotations(ann)
	var cs []any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": "Test"})
	}
	status := map[string]any{"conditions": cs}
	if url != "" {
		status["address"] = map[string]any{"url": url}
	}
	o.Object["status"] = status
	return o
}

func TestFromMCPServer(t *testing.T) {
	avail, verified, unverified := [2]string{"Available", "True"}, [2]string{"Verified", "True"}, [2]string{"Verified", "False"}
	for _, tc := range []struct {
		name              string
		obj               *unstructured.Unstructured
		wantURL, wantName string
		wantProblem       string
	}{
		{"ready", mcpServer("tools", "search", nil, "http://search.tools.svc:8080/mcp", avail, verified), "http://search.tools.svc:8080/mcp", "tools.search", ""},
		{"no Verified condition", mcpServer("tools", "a", nil, "http://a/mcp", avail), "http://a/mcp", "tools.a", ""},
		{"not available", mcpServer("tools", "a", nil, "http://a/mcp"), "", "", "Available condition is True (not set)"},
		{"not verified", mcpServer("tools", "a", nil, "http://a/mcp", avail, unverified), "", "", "Verified condition is True (False, Test)"},
		{"no address", mcpServer("tools", "a", nil, "", avail), "", "", "status.address.url: empty"},
		{"url and name annotations", mcpServer("tools", "a", map[string]string{AnnURL: "http://127.0.0.1:9/mcp", AnnServerName: "alpha"}, "http://a/mcp", avail), "http://127.0.0.1:9/mcp", "alpha", ""},
		{"bad timeout", mcpServer("tools", "a", map[string]string{AnnCallTimeout: "soon"}, "http://a/mcp", avail), "", "", `mcpservers/tools/a: annotation toolsvc.dev/call-timeout: "soon" is not a duration`},
		{"typo", mcpServer("tools", "a", map[string]string{"toolsvc.dev/cal-timeout": "1s"}, "http://a/mcp", avail), "", "", `annotation "toolsvc.dev/cal-timeout": not a toolsvc annotation`},
		{"bad transport", mcpServer("tools", "a", map[string]string{AnnTransport: "stdio"}, "http://a/mcp", avail), "", "", `annotation "toolsvc.dev/transport": "stdio" is not a transport`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fromMCPServer(tc.obj)
			if tc.wantProblem != "" {
				if f == nil || !strings.Contains(f.Problem, tc.wantProblem) {
					t.Fatalf("fromMCPServer = %+v, want a problem containing %q", f, tc.wantProblem)
				}
				return
			}
			if f == nil || f.Problem != "" || f.Server.URL != tc.wantURL || f.Name != tc.wantName || f.Server.Transport != mcpbridge.TransportStreamableHTTP {
				t.Fatalf("fromMCPServer = %+v, want %s at %s", f, tc.wantName, tc.wantURL)
			}
		})
	}
	if f := fromMCPServer(mcpServer("tools", "a", map[string]string{AnnEnabled: "false"}, "http://a/mcp", avail)); f != nil {
		t.Errorf("enabled=false: %+v, want left out", f)
	}
}

func TestFromService(t *testing.T) {
	mcp := MCPServerAppProtocol
	svc := func(ann map[string]string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "tools", Name: "search", Annotations: ann}, Spec: corev1.ServiceSpec{Ports: ports}}
	}
	on := func(kv ...string) map[string]string {
		m := map[string]string{AnnEnabled: "true"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		svc     *corev1.Service
		want    string // URL, or a problem prefixed with "!"
		allowed []string
	}{
		{"one port", svc(on(), corev1.ServicePort{Port: 8080}), "http://search.tools.svc.cluster.local:8080/mcp", nil},
		{"appProtocol port", svc(on(AnnPath, "/rpc"), corev1.ServicePort{Name: "metrics", Port: 9090}, corev1.ServicePort{Name: "m", Port: 80, AppProtocol: &mcp}), "http://search.tools.svc.cluster.local:80/rpc", nil},
		{"named port", svc(on(AnnPort, "api", AnnScheme, "https"), corev1.ServicePort{Name: "metrics", Port: 9090}, corev1.ServicePort{Name: "api", Port: 443}), "https://search.tools.svc.cluster.local:443/mcp", nil},
		{"allow list", svc(on(AnnToolsAllow, "get_*, list_*"), corev1.ServicePort{Port: 1}), "http://search.tools.svc.cluster.local:1/mcp", []string{"get_*", "list_*"}},
		{"ambiguous port", svc(on(), corev1.ServicePort{Port: 1}, corev1.ServicePort{Port: 2}), `!annotation "toolsvc.dev/port": required`, nil},
		{"unknown port", svc(on(AnnPort, "web"), corev1.ServicePort{Port: 1}), `!annotation "toolsvc.dev/port": "web" names no port`, nil},
		{"bad enabled", svc(map[string]string{AnnEnabled: "yes"}, corev1.ServicePort{Port: 1}), `!annotation "toolsvc.dev/enabled": "yes"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fromService(tc.svc, "cluster.local")
			if p, ok := strings.CutPrefix(tc.want, "!"); ok {
				if f == nil || !strings.Contains(f.Problem, p) || !strings.HasPrefix(f.Problem, "services/tools/search: ") {
					t.Fatalf("fromService = %+v, want a problem naming the Service and containing %q", f, p)
				}
				return
			}
			if f == nil || f.Problem != "" || f.Server.URL != tc.want || f.Name != "tools.search" {
				t.Fatalf("fromService = %+v, want tools.search at %s", f, tc.want)
			}
			if tc.allowed != nil && strings.Join(f.Server.ToolsAllow, "|") != strings.Join(tc.allowed, "|") {
				t.Errorf("ToolsAllow = %q, want %q", f.Server.ToolsAllow, tc.allowed)
			}
		})
	}
	if f := fromService(svc(nil, corev1.ServicePort{Port: 1}), ""); f != nil {
		t.Errorf("a Service without the annotation: %+v, want left out", f)
	}
}

func TestMerge(t *testing.T) {
	file := []mcpbridge.ServerConfig{{Name: "search", Transport: mcpbridge.TransportStreamableHTTP, URL: "http://file/mcp"}}
	found := func(src, name string) Found {
		return Found{Source: src, Name: name, Server: mcpbridge.ServerConfig{Name: name, Transport: mcpbridge.TransportStreamableHTTP, URL: "http://" + name + "/mcp"}}
	}
	snap := Snapshot{
		Found: []Found{
			found("mcpservers/a/search", "search"), // the file's name
			found("mcpservers/a/x", "a.x"),
			found("services/a/x", "a.x"), // the MCPServer's name
			{Source: "services/a/bad", Problem: "services/a/bad: annotation: nope"},
		},
		Sources: []SourceStatus{{Source: "mcpservers", Synced: true}, {Source: "services", Synced: true, Err: "forbidden"}},
	}
	servers, refused := Merge(file, snap)
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "search,a.x" || servers[0].URL != "http://file/mcp" {
		t.Errorf("servers = %v, want the file's search and mcpservers/a/x", names)
	}
	reasons := map[string]string{}
	for _, r := range refused {
		reasons[r.Name] = r.Reason
	}
	for name, want := range map[string]string{
		"kubernetes:mcpservers/a/search": `server name "search" is taken by the configuration file`,
		"kubernetes:services/a/x":        `server name "a.x" is taken by mcpservers/a/x`,
		"kubernetes:services/a/bad":      "annotation: nope",
		"kubernetes:services":            "cannot list/watch services (the upstreams found before stay): forbidden",
	} {
		if !strings.Contains(reasons[name], want) {
			t.Errorf("refused[%s] = %q, want it to contain %q", name, reasons[name], want)
		}
	}
	if len(refused) != 4 {
		t.Errorf("refused = %v, want 4", refused)
	}
}
