package kubediscovery

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/internal/kubetest"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestScale500 is the benchmark (docs/kubernetes.md, "Figures"):
// 500 MCPServers in a real API server are discovered, merged and listed by
// a bridge within 5 s of start; then one object change at a time reaches
// the snapshot (what every replica's watchers are fed from), and the p50 and
// p99 of 100 changes are reported. It creates 500 objects (about 20 s on
// the 2-core box), so it runs with TOOLSVC_KUBE_SCALE=1 only.
func TestScale500(t *testing.T) {
	if os.Getenv("TOOLSVC_KUBE_SCALE") != "1" {
		t.Skip("set TOOLSVC_KUBE_SCALE=1 to run the 500-object benchmark")
	}
	const n = 500
	env := kubetest.Start(t)
	createNamespace(t, env, "tools")
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			newMCPServer(t, env, "tools", fmt.Sprintf("s%03d", i), fmt.Sprintf("http://127.0.0.1:1/s%03d", i))
		}()
	}
	wg.Wait()

	start := time.Now()
	r := startDiscovery(t, env.Config, &config.Kubernetes{Sources: []string{config.SourceMCPServers}})
	if !r.d.WaitForSync(t.Context()) {
		t.Fatal("WaitForSync = false")
	}
	servers, refused := Merge(nil, r.d.Snapshot())
	b, err := mcpbridge.New(mcpbridge.Config{Servers: servers, Refused: refused})
	if err != nil {
		t.Fatalf("mcpbridge.New: %v", err)
	}
	listed := len(b.Servers())
	took := time.Since(start)
	b.Close()
	t.Logf("%d MCPServers discovered, merged and listed by a bridge in %v", listed, took)
	if listed != n || took > 5*time.Second {
		t.Errorf("listed %d in %v, want %d within 5s", listed, took, n)
	}

	var lat []time.Duration
	for i := range 100 {
		o := getMCPServer(t, env, "tools", fmt.Sprintf("s%03d", i))
		url := fmt.Sprintf("http://127.0.0.1:2/changed-%d", i)
		t0 := time.Now()
		setStatus(t, env, o, url, "True")
		r.await(t, "the change", func(s Snapshot) bool {
			f := find(s, fmt.Sprintf("mcpservers/tools/s%03d", i))
			return f != nil && f.Server.URL == url
		})
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	t.Logf("one MCPServer status change → snapshot (debounce 50ms): p50 %v, p99 %v, max %v", lat[49], lat[98], lat[99])
}
