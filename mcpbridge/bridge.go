// Package mcpbridge holds sessions to upstream MCP servers, merges their
// tools into one namespaced catalog (mcpbridge/catalog), keeps it fresh,
// and dispatches calls, reads, prompts, completions, subscriptions and
// tasks on one request path (request.go).
//
// Ownership:
//
//	Bridge ──owns──▶ upstream (one supervisor goroutine per server)
//	                   └─▶ session source: the session for this request (sessionsource.go)
//	                         ├─ sharedSession: one session at a time (ClientSession + refresher)
//	                         └─ principalSessions (per-user credentials): a session per
//	                            principal, bounded, closed when idle, one relister (peruser.go)
//	Bridge ──owns──▶ Catalog (immutable Snapshots, swapped atomically)
//
// Guarantees:
//   - Notification handlers never block: list_changed marks the session dirty
//     (a capacity-1 channel) and returns. The session's refresher drains the
//     mark, waits for a short quiet period, lists every page, and publishes a
//     new catalog snapshot. A push during a listing causes exactly one more.
//   - A call resolves its exposed name once, through the current snapshot
//     (never by parsing the name), into a Target; the front door checks that
//     entry and Call dispatches that same entry on the session the
//     upstream's source gives the request, with the caller's context, so
//     cancellation reaches the upstream. Nothing on the request path asks
//     whether the upstream's credentials are shared or per-user.
//   - Close cancels everything the bridge started and waits for it.
//
// The package never imports gRPC or generated code: the service package maps
// it to the wire.
package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolsvc/toolsvc/mcpbridge/catalog"
)

// Version is reported to upstreams as the client version.
var Version = "0.1.0"

// Bridge is the set of upstream sessions and their merged catalog.
type Bridge struct {
	cfg     Config
	log     *slog.Logger
	catalog *Catalog
	// resources holds every upstream's resources, templates and prompts
	// (catalog/resources.go).
	resources *ResourceCatalog

	mu    sync.RWMutex // guards ups, names and restarting (Reconfigure changes them)
	ups   map[string]*upstream
	names []string // sorted
	// restarting are servers a Reconfigure is restarting: between the old
	// supervisor's stop and the new one's start they are in no ups, yet
	// still configured, so a call meets UNAVAILABLE, not NOT_FOUND.
	restarting map[string]bool
	// refused are Config.Refused, sorted by name (Servers reports them).
	refused []RefusedServer

	reconfigMu sync.Mutex // serialises Reconfigure

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // supervisors and the startup timer
	closers sync.WaitGroup // background session closes, each bounded

	pending atomic.Int64
	// unlistedPerUser counts per-user upstreams whose tools no caller's
	// session has listed yet (PrimeCaller).
	unlistedPerUser atomic.Int64
	ready           chan struct{}
	readyOnce       sync.Once
	closeOnce       sync.Once

	// perUser counts the running per-user upstreams, privateUps those of
	// them whose tools are listed per principal; private holds those
	// listings (catalog/private.go).
	perUser, privateUps atomic.Int64
	private             catalog.Private

	// work bounds the refresh work done at once (refreshwork.go).
	work *refreshWork
}

// validateServers checks a server list as a whole and fills in defaults.
func validateServers(cfg *Config, servers []ServerConfig) ([]ServerConfig, error) {
	out := make([]ServerConfig, len(servers))
	for i := range servers {
		out[i] = servers[i].withDefaults(cfg)
	}
	if probs := append(CheckServers(out), unservedModeProblems(out, cfg.Logins)...); len(probs) > 0 {
		errs := make([]error, len(probs))
		for i, p := range probs {
			errs[i] = p
		}
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// New validates cfg and starts one supervisor per upstream, all
// concurrently. It does not wait for them: see Ready.
func New(cfg Config) (*Bridge, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = DefaultStartupTimeout
	}
	servers, err := validateServers(&cfg, cfg.Servers)
	if err != nil {
		return nil, err
	}
	b := &Bridge{
		cfg:       cfg,
		log:       cfg.Logger,
		catalog:   NewCatalog(),
		resources: NewResourceCatalog(),
		ups:       map[string]*upstream{},
		ready:     make(chan struct{}),
		refused:   sortedRefused(cfg.Refused),
		work:      newRefreshWork(defaultRefreshWork()),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.pending.Store(int64(len(servers)))
	if len(servers) == 0 {
		b.markReady()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTimer(cfg.StartupTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			b.log.Warn("startup timeout: serving before every upstream finished its first attempt", "timeout", cfg.StartupTimeout)
			b.markReady()
		case <-b.ready:
		case <-b.ctx.Done():
		}
	}()
	b.mu.Lock()
	for _, sc := range servers {
		b.startLocked(sc, true)
	}
	b.mu.Unlock()
	return b, nil
}

// startLocked creates and starts the supervisor of one upstream.
func (b *Bridge) startLocked(sc ServerConfig, initial bool) {
	u := newUpstream(b, sc)
	u.initial = initial
	b.ups[sc.Name] = u
	b.names = append(b.names, sc.Name)
	sort.Strings(b.names)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer close(u.done)
		u.run()
	}()
}

func (b *Bridge) markReady() { b.readyOnce.Do(func() { close(b.ready) }) }

func (b *Bridge) upstreamAttempted(u *upstream) {
	if u.initial && b.pending.Add(-1) == 0 {
		b.markReady()
	}
}

// Ready is closed once every upstream has finished its first connection
// attempt (success or failure), or the start-up timeout passed.
func (b *Bridge) Ready() <-chan struct{} { return b.ready }

// Catalog returns the merged catalog.
func (b *Bridge) Catalog() *Catalog { return b.catalog }

// Close stops every supervisor, closes every session (stdio children are
// killed with their process group) and waits. It is idempotent.
func (b *Bridge) Close() error {
	b.closeOnce.Do(func() {
		b.reconfigMu.Lock() // no Reconfigure starts supervisors after this
		b.cancel()
		b.reconfigMu.Unlock()
		b.wg.Wait()
		b.closers.Wait()
		b.markReady()
	})
	return nil
}

// ReconfigureResult says what a Reconfigure did.
type ReconfigureResult struct {
	Added, Removed, Restarted, Unchanged []string
}

// Reconfigure applies a new configuration: added servers connect, removed
// ones are torn down and their tools leave the catalog in one revision,
// changed ones (including through changed top-level defaults) restart, and
// unchanged ones are not touched (no reconnect, no catalog event). An
// invalid configuration changes nothing and returns every problem.
// cfg.StartupTimeout and cfg.Logger are ignored.
func (b *Bridge) Reconfigure(cfg Config) (ReconfigureResult, error) {
	b.reconfigMu.Lock()
	defer b.reconfigMu.Unlock()
	defaults := b.cfg
	defaults.ConnectTimeout, defaults.CallTimeout, defaults.RefreshTimeout = cfg.ConnectTimeout, cfg.CallTimeout, cfg.RefreshTimeout
	defaults.RefreshInterval, defaults.PingInterval, defaults.PingTimeout = cfg.RefreshInterval, cfg.PingInterval, cfg.PingTimeout
	next, err := validateServers(&defaults, cfg.Servers)
	if err != nil {
		return ReconfigureResult{}, err
	}
	if b.ctx.Err() != nil {
		return ReconfigureResult{}, ErrClosed
	}
	b.mu.RLock()
	old := maps.Clone(b.ups)
	b.mu.RUnlock()
	want := map[string]ServerConfig{}
	for _, sc := range next {
		want[sc.Name] = sc
	}
	res := planReconfigure(old, want)
	b.stopServers(res.Removed, res.Restarted)
	for _, name := range res.Removed {
		b.catalog.RemoveServer(name)
		b.resources.RemoveServer(name)
	}
	for _, name := range res.Restarted {
		b.catalog.SetAvailable(name, false) // until the new session lists
	}
	b.mu.Lock()
	for _, name := range append(slices.Clone(res.Added), res.Restarted...) {
		b.startLocked(want[name], false)
		delete(b.restarting, name)
	}
	b.refused = sortedRefused(cfg.Refused)
	b.mu.Unlock()
	b.log.Info("reconfigured", "added", res.Added, "removed", res.Removed, "restarted", res.Restarted, "unchanged", len(res.Unchanged))
	return res, nil
}

// planReconfigure sorts the servers into added, removed, restarted (their
// config changed) and unchanged.
func planReconfigure(old map[string]*upstream, want map[string]ServerConfig) ReconfigureResult {
	var res ReconfigureResult
	for name, u := range old {
		sc, keep := want[name]
		switch {
		case !keep:
			res.Removed = append(res.Removed, name)
		case !u.cfg.equal(sc):
			res.Restarted = append(res.Restarted, name)
		default:
			res.Unchanged = append(res.Unchanged, name)
		}
	}
	for name := range want {
		if _, ok := old[name]; !ok {
			res.Added = append(res.Added, name)
		}
	}
	for _, l := range [][]string{res.Added, res.Removed, res.Restarted, res.Unchanged} {
		sort.Strings(l)
	}
	return res
}

// stopServers stops removed and restarted servers' supervisors,
// concurrently (each waits for its supervisor). A restarted server is
// marked restarting meanwhile: its tools are UNAVAILABLE, not NOT_FOUND.
func (b *Bridge) stopServers(removed, restarted []string) {
	var wg sync.WaitGroup
	for _, name := range append(slices.Clone(removed), restarted...) {
		b.mu.Lock()
		u := b.ups[name]
		delete(b.ups, name)
		if slices.Contains(restarted, name) {
			if b.restarting == nil {
				b.restarting = map[string]bool{}
			}
			b.restarting[name] = true
		}
		b.names = slices.DeleteFunc(b.names, func(n string) bool { return n == name })
		b.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.cancel()
			<-u.done
		}()
	}
	wg.Wait()
}

// unlistedOwner returns the server whose exposed-name prefix the name has,
// if that server has not listed its tools since it was (re)started; "" if
// none (or the server exposes bare names: then no owner can be told).
func (b *Bridge) unlistedOwner(name string) string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for server, u := range b.ups {
		p := u.cfg.namesPrefix()
		if p == "" || !strings.HasPrefix(name, p+catalog.NameSep) {
			continue
		}
		u.mu.Lock()
		listed := !u.status.LastListOK.IsZero()
		u.mu.Unlock()
		if !listed {
			return server
		}
	}
	return ""
}

// goneErr is the error for a tool whose server is not running: UNAVAILABLE
// while a Reconfigure restarts the server, NOT_FOUND once it is removed.
func (b *Bridge) goneErr(server, tool string) error {
	b.mu.RLock()
	restarting := b.restarting[server]
	b.mu.RUnlock()
	if restarting {
		return &UnavailableError{Server: server, Reason: ReasonNoSession, RetryAfter: time.Second}
	}
	return fmt.Errorf("%w: %q", ErrToolNotFound, tool) // removed by a reconfigure just now
}

func (b *Bridge) upstream(name string) (*upstream, error) {
	b.mu.RLock()
	u, ok := b.ups[name]
	b.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrServerNotFound, name)
	}
	return u, nil
}

// Servers reports every upstream, sorted by name, then every refused
// server (Config.Refused) as down with its reason as the last error.
func (b *Bridge) Servers() []ServerStatus {
	b.mu.RLock()
	ups := make([]*upstream, 0, len(b.names))
	for _, name := range b.names {
		ups = append(ups, b.ups[name])
	}
	refused := b.refused
	b.mu.RUnlock()
	out := make([]ServerStatus, 0, len(ups)+len(refused))
	for _, u := range ups {
		out = append(out, u.statusSnapshot())
	}
	for _, r := range refused {
		out = append(out, ServerStatus{Name: r.Name, State: StateDown, LastError: r.Reason})
	}
	return out
}

// sortedRefused copies refused, sorted by name.
func sortedRefused(refused []RefusedServer) []RefusedServer {
	out := slices.Clone(refused)
	slices.SortFunc(out, func(a, b RefusedServer) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Server reports one upstream.
func (b *Bridge) Server(name string) (ServerStatus, error) {
	u, err := b.upstream(name)
	if err != nil {
		return ServerStatus{}, err
	}
	return u.statusSnapshot(), nil
}

// SearchAliases are the configured aliases of the server's tool (by its
// upstream name), nil when none; tool search indexes them with the tool.
func (b *Bridge) SearchAliases(server, tool string) []string {
	u, err := b.upstream(server)
	if err != nil {
		return nil
	}
	return u.cfg.SearchAliases[tool]
}

// Instructions are the instructions the server's current session sent
// in its initialize result ("" without a session or instructions); tool
// search indexes them with the server's tools.
func (b *Bridge) Instructions(name string) string {
	u, err := b.upstream(name)
	if err != nil {
		return ""
	}
	s := u.sess.Load()
	if s == nil {
		return ""
	}
	if ir := s.cs.InitializeResult(); ir != nil {
		return ir.Instructions
	}
	return ""
}

// Refresh re-lists one server's tools now and waits for the result.
func (b *Bridge) Refresh(ctx context.Context, name string) (ServerStatus, error) {
	u, err := b.upstream(name)
	if err != nil {
		return ServerStatus{}, err
	}
	s := u.sess.Load()
	if s == nil || s.isDead() {
		return u.statusSnapshot(), &UnavailableError{Server: name, Reason: ReasonNoSession, RetryAfter: u.nextConnectIn()}
	}
	req := make(chan error, 1)
	select {
	case s.refreshReq <- req:
	case <-s.deadCtx.Done():
		return u.statusSnapshot(), &UnavailableError{Server: name, Reason: ReasonSessionLost}
	case <-ctx.Done():
		return u.statusSnapshot(), ctx.Err()
	}
	select {
	case err = <-req:
	case <-s.deadCtx.Done():
		err = &UnavailableError{Server: name, Reason: ReasonSessionLost}
	case <-ctx.Done():
		err = ctx.Err()
	}
	return u.statusSnapshot(), err
}

// Reconnect drops one server's session (if any) and connects again at
// once, clearing its backoff and circuit breaker. It waits until the new
// attempt finished (ready or failed) or ctx ends.
func (b *Bridge) Reconnect(ctx context.Context, name string) (ServerStatus, error) {
	u, err := b.upstream(name)
	if err != nil {
		return ServerStatus{}, err
	}
	u.mu.Lock()
	before := u.attempts
	u.mu.Unlock()
	select {
	case u.reconnectReq <- struct{}{}:
	default: // one is already pending
	}
	for {
		u.mu.Lock()
		ch, done := u.attemptDone, u.attempts > before
		u.mu.Unlock()
		if done {
			st := u.statusSnapshot()
			if st.State != StateReady && st.State != StateDegraded {
				return st, &UnavailableError{Server: name, Reason: ReasonNoSession, RetryAfter: time.Until(st.NextConnectTime)}
			}
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return u.statusSnapshot(), ctx.Err()
		case <-u.done:
			return u.statusSnapshot(), ErrServerNotFound
		}
	}
}

// CallOptions are optional settings of one call.
type CallOptions struct {
	// OnProgress, if set, receives the upstream's progress notifications for
	// this call until CallTool returns; later ones are dropped. It runs on
	// the session's notification path and must not block.
	OnProgress func(Progress)
	// OnLog, if set, receives the upstream's log messages
	// (notifications/message) attributed to this call (logging.go) until
	// Call returns; later ones are dropped. It runs on the session's
	// notification path and must not block. It gets every level the
	// upstream sends: filtering is the caller's.
	OnLog func(Log)
	// LogLevel is the least severe level the caller wants with OnLog: a
	// 2026-07-28 upstream is asked for it in the call's _meta (earlier
	// upstreams were told a level at connect); "" means debug.
	LogLevel mcp.LoggingLevel
	// Principal is the caller on whose behalf the call is made. It is sent
	// to the upstream (in _meta under PrincipalMetaKey) only when the
	// server's ForwardPrincipal is set.
	Principal string
	// SubjectToken is the caller's own JWT when it was authenticated by one
	// ("" otherwise): an upstream with per-user credentials (tokenExchange)
	// exchanges it for the principal's token. It is never sent upstream.
	SubjectToken string
	// Input, if set, lets the upstream ask the caller for input during the
	// call (interact.go); nil: the server's policy answers it.
	Input *Interaction
	// DecodedArguments, if set, are the call's arguments as decoded values
	// (what the front door validated): exactly the object the args given
	// to Call encode, never changed after. A transport whose wire carries
	// values builds its request from them instead of decoding the
	// request's JSON again (wireargs.go); the request is still written as
	// JSON through the session as for every transport.
	DecodedArguments map[string]any
}

// Target is a catalog entry resolved for a call: the immutable entry from
// one snapshot and the upstream that served it. Everything a front door
// checks (authorization, argument validation, limits) is checked against
// Tool, and Call dispatches to that same entry, so a catalog change between
// the checks and the dispatch cannot send a call validated against one
// schema to another tool.
type Target struct {
	// Tool is the entry as published in the snapshot Resolve read.
	Tool *Tool
	u    *upstream
}

// ValidatesArguments reports whether the target's arguments should be
// checked against its inputSchema (on unless the server's config turns it
// off for broken schemas).
func (t Target) ValidatesArguments() bool { return !t.u.cfg.SkipArgumentValidation }

// Resolve looks an exposed name up, once, in the current snapshot. Errors:
// ErrClosed; *UnavailableError with ReasonStarting while the first
// discovery round has not finished (the name may exist in a moment);
// ErrToolNotFound.
func (b *Bridge) Resolve(name string) (Target, error) { return b.ResolveFor("", name) }

// ResolveFor is Resolve in principal's view of the catalog (Tools): a
// tool of another principal's per-principal listing is ErrToolNotFound.
func (b *Bridge) ResolveFor(principal, name string) (Target, error) {
	if b.ctx.Err() != nil {
		return Target{}, ErrClosed
	}
	var t *Tool
	var ok bool
	if c, shared := b.Tools(principal).(*Catalog); shared {
		t, ok = c.Lookup(name) // no flat list built for a call (catalog/chunks.go)
	} else {
		t, ok = b.Tools(principal).Current().Lookup(name)
	}
	if !ok {
		select {
		case <-b.ready:
		default:
			// Before the first discovery round finished an unknown name may
			// well exist in a moment (or on another replica): not NOT_FOUND.
			return Target{}, &UnavailableError{Reason: ReasonStarting, RetryAfter: time.Second}
		}
		if server := b.privateUnlisted(principal, name); server != "" {
			// Its server lists per principal and has no listing of this
			// one (priming it failed): not NOT_FOUND.
			return Target{}, &UnavailableError{Server: server, Reason: ReasonNoSession, RetryAfter: time.Second}
		}
		if server := b.unlistedOwner(name); server != "" {
			// Its server has not listed its tools yet (still connecting
			// after start-up, a restart or a reload): the name may well
			// exist in a moment.
			return Target{}, &UnavailableError{Server: server, Reason: ReasonNoSession, RetryAfter: time.Second}
		}
		return Target{}, fmt.Errorf("%w: %q", ErrToolNotFound, name)
	}
	u, err := b.upstream(t.Server)
	if err != nil {
		return Target{}, b.goneErr(t.Server, name)
	}
	return Target{Tool: t, u: u}, nil
}

// CallTool resolves the exposed name and calls it: Resolve then Call. args
// must encode to a JSON object (a map, a struct, or json.RawMessage); nil
// means {}; a json.RawMessage that is not an object is ErrInvalidArguments.
func (b *Bridge) CallTool(ctx context.Context, name string, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	t, err := b.Resolve(name)
	if err != nil {
		return nil, err
	}
	if raw, ok := args.(json.RawMessage); ok {
		if len(bytes.TrimSpace(raw)) == 0 {
			args = nil
		} else if !isJSONObject(raw) {
			return nil, ErrInvalidArguments
		}
	}
	return b.Call(ctx, t, args, opts)
}

// Call calls the resolved tool: t.Tool.OriginalName on t.Tool.Server,
// whatever the catalog says by now. args must encode to a JSON object (the
// caller has checked it; nil means {}). The call runs on the upstream's
// current session under ctx; without a ctx deadline the server's CallTool
// timeout applies.
//
// A tool's own failure is a result with IsError set, not an error. Errors:
// ErrToolNotFound (the server was removed since Resolve), *UnavailableError
// (errors.Is ErrUnavailable: no session, session lost mid-call, or circuit
// open, with a retry hint), ErrOverloaded, *UpstreamError, ErrClosed, or a
// context error.
func (b *Bridge) Call(ctx context.Context, target Target, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	if b.ctx.Err() != nil {
		return nil, ErrClosed
	}
	u, err := b.targetUpstream(target)
	if err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	tool := target.Tool.OriginalName
	if opts != nil && opts.SubjectToken != "" {
		ctx = WithCaller(ctx, opts.Principal, opts.SubjectToken)
	}
	if opts != nil && (opts.Input != nil || opts.OnLog != nil) {
		// The call's interaction names it on its session (interact.go):
		// a copy, which also carries the call's log sink.
		it := &Interaction{}
		if opts.Input != nil {
			*it = *opts.Input
		}
		if opts.OnLog != nil {
			it.logs = &logSink{f: opts.OnLog}
		}
		ctx = withInteraction(ctx, it)
	}
	var res *mcp.CallToolResult
	needsTask := false
	err = b.request(ctx, u, requestLabel{method: "call", tool: tool}, func(ctx context.Context, s *session) error {
		var err error
		res, err = s.call(ctx, tool, args, opts)
		needsTask = err != nil && !taskAsked(ctx) && needsTasksExtension(err)
		if needsTask {
			// The tool only runs as a task, which its 2026-07-28 listing
			// could not say: list again so the catalog says "required"
			// (session.taskSupport) and callers ask for a task.
			if era, _ := s.tasks.current(); era == TaskEra2026 && s.raw.learnRequired(tool) {
				u.log.Info("tool requires a task: listing again", "tool", tool)
				s.markDirty()
			}
		}
		return err
	})
	if ue := (*UpstreamError)(nil); needsTask && errors.As(err, &ue) {
		// The upstream's answer (not a session's loss on the way).
		return nil, &TaskRequiredError{UpstreamError: ue, Tool: target.Tool.Name}
	}
	if err != nil {
		return nil, err
	}
	if res.IsTask() && !taskAsked(ctx) {
		// A task nobody asked for: go-sdk decodes it as an empty result,
		// which would reach the caller as an empty success. Neither era
		// lets a server answer a plain call with a task (2025-11-25 only
		// when the request carries params.task, 2026-07-28 only when it
		// opted in to the tasks extension), so the answer is refused as
		// malformed; toolsvc does not follow the task (docs/security.md,
		// "A task nobody asked for").
		u.log.Warn("call refused: the upstream answered a call that asked no task with a task", "tool", tool)
		return nil, &MalformedAnswerError{Server: target.Tool.Server,
			Detail: fmt.Sprintf("call %q asked no task and was answered with one", tool)}
	}
	return res, nil
}

// taskAsked reports whether the tools/call made with ctx asked its
// upstream for a task (a CallTask the session and the tool could run as
// one: taskMiddleware).
func taskAsked(ctx context.Context) bool {
	tc := taskCallOf(ctx)
	return tc != nil && tc.wantsRaw()
}

// targetUpstream is the upstream a resolved target goes to: the one that
// served it, or, when a reconfigure removed or restarted that server since
// Resolve, the server's new supervisor, if it still has one.
func (b *Bridge) targetUpstream(target Target) (*upstream, error) {
	t, u := target.Tool, target.u
	if u == nil {
		return nil, fmt.Errorf("%w: unresolved target", ErrToolNotFound)
	}
	if u.ctx.Err() == nil {
		return u, nil
	}
	nu, err := b.upstream(t.Server)
	if err != nil {
		return nil, b.goneErr(t.Server, t.Name)
	}
	return nu, nil
}

// call runs one tools/call on the session (under request: session.run ends
// it when the session dies), with a client span, the caller's principal
// when the server forwards it, and the caller's progress.
func (s *session) call(ctx context.Context, tool string, args any, opts *CallOptions) (res *mcp.CallToolResult, err error) {
	// A client span per upstream call, and its W3C trace context in the
	// request's _meta so the upstream can continue the trace.
	ctx, span := otel.Tracer(tracerName).Start(ctx, "mcp tools/call", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("mcp.server", s.u.cfg.Name), attribute.String("mcp.tool", tool),
			attribute.String("mcp.method", "tools/call")))
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(otelcodes.Error, "call failed")
		} else if res != nil && res.IsError {
			span.SetAttributes(attribute.Bool("mcp.tool_error", true))
		}
		span.End()
	}()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	// TraceContext injects nothing without a valid span context (no
	// tracing configured, no trace from the caller): no carrier then.
	if span.SpanContext().IsValid() {
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
		if len(carrier) > 0 {
			params.Meta = mcp.Meta{}
			for k, v := range carrier {
				params.Meta[k] = v
			}
		}
	}
	s.forwardPrincipal(params, opts)
	if opts != nil && opts.Input != nil {
		params.InputResponses, params.RequestState = opts.Input.Responses, opts.Input.State
	}
	if opts != nil && opts.OnProgress != nil {
		tok := fmt.Sprintf("toolsvc-%d-%d", s.id, s.seq.Add(1))
		params.SetProgressToken(tok)
		sink := &progressSink{f: opts.OnProgress}
		s.progress.Store(tok, sink)
		defer func() {
			if err == nil {
				sink.settle(ctx, progressGrace)
			}
			s.progress.Delete(tok)
			sink.close() // progress handled after this point is dropped
		}()
	}
	if it := interactionOf(ctx); it != nil && it.logs != nil {
		if s.newProtocol() {
			// 2026-07-28: logs are asked for per request.
			level := opts.LogLevel
			if level == "" {
				level = "debug"
			}
			if params.Meta == nil {
				params.Meta = mcp.Meta{}
			}
			params.Meta[mcp.MetaKeyLogLevel] = level
		}
		defer func() {
			if ctx.Err() == nil {
				s.logs.settle(ctx, logGrace)
			}
			it.logs.close() // log messages handled after this point are dropped
		}()
	}
	ctx, rq := startRaw(ctx)                   // the raw result, for a caller that asked (rawresult.go)
	ctx = s.withDecodedCall(ctx, params, opts) // the decoded arguments, for the gRPC binding (wireargs.go)
	res, err = s.cs.CallTool(ctx, params)
	rq.finish(ctx, res, err)
	return res, err
}

// tracerName names the upstream-call spans' tracer. It is looked up from
// the global TracerProvider on each call (a no-op unless tracing is
// configured), so a provider installed later is always the one used.
const tracerName = "github.com/toolsvc/toolsvc/mcpbridge"

// progressSink delivers one call's progress until the call returns; after
// close nothing more is delivered. OnProgress is documented as non-blocking,
// so holding the small lock across it is fine.
type progressSink struct {
	mu     sync.Mutex
	closed bool
	f      func(Progress)
	last   *Progress
	more   chan struct{} // capacity 1: a notification was delivered
}

func (p *progressSink) deliver(pr Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.f(pr)
		p.last = &pr
		if p.more != nil {
			select {
			case p.more <- struct{}{}:
			default:
			}
		}
	}
}

// incomplete reports progress that has a total it has not reached.
func (p *progressSink) incomplete() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last != nil && p.last.Total > 0 && p.last.Progress < p.last.Total
}

// settle waits, at most grace (and within ctx), while the call's progress
// is incomplete: a notification sent before the result may still be in
// the session's handler queue. Complete or absent progress costs nothing.
func (p *progressSink) settle(ctx context.Context, grace time.Duration) {
	if !p.incomplete() {
		return
	}
	p.mu.Lock()
	p.more = make(chan struct{}, 1)
	p.mu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	for p.incomplete() {
		select {
		case <-p.more:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (p *progressSink) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// isJSONObject is a cheap shape check: the edge has already decoded the
// text, and encoding the request re-validates it.
func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}'
}
