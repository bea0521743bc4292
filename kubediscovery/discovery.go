// Package kubediscovery finds upstream MCP servers in Kubernetes: the SIG
// mcp-lifecycle-operator's MCPServer resources (mcp.x-k8s.io/v1beta1) and
// Services carrying toolsvc's annotations (objects.go), through client-go
// shared informers, and merges them with the configuration file's servers
// (Merge) into the one configuration the bridge's Reconfigure applies.
//
//	API server ──list/watch──► informers (one per source and namespace)
//	                              │ events only mark dirty (capacity 1)
//	                              ▼
//	                      Run's debounce loop ──► Snapshot ──► OnChange
//
// Guarantees: no polling (informers list once, then watch, resync from their
// cache); a watch that expires (410 Gone) or breaks is relisted by the
// informer without emptying its cache, so an API server outage keeps every
// upstream; a burst of changes is one OnChange after the debounce (at most
// five debounces after its first change); a source that cannot list (RBAC
// forbidden, API server down) is reported in Snapshot.Sources, never a
// crash. Every goroutine is Run's and has ended when Run returns.
//
// The bridge and the service never see client-go: what leaves this package
// is mcpbridge.ServerConfig and mcpbridge.RefusedServer.
package kubediscovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// MCPServerResource is the SIG operator's MCPServer resource.
var MCPServerResource = schema.GroupVersionResource{Group: "mcp.x-k8s.io", Version: "v1beta1", Resource: "mcpservers"}

// Options configure a Discovery.
type Options struct {
	// Config reaches the API server (rest.InClusterConfig or a kubeconfig).
	Config *rest.Config
	// Kubernetes is the configuration file's section (sources, namespaces,
	// selector, resync, debounce).
	Kubernetes *config.Kubernetes
	Logger     *slog.Logger
	// OnChange receives each new snapshot, one call at a time, from Run's
	// goroutine, once changes have settled for the debounce.
	OnChange func(Snapshot)
}

// Found is one discovered object: an upstream (Server set, Problem empty)
// or a refusal (Problem says why, naming the object and the annotation or
// field).
type Found struct {
	// Source names the object: "mcpservers/<ns>/<name>" or
	// "services/<ns>/<name>".
	Source string
	// Name is the server name it asks for ("" when it has none yet).
	Name    string
	Server  mcpbridge.ServerConfig
	Problem string
}

// SourceStatus is the state of one source in one namespace.
type SourceStatus struct {
	// Source is "mcpservers" or "services", with "/<namespace>" when
	// namespaces are listed.
	Source string
	// Synced: the initial list has completed (the source's objects are in
	// the snapshot).
	Synced bool
	// Err is the last list or watch failure not yet recovered from ("":
	// healthy), e.g. RBAC forbidden or the API server unreachable.
	Err string
}

// Snapshot is the discovered state at one moment.
type Snapshot struct {
	Found   []Found        // sorted by Source
	Sources []SourceStatus // sorted by Source
}

// Discovery runs the informers of the enabled sources.
type Discovery struct {
	opts    Options
	log     *slog.Logger
	sources []*source
	dirty   chan struct{}
}

// source is one informer: a kind of object in one namespace (or all).
type source struct {
	name     string
	informer cache.SharedIndexInformer

	mu      sync.Mutex
	err     string
	errRV   string // LastSyncResourceVersion when err was seen
	errTime time.Time
}

// New builds the informers (it starts nothing: see Run).
func New(opts Options) (*Discovery, error) {
	k := opts.Kubernetes
	if k == nil || opts.Config == nil {
		return nil, errors.New("kubediscovery: Options.Kubernetes and Options.Config are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OnChange == nil {
		opts.OnChange = func(Snapshot) {}
	}
	d := &Discovery{opts: opts, log: opts.Logger, dirty: make(chan struct{}, 1)}
	rc := rest.CopyConfig(opts.Config)
	if rc.UserAgent == "" {
		rc.UserAgent = "toolsvc-kubediscovery"
	}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = k.LabelSelector }
	namespaces := k.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	suffix := func(ns string) string {
		if ns == metav1.NamespaceAll {
			return ""
		}
		return "/" + ns
	}
	if k.Has(config.SourceMCPServers) {
		dc, err := dynamic.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("kubediscovery: %w", err)
		}
		for _, ns := range namespaces {
			f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, k.Resync.D, ns, tweak)
			d.sources = append(d.sources, &source{name: config.SourceMCPServers + suffix(ns), informer: f.ForResource(MCPServerResource).Informer()})
		}
	}
	if k.Has(config.SourceServices) {
		kc, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("kubediscovery: %w", err)
		}
		for _, ns := range namespaces {
			f := informers.NewSharedInformerFactoryWithOptions(kc, k.Resync.D, informers.WithNamespace(ns), informers.WithTweakListOptions(tweak))
			d.sources = append(d.sources, &source{name: config.SourceServices + suffix(ns), informer: f.Core().V1().Services().Informer()})
		}
	}
	for _, s := range d.sources {
		// Handlers only mark dirty: Run's loop builds the snapshot.
		mark := func(any) { s.clearErr(); d.markDirty() }
		if _, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: mark, DeleteFunc: mark, UpdateFunc: func(_, n any) { mark(n) },
		}); err != nil {
			return nil, fmt.Errorf("kubediscovery: %w", err)
		}
		if err := s.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			s.setErr(err)
			d.log.Warn("kubernetes discovery: list/watch failed; keeping the upstreams found so far", "source", s.name, "error", err)
			d.markDirty()
		}); err != nil {
			return nil, fmt.Errorf("kubediscovery: %w", err)
		}
	}
	return d, nil
}

func (s *source) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err, s.errRV, s.errTime = err.Error(), s.informer.LastSyncResourceVersion(), time.Now()
}

func (s *source) clearErr() {
	s.mu.Lock()
	s.err = ""
	s.mu.Unlock()
}

// status reports the source; an error is cleared once the informer has
// synced past it (a new list or a bookmark moved its resource version).
func (s *source) status() SourceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != "" && s.informer.LastSyncResourceVersion() != s.errRV {
		s.err = ""
	}
	return SourceStatus{Source: s.name, Synced: s.informer.HasSynced(), Err: s.err}
}

func (d *Discovery) markDirty() {
	select {
	case d.dirty <- struct{}{}:
	default:
	}
}

// Run starts the informers and delivers snapshots to OnChange until ctx
// ends; it returns once every informer goroutine has.
func (d *Discovery) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range d.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.informer.RunWithContext(ctx)
		}()
	}
	debounce := d.opts.Kubernetes.Debounce.D
	runDebounced(ctx, d.dirty, debounce, 5*debounce, func() { d.opts.OnChange(d.Snapshot()) })
	wg.Wait()
}

// WaitForSync waits until every source has listed once or ctx ends, and
// says whether they all did. A source that cannot list (forbidden, API
// server down) never syncs: bound ctx.
func (d *Discovery) WaitForSync(ctx context.Context) bool {
	syncs := make([]cache.InformerSynced, 0, len(d.sources))
	for _, s := range d.sources {
		syncs = append(syncs, s.informer.HasSynced)
	}
	return cache.WaitForCacheSync(ctx.Done(), syncs...)
}

// Snapshot reads every informer's cache.
func (d *Discovery) Snapshot() Snapshot {
	var snap Snapshot
	domain := d.opts.Kubernetes.ClusterDomain
	for _, s := range d.sources {
		snap.Sources = append(snap.Sources, s.status())
		for _, o := range s.informer.GetStore().List() {
			var f *Found
			switch o := o.(type) {
			case *unstructured.Unstructured:
				f = fromMCPServer(o)
			case *corev1.Service:
				f = fromService(o, domain)
			}
			if f != nil {
				snap.Found = append(snap.Found, *f)
			}
		}
	}
	slices.SortFunc(snap.Found, func(a, b Found) int { return strings.Compare(a.Source, b.Source) })
	slices.SortFunc(snap.Sources, func(a, b SourceStatus) int { return strings.Compare(a.Source, b.Source) })
	return snap
}

// RefusedPrefix starts the name under which ListServers reports a refused
// object or a failing source.
const RefusedPrefix = "kubernetes:"

// Merge adds the discovered upstreams of snap to the file's servers: the
// servers to run and the refused (objects that are not upstreams, with
// why, and sources that cannot list). A discovered name the file holds is
// refused for the object; two objects asking for one name: the first by
// source keeps it; an object that breaks a rule across servers
// (mcpbridge.CheckServers: a namePrefix another holds) is refused too. The
// file's servers are never displaced.
func Merge(file []mcpbridge.ServerConfig, snap Snapshot) ([]mcpbridge.ServerConfig, []mcpbridge.RefusedServer) {
	servers := slices.Clone(file)
	owner := map[string]string{} // server name → "the file" or the object
	for _, sc := range file {
		owner[sc.Name] = "the configuration file"
	}
	var refused []mcpbridge.RefusedServer
	discovered := map[string]string{} // server name → source
	for _, f := range snap.Found {
		switch {
		case f.Problem != "":
			refused = append(refused, mcpbridge.RefusedServer{Name: RefusedPrefix + f.Source, Reason: f.Problem})
		case owner[f.Name] != "":
			refused = append(refused, mcpbridge.RefusedServer{Name: RefusedPrefix + f.Source,
				Reason: fmt.Sprintf("%s: server name %q is taken by %s; set annotation %s to another name", f.Source, f.Name, owner[f.Name], AnnServerName)})
		default:
			owner[f.Name] = f.Source
			discovered[f.Name] = f.Source
			servers = append(servers, f.Server)
		}
	}
	// Rules across servers: drop the discovered servers a problem names,
	// until none is left (each pass drops at least one, or stops).
	for {
		var drop []string
		for _, fe := range mcpbridge.CheckServers(servers) {
			if src, ok := discovered[fe.Server]; ok && !slices.Contains(drop, fe.Server) {
				drop = append(drop, fe.Server)
				refused = append(refused, mcpbridge.RefusedServer{Name: RefusedPrefix + src, Reason: fmt.Sprintf("%s: %v", src, fe)})
			}
		}
		if len(drop) == 0 {
			break
		}
		servers = slices.DeleteFunc(servers, func(sc mcpbridge.ServerConfig) bool { return slices.Contains(drop, sc.Name) })
		for _, n := range drop {
			delete(discovered, n)
		}
	}
	for _, st := range snap.Sources {
		switch {
		case st.Err != "":
			refused = append(refused, mcpbridge.RefusedServer{Name: RefusedPrefix + st.Source,
				Reason: "cannot list/watch " + st.Source + " (the upstreams found before stay): " + st.Err})
		case !st.Synced:
			refused = append(refused, mcpbridge.RefusedServer{Name: RefusedPrefix + st.Source, Reason: "not listed yet"})
		}
	}
	return servers, refused
}

// runDebounced calls fire once marks on dirty have been quiet for quiet,
// but no later than maxWait after the first mark of a burst, until ctx
// ends. fire runs on the caller's goroutine.
func runDebounced(ctx context.Context, dirty <-chan struct{}, quiet, maxWait time.Duration, fire func()) {
	var quietT, maxT *time.Timer
	var quietC, maxC <-chan time.Time
	stop := func() {
		if quietT != nil {
			quietT.Stop()
			maxT.Stop()
		}
		quietC, maxC = nil, nil
	}
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-dirty:
			if quietC == nil {
				quietT, maxT = time.NewTimer(quiet), time.NewTimer(maxWait)
				quietC, maxC = quietT.C, maxT.C
			} else {
				quietT.Reset(quiet)
			}
			continue
		case <-quietC:
		case <-maxC:
		}
		stop()
		fire()
	}
}
