package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/kubediscovery"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service"
)

// kubeSyncTimeout bounds how long serve waits for discovery's first list
// before it starts the bridge with what it has (a source that cannot list,
// RBAC forbidden say, never lists: it is reported, and serve goes on).
const kubeSyncTimeout = 10 * time.Second

// kubeDiscovery runs discovery for serve: its reflectors' goroutine, the
// latest snapshot, and where snapshots go once the config manager exists.
type kubeDiscovery struct {
	d      *kubediscovery.Discovery
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	last  kubediscovery.Snapshot
	apply func(kubediscovery.Snapshot) // nil until the config manager exists
}

// restConfig is the API server connection: --kubeconfig, else the
// section's kubeconfig, else the pod's service account.
func restConfig(flagPath string, k *config.Kubernetes) (*rest.Config, string, error) {
	path := flagPath
	if path == "" {
		path = k.Kubeconfig
	}
	if path == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", fmt.Errorf("kubernetes: not in a cluster (%w); pass --kubeconfig or set kubernetes.kubeconfig", err)
		}
		return c, "in-cluster", nil
	}
	c, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes: kubeconfig %s: %w", path, err)
	}
	return c, path, nil
}

// startKubeDiscovery starts discovery and waits (at most kubeSyncTimeout)
// for its first list, so the bridge starts with the discovered servers.
func startKubeDiscovery(ctx context.Context, kubeconfig string, k *config.Kubernetes, log *slog.Logger) (*kubeDiscovery, error) {
	rc, from, err := restConfig(kubeconfig, k)
	if err != nil {
		return nil, err
	}
	kd := &kubeDiscovery{done: make(chan struct{})}
	kd.d, err = kubediscovery.New(kubediscovery.Options{Config: rc, Kubernetes: k, Logger: log, OnChange: kd.changed})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	kd.cancel = cancel
	go func() {
		defer close(kd.done)
		kd.d.Run(rctx)
	}()
	sctx, scancel := context.WithTimeout(ctx, kubeSyncTimeout)
	synced := kd.d.WaitForSync(sctx)
	scancel()
	first := kd.d.Snapshot() // the caches now: no older than what Run delivered
	kd.mu.Lock()
	kd.last = first
	kd.mu.Unlock()
	log.Info("kubernetes discovery started", "sources", k.Sources, "namespaces", k.Namespaces, "selector", k.LabelSelector,
		"credentials", from, "synced", synced, "found", len(first.Found))
	if !synced {
		log.Warn("kubernetes discovery: not every source listed within the start-up bound; serving the file's servers and what was found, the rest follows", "bound", kubeSyncTimeout)
	}
	return kd, nil
}

// changed receives discovery's snapshots.
func (kd *kubeDiscovery) changed(s kubediscovery.Snapshot) {
	kd.mu.Lock()
	kd.last = s
	apply := kd.apply
	kd.mu.Unlock()
	if apply != nil {
		apply(s)
	}
}

// attach sends snapshots to apply from now on, starting with the latest.
func (kd *kubeDiscovery) attach(apply func(kubediscovery.Snapshot)) {
	kd.mu.Lock()
	kd.apply = apply
	last := kd.last
	kd.mu.Unlock()
	apply(last)
}

func (kd *kubeDiscovery) snapshot() kubediscovery.Snapshot {
	kd.mu.Lock()
	defer kd.mu.Unlock()
	return kd.last
}

// sources is the live state of discovery's sources, for ListServers.
func (kd *kubeDiscovery) sources() []service.DiscoverySource {
	var out []service.DiscoverySource
	for _, s := range kd.d.Sources() {
		out = append(out, service.DiscoverySource{Name: s.Source, State: string(s.State), Since: s.Since, Err: s.Err, Synced: s.Synced, Objects: s.Objects})
	}
	return out
}

// stop ends discovery and waits for its goroutines; idempotent.
func (kd *kubeDiscovery) stop() {
	kd.once.Do(func() {
		kd.cancel()
		<-kd.done
	})
}

// mergeDiscovered is cfg with the discovered servers added and the refused
// reported (kubediscovery.Merge); secrets are every server's redactions.
func mergeDiscovered(cfg mcpbridge.Config, snap kubediscovery.Snapshot, secrets []string) mcpbridge.Config {
	servers, refused := kubediscovery.Merge(cfg.Servers, snap)
	n := len(cfg.Servers)
	for i := n; i < len(servers); i++ {
		servers[i].Secrets = append(servers[i].Secrets, secrets...)
	}
	cfg.Servers, cfg.Refused = servers, refused
	return cfg
}

// discoveredObjects names the object each discovered server of merged
// came from: Merge keeps the file's nFile servers first and appends the
// discovered ones it keeps, each the first object (by source) asking for
// that name without a problem.
func discoveredObjects(nFile int, merged []mcpbridge.ServerConfig, snap kubediscovery.Snapshot) map[string]string {
	if nFile >= len(merged) {
		return nil
	}
	want := make(map[string]bool, len(merged)-nFile)
	for _, sc := range merged[nFile:] {
		want[sc.Name] = true
	}
	out := make(map[string]string, len(want))
	for _, f := range snap.Found {
		if _, done := out[f.Name]; f.Problem == "" && want[f.Name] && !done {
			out[f.Name] = f.Source
		}
	}
	return out
}

// authSecrets are the auth section's secrets (nil without one), redacted
// in every server's messages.
func authSecrets(c *config.Config) []string {
	if c == nil || c.Auth == nil {
		return nil
	}
	return c.Auth.Secrets
}
