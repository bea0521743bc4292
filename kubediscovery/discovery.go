// Package kubediscovery finds upstream MCP servers in Kubernetes: the SIG
// mcp-lifecycle-operator's MCPServer resources (mcp.x-k8s.io/v1beta1) and
// Services carrying toolsvc's annotations (objects.go), through client-go
// reflectors, and merges them with the configuration file's servers
// (Merge) into the one configuration the bridge's Reconfigure applies.
//
//	API server ──list/watch──► reflectors (one per source and namespace)
//	   ▲ every call observed:       │ store writes only mark dirty (capacity 1)
//	   │ listing/watching/failing   ▼
//	   └──────────────────── Run's debounce loop ──► Snapshot ──► OnChange
//
// Guarantees: no polling (a reflector lists once, then watches, resyncs
// from its cache); a watch that expires (410 Gone) or breaks is relisted by
// the reflector without emptying its cache, so an API server outage keeps
// every upstream; retries back off by Backoff (capped at about a second,
// not client-go's default of 30 to 60 s), so changes flow again a few
// seconds after an outage ends; a burst of changes is one OnChange after
// the debounce (at most five debounces after its first change); a source
// that cannot list or watch (RBAC forbidden, API server down) is reported
// in Snapshot.Sources with why and since when, logged once per state
// change, never a crash. Every goroutine is Run's and has ended when Run
// returns.
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
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"

	"github.com/go-logr/logr"

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

// SourceState is where a source's list/watch stands.
type SourceState string

const (
	// StateListing: listing (the first list, or a relist after a watch
	// expired) and not failing.
	StateListing SourceState = "listing"
	// StateWatching: listed, and a watch is open; changes flow.
	StateWatching SourceState = "watching"
	// StateFailing: the last list or watch attempt failed (Err says why);
	// the reflector retries after Backoff, keeping what it found.
	StateFailing SourceState = "failing"
)

// SourceStatus is the state of one source in one namespace.
type SourceStatus struct {
	// Source is "mcpservers" or "services", with "/<namespace>" when
	// namespaces are listed.
	Source string
	State  SourceState
	// Since is when the source entered State (a failure retried keeps the
	// time of the first).
	Since time.Time
	// Synced: a list has completed (the source's objects are in the
	// snapshot).
	Synced bool
	// Err is the last failure while State is StateFailing ("" otherwise),
	// e.g. RBAC forbidden or the API server unreachable, at most
	// MaxErrBytes.
	Err string
	// Objects is the number of objects in the source's cache.
	Objects int
}

// Snapshot is the discovered state at one moment.
type Snapshot struct {
	Found   []Found        // sorted by Source
	Sources []SourceStatus // sorted by Source
}

// Backoff is how a reflector waits between failed lists and watches, and
// before the relist that follows an expired watch (client-go's
// ReflectorOptions.Backoff, which the shared informers do not expose). It
// replaces client-go's default (0.8 s doubling to 30 s, jittered up to
// twice that): after an outage of 20 s that default waits 25 to 50 s
// before the watch is retried, then as long again before the relist a
// 410 Gone asks for. Here a wait is at most Cap×(1+Jitter) = 1.5 s, so a
// change made after the API server's return flows within about 3 s plus
// the debounce. The price is at most one request per 1.5 s per source and
// replica while the API server is down (a refused connection) or refusing
// (forbidden, 429); client-go resets the backoff after 2 minutes without
// a failure.
var Backoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 4, Cap: time.Second}

// MaxErrBytes bounds the error a source reports (an API server's message
// can be long); longer ones are cut at a rune boundary with "…".
const MaxErrBytes = 1024

// Discovery runs the reflectors of the enabled sources.
type Discovery struct {
	opts    Options
	log     *slog.Logger
	sources []*source
	dirty   chan struct{}
}

// source is one reflector: a kind of object in one namespace (or all),
// its cache, and the state its list and watch calls show.
type source struct {
	name      string
	d         *Discovery
	cache     cache.Store
	reflector *cache.Reflector

	mu        sync.Mutex
	state     SourceState
	since     time.Time
	err       string
	synced    bool
	watchList bool // the last watch opened streams the initial list (sendInitialEvents)
}

// New builds the reflectors (it starts nothing: see Run).
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
	tweak := func(o metav1.ListOptions) metav1.ListOptions { o.LabelSelector = k.LabelSelector; return o }
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
			res := dc.Resource(MCPServerResource).Namespace(ns)
			lw := &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return res.List(ctx, tweak(o))
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					return res.Watch(ctx, tweak(o))
				},
			}
			d.addSource(config.SourceMCPServers+suffix(ns), lw, dc, &unstructured.Unstructured{}, k.Resync.D)
		}
	}
	if k.Has(config.SourceServices) {
		kc, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("kubediscovery: %w", err)
		}
		for _, ns := range namespaces {
			svcs := kc.CoreV1().Services(ns)
			lw := &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return svcs.List(ctx, tweak(o))
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					return svcs.Watch(ctx, tweak(o))
				},
			}
			d.addSource(config.SourceServices+suffix(ns), lw, kc, &corev1.Service{}, k.Resync.D)
		}
	}
	return d, nil
}

// addSource builds a reflector over lw (client: the client lw calls, which
// says whether it can stream a list) into a store that marks d dirty.
func (d *Discovery) addSource(name string, lw cache.ListerWatcherWithContext, client any, obj runtime.Object, resync time.Duration) {
	s := &source{name: name, d: d, cache: cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc), state: StateListing, since: time.Now()}
	backoff := Backoff
	quiet := logr.Discard() // see Run
	s.reflector = cache.NewReflectorWithOptions(observed{s: s, lw: lw, client: client}, obj, (*notifyingStore)(s), cache.ReflectorOptions{
		Name: "kubediscovery " + name, ResyncPeriod: resync, Backoff: &backoff, Logger: &quiet,
	})
	d.sources = append(d.sources, s)
}

// observed is a source's ListerWatcher: the API server's answer to every
// list and watch call is the source's state. (The reflector retries a
// refused watch inside its own loop and never hands that error to a watch
// error handler: only the calls themselves show an outage.)
type observed struct {
	s      *source
	lw     cache.ListerWatcherWithContext
	client any
}

func (o observed) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	o.s.attempt()
	l, err := o.lw.ListWithContext(ctx, opts)
	if err != nil {
		o.s.failed(ctx, err)
	} else {
		o.s.listed()
	}
	return l, err
}

func (o observed) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	listing := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if listing {
		o.s.attempt()
	}
	w, err := o.lw.WatchWithContext(ctx, opts)
	if err != nil {
		o.s.failed(ctx, err)
	} else {
		o.s.watchOpened(listing)
	}
	return w, err
}

// List and Watch complete cache.ListerWatcher; the reflector calls the
// context forms above (cache.ToListerWatcherWithContext).
func (o observed) List(opts metav1.ListOptions) (runtime.Object, error) {
	return o.ListWithContext(context.Background(), opts)
}

func (o observed) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return o.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported passes on whether the client can stream
// a list (client-go's watchlist.DoesClientNotSupportWatchListSemantics),
// as the shared informers' list-watchers do.
func (o observed) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(o.client)
}

// notifyingStore is the source's cache as its reflector writes it: every
// write marks the discovery dirty (Run's loop builds the snapshot); a
// replace is a completed list.
type notifyingStore source

func (n *notifyingStore) Add(o any) error    { return n.write(n.cache.Add(o)) }
func (n *notifyingStore) Update(o any) error { return n.write(n.cache.Update(o)) }
func (n *notifyingStore) Delete(o any) error { return n.write(n.cache.Delete(o)) }

// Resync marks dirty, as an informer's resync re-delivers every object to
// its handlers: the snapshot is rebuilt from the cache.
func (n *notifyingStore) Resync() error { return n.write(nil) }

func (n *notifyingStore) Replace(list []any, rv string) error {
	if err := n.cache.Replace(list, rv); err != nil {
		return err
	}
	(*source)(n).replaced()
	return n.write(nil)
}

func (n *notifyingStore) write(err error) error {
	n.d.markDirty()
	return err
}

// attempt: a list starts (a failing source stays failing until a call
// succeeds).
func (s *source) attempt() {
	s.transition(func() (SourceState, string, bool) {
		return StateListing, "", s.state == StateWatching
	})
}

// listed: a list call succeeded (the watch follows).
func (s *source) listed() {
	s.transition(func() (SourceState, string, bool) {
		s.watchList = false
		return StateListing, "", s.state != StateListing
	})
}

// watchOpened: a watch call succeeded; one streaming the initial list is
// still listing until the list's end (replaced).
func (s *source) watchOpened(listing bool) {
	s.transition(func() (SourceState, string, bool) {
		s.watchList = listing
		if listing {
			return StateListing, "", s.state != StateListing
		}
		return StateWatching, "", s.state != StateWatching
	})
}

// replaced: a list completed into the cache.
func (s *source) replaced() {
	s.transition(func() (SourceState, string, bool) {
		s.synced = true
		return StateWatching, "", s.watchList && s.state != StateWatching
	})
}

// failed: a list or watch call failed (not because Run is ending).
func (s *source) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	msg := boundErr(err.Error())
	s.transition(func() (SourceState, string, bool) {
		if s.state == StateFailing {
			s.err = msg // the latest reason; since stays the first failure's
			return StateFailing, msg, false
		}
		return StateFailing, msg, true
	})
}

// transition runs next under s.mu; when it says the state changes, the
// source moves to its state, the change is logged (after the lock is
// released) and the snapshot rebuilt (Merge reports a failing source).
func (s *source) transition(next func() (state SourceState, err string, change bool)) {
	s.mu.Lock()
	state, err, change := next()
	prev, since, now := s.state, s.since, time.Now()
	if change {
		s.state, s.err, s.since = state, err, now
	}
	s.mu.Unlock()
	if !change {
		return
	}
	was := now.Sub(since).Round(time.Millisecond)
	if state == StateFailing {
		s.d.log.Warn("kubernetes discovery: source failing; keeping the upstreams found so far, retrying",
			"source", s.name, "was", prev, "for", was, "error", err)
	} else {
		s.d.log.Info("kubernetes discovery: source "+string(state), "source", s.name, "was", prev, "for", was)
	}
	s.d.markDirty()
}

// boundErr cuts msg to MaxErrBytes at a rune boundary.
func boundErr(msg string) string {
	if len(msg) <= MaxErrBytes {
		return msg
	}
	cut := MaxErrBytes - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

func (s *source) status() SourceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SourceStatus{Source: s.name, State: s.state, Since: s.since, Synced: s.synced, Err: s.err, Objects: len(s.cache.ListKeys())}
}

func (s *source) hasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

func (d *Discovery) markDirty() {
	select {
	case d.dirty <- struct{}{}:
	default:
	}
}

// Run starts the reflectors and delivers snapshots to OnChange until ctx
// ends; it returns once every reflector goroutine has.
func (d *Discovery) Run(ctx context.Context) {
	// client-go's own log lines (klog) are not toolsvc's: every list and
	// watch outcome is logged above, once per state change, in toolsvc's
	// log; a reflector logs each retry, which during an outage would be one
	// line per Backoff.
	rctx := klog.NewContext(ctx, logr.Discard())
	var wg sync.WaitGroup
	for _, s := range d.sources {
		wg.Go(func() { s.reflector.RunWithContext(rctx) })
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
		syncs = append(syncs, s.hasSynced)
	}
	return cache.WaitForCacheSync(ctx.Done(), syncs...)
}

// Sources reports the state of every source, sorted by Source.
func (d *Discovery) Sources() []SourceStatus {
	out := make([]SourceStatus, 0, len(d.sources))
	for _, s := range d.sources {
		out = append(out, s.status())
	}
	slices.SortFunc(out, func(a, b SourceStatus) int { return strings.Compare(a.Source, b.Source) })
	return out
}

// Snapshot reads every source's cache.
func (d *Discovery) Snapshot() Snapshot {
	snap := Snapshot{Sources: d.Sources()}
	domain := d.opts.Kubernetes.ClusterDomain
	for _, s := range d.sources {
		for _, o := range s.cache.List() {
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
