package mcpfront

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// Resources and prompts through the MCP front door: the merged lists of
// the upstreams (resources and templates under the upstreams' own URIs,
// prompts under their exposed names "<prefix>__<prompt>", as in the gRPC
// API), reads and prompt renders through the same steps as ReadResource
// and GetPrompt (authenticate → authorize → rate limit → dispatch → one
// error mapping → metrics and audit line: the operation engine, service/core/operation.go), resource
// subscriptions, and notifications/{resources,prompts}/list_changed when
// the merged lists change.
//
// A read names no server: the server is the one that lists the URI or has
// a template matching it, among those the caller may see; a URI that
// several servers offer cannot be read through the front door (the gRPC
// API's ReadResource takes a server).

// frontList pages one of the merged lists for the request's principal
// (core.ListPage), in the MCP form conv gives. A cursor is the gRPC API's
// resource page token: any replica at that revision continues it.
func frontList[T, M any](f *Front, ctx context.Context, extra *mcp.RequestExtra, cursor string, kind core.ListKind[T], conv func(T) M) ([]M, string, error) {
	ctx, _, e := f.c.Authenticate(principalContext(ctx, extra))
	if e != nil {
		return nil, "", mcpError(e)
	}
	out, _, next, e := core.ListPage(f.c, ctx, kind, nil, cursor, mcpFields, min(f.opts.PageSize, core.MaxPageSize), 0, conv, nil)
	if e != nil {
		return nil, "", mcpError(e)
	}
	if out == nil {
		out = []M{}
	}
	return out, next, nil
}

// cursorOf is a list request's cursor ("" without params).
func cursorOf[P any](p *P, cursor func(*P) string) string {
	if p == nil {
		return ""
	}
	return cursor(p)
}

func (f *Front) listResources(ctx context.Context, req *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	list, next, err := frontList(f, ctx, req.GetExtra(), cursorOf(req.Params, func(p *mcp.ListResourcesParams) string { return p.Cursor }), core.Resources,
		func(r *core.Resource) *mcp.Resource { return r.R }) // as listed; never modified
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourcesResult{Resources: list, NextCursor: next}
	// ttlMs 0 and cacheScope private in 2026-07-28, none before (eraResult)
	return res, nil
}

func (f *Front) listResourceTemplates(ctx context.Context, req *mcp.ListResourceTemplatesRequest) (*mcp.ListResourceTemplatesResult, error) {
	list, next, err := frontList(f, ctx, req.GetExtra(), cursorOf(req.Params, func(p *mcp.ListResourceTemplatesParams) string { return p.Cursor }), core.Templates,
		func(t *core.ResourceTemplate) *mcp.ResourceTemplate { return t.T })
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourceTemplatesResult{ResourceTemplates: list, NextCursor: next}
	return res, nil
}

func (f *Front) listPrompts(ctx context.Context, req *mcp.ListPromptsRequest) (*mcp.ListPromptsResult, error) {
	list, next, err := frontList(f, ctx, req.GetExtra(), cursorOf(req.Params, func(p *mcp.ListPromptsParams) string { return p.Cursor }), core.Prompts, promptToMCP)
	if err != nil {
		return nil, err
	}
	res := &mcp.ListPromptsResult{Prompts: list, NextCursor: next}
	return res, nil
}

// promptToMCP is the upstream's prompt under its exposed name.
func promptToMCP(p *core.Prompt) *mcp.Prompt {
	out := *p.P
	out.Name = p.Name
	return &out
}

// readResource answers resources/read through the operation engine, like
// ReadResource.
func (f *Front) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.Result, error) {
	raws := &core.RawResults{} // passthrough.go
	op, err := f.c.Begin(core.WithRawResults(principalContext(ctx, req.GetExtra()), raws), core.OpResourceRead, mcpFields)
	var res *mcp.ReadResourceResult
	var pass []byte
	if err == nil {
		params := req.Params
		if params == nil {
			params = &mcp.ReadResourceParams{}
		}
		var server string
		if server, err = op.ResolveRead("", params.URI); err == nil {
			res, err = askRounds(ctx, req, requestInput(req.ClientCapabilities(), params.InputResponses, params.RequestState),
				func(in *core.InputOptions) (*mcp.ReadResourceResult, mcp.InputRequestMap, string, error) {
					res, _, err := op.ReadResource(server, params.URI, in)
					if err != nil || res == nil {
						return res, nil, "", err
					}
					return res, res.InputRequests, res.RequestState, nil
				})
			if err == nil && len(res.InputRequests) == 0 && !f.noPass {
				if raw, ok := raws.Of(res); ok {
					pass, _ = passThrough(raw, kindRead, req.ProtocolVersion() >= statelessEra, metaEra(params.Meta))
				}
			}
			if err == nil {
				if pass != nil {
					if e := f.c.CheckResponse(len(pass)); e != nil {
						err = e
					}
				} else {
					err = f.checkSize(res)
				}
			}
			if err == nil && len(res.InputRequests) > 0 {
				res = readInputRequired(res)
			}
		}
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return nil, mcpError(fail)
	}
	f.paths.sent(kindRead, pass != nil)
	if pass != nil {
		return newRawResult(pass), nil
	}
	return res, nil
}

// getPrompt answers prompts/get through the operation engine, like GetPrompt.
func (f *Front) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	op, err := f.c.Begin(principalContext(ctx, req.GetExtra()), core.OpPromptGet, mcpFields)
	var res *mcp.GetPromptResult
	if err == nil {
		res, err = f.renderPrompt(ctx, op, req)
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return nil, mcpError(fail)
	}
	return res, nil
}

func (f *Front) renderPrompt(ctx context.Context, op *core.Operation, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	params := req.Params
	if params == nil {
		params = &mcp.GetPromptParams{}
	}
	res, err := askRounds(ctx, req, requestInput(req.ClientCapabilities(), params.InputResponses, params.RequestState),
		func(in *core.InputOptions) (*mcp.GetPromptResult, mcp.InputRequestMap, string, error) {
			res, err := op.GetPrompt(params.Name, params.Arguments, in)
			if err != nil || res == nil {
				return res, nil, "", err
			}
			return res, res.InputRequests, res.RequestState, nil
		})
	if err != nil {
		return nil, err
	}
	if len(res.InputRequests) > 0 {
		return promptInputRequired(res), nil
	}
	return res, f.checkSize(res)
}

// checkSize applies the response size limit to a result as sent.
func (f *Front) checkSize(res any) error {
	raw, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if e := f.c.CheckResponse(len(raw)); e != nil {
		return e
	}
	return nil
}

// Resource subscriptions. go-sdk keeps which session subscribed to which
// URI (resources/subscribe in 2025-11-25 sessions, the resource
// subscriptions of a 2026-07-28 subscriptions/listen), one entry per
// session and URI, and sends notifications/resources/updated to them
// (Server.ResourceUpdated, by URI); the front door admits each
// subscription (the operation engine: the caller must be allowed the server's
// resources) and holds one upstream subscription per (server, URI) while
// any session is subscribed to it, through the core's subscription hub
// (core.SubscribeResource), which gRPC streams share. A session's
// subscriptions end with it: go-sdk forgets them without calling the
// unsubscribe handler, so the front door waits for every subscribed
// session's end (this also covers a resources/subscribe sent without a
// session, whose one-request session ends with the request). When the
// upstream's session goes away, the hub subscribes again once it is back
// and signals one update, which the front door sends as resources/updated
// (the contents may have changed meanwhile): a client's subscription
// outlives upstream restarts, as a gRPC stream does (docs/resources.md,
// "One subscription lifecycle").

type frontSubs struct {
	mu      sync.Mutex
	entries map[subKey]*frontSub
	watched map[*mcp.ServerSession]bool // sessions whose end is awaited
	// closed (under mu) stops new subscriptions; closeSubs then waits for
	// every goroutine in running (forwarders, session-end waiters), whose
	// Adds happen under mu before closed is set.
	closed  bool
	running sync.WaitGroup
}

type subKey struct{ server, uri string }

type frontSub struct {
	sessions map[*mcp.ServerSession]bool
	ready    chan struct{} // closed when the first upstream subscription answered
	err      error         // its error
	stop     chan struct{} // closed when the last session leaves
}

func (f *Front) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	op, err := f.c.Begin(principalContext(ctx, req.GetExtra()), core.OpSubscription, mcpFields)
	if err == nil {
		uri := ""
		if req.Params != nil {
			uri = req.Params.URI
		}
		var server string
		if server, err = op.ResolveRead("", uri); err == nil {
			// A subscription is not a call: it holds no rate-limit slot.
			op.ReleaseSlot()
			err = f.joinSub(op.Context(), subKey{server, uri}, req.Session)
		}
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return mcpError(fail)
	}
	return nil
}

func (f *Front) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Params != nil {
		f.leaveSubs(req.Session, func(k subKey) bool { return k.uri == req.Params.URI })
	}
	return nil
}

// joinSub adds ss to k's subscribers, subscribing the upstream for the
// first one.
func (f *Front) joinSub(ctx context.Context, k subKey, ss *mcp.ServerSession) error {
	f.subs.mu.Lock()
	if f.subs.closed {
		f.subs.mu.Unlock()
		return core.ErrClosed
	}
	if f.subs.entries == nil {
		f.subs.entries, f.subs.watched = map[subKey]*frontSub{}, map[*mcp.ServerSession]bool{}
	}
	e := f.subs.entries[k]
	first := e == nil
	if first {
		e = &frontSub{sessions: map[*mcp.ServerSession]bool{}, ready: make(chan struct{}), stop: make(chan struct{})}
		f.subs.entries[k] = e
	}
	e.sessions[ss] = true // go-sdk too keeps one entry per session and URI
	if !f.subs.watched[ss] {
		f.subs.watched[ss] = true
		f.subs.running.Add(1)
		go func() {
			defer f.subs.running.Done()
			f.awaitSessionEnd(ss)
		}()
	}
	f.subs.mu.Unlock()
	if !first {
		select {
		case <-e.ready:
		case <-ctx.Done():
			f.leaveSubs(ss, func(j subKey) bool { return j == k })
			return ctx.Err()
		}
		if e.err != nil {
			f.leaveSubs(ss, func(j subKey) bool { return j == k })
		}
		return e.err
	}
	// The hub bounds the upstream subscription and shares it with every
	// subscriber of the URI on this replica, on either wire.
	sub, err := f.c.SubscribeResource(ctx, k.server, k.uri)
	f.subs.mu.Lock()
	if err == nil && f.subs.closed {
		sub.Close()
		err = core.ErrClosed
	}
	e.err = err
	close(e.ready)
	if err != nil {
		if f.subs.entries[k] == e {
			delete(f.subs.entries, k)
		}
		f.subs.mu.Unlock()
		return err
	}
	f.subs.running.Add(1)
	f.subs.mu.Unlock()
	go func() {
		defer f.subs.running.Done()
		f.forward(e, k, sub)
	}()
	return nil
}

// awaitSessionEnd removes every subscription of ss once it ends.
func (f *Front) awaitSessionEnd(ss *mcp.ServerSession) {
	_ = ss.Wait()
	f.leaveSubs(ss, nil)
	f.subs.mu.Lock()
	delete(f.subs.watched, ss)
	f.subs.mu.Unlock()
}

// leaveSubs removes ss from the subscriptions match accepts (nil: all);
// the last subscriber of one stops its upstream subscription.
func (f *Front) leaveSubs(ss *mcp.ServerSession, match func(subKey) bool) {
	f.subs.mu.Lock()
	defer f.subs.mu.Unlock()
	for k, e := range f.subs.entries {
		if !e.sessions[ss] || (match != nil && !match(k)) {
			continue
		}
		delete(e.sessions, ss)
		if len(e.sessions) == 0 {
			delete(f.subs.entries, k)
			close(e.stop)
		}
	}
}

// closeSubs refuses new subscriptions, stops every forwarder and waits for
// them and for the session-end waiters (Close, Drain: the sessions are
// closed by then). Idempotent.
func (f *Front) closeSubs() {
	f.subs.mu.Lock()
	f.subs.closed = true
	for k, e := range f.subs.entries {
		delete(f.subs.entries, k)
		select {
		case <-e.stop:
		default:
			close(e.stop)
		}
	}
	var sessions []*mcp.ServerSession
	for ss := range f.subs.watched {
		sessions = append(sessions, ss)
	}
	f.subs.mu.Unlock()
	for _, ss := range sessions {
		_ = ss.Close() // ends its waiter (Close and Drain have closed it already)
	}
	f.subs.running.Wait()
}

// forward turns the hub's updates for k (core.SubscribeResource: the
// upstream's resources/updated, and one after the hub subscribed again to
// an upstream that was away) into go-sdk's notification to the sessions
// subscribed to its URI. When the subscription ends for good the sessions
// get one last notification (a read then shows them why) and the entry
// is dropped.
func (f *Front) forward(e *frontSub, k subKey, sub *core.ResourceSub) {
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	notify := func() {
		_ = f.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: k.uri})
	}
	for {
		select {
		case <-e.stop:
			return
		case <-f.stop:
			return
		case <-sub.Updated:
			notify()
		case <-sub.Done:
			f.log.Info("MCP front door: a resource subscription ended", "server", k.server, "uri", k.uri,
				"error", core.Classify(sub.Err(), core.ClassifyOptions{Fields: mcpFields}).Message) // the mapped message: no upstream URLs
			notify()
			f.subs.mu.Lock()
			if f.subs.entries[k] == e {
				delete(f.subs.entries, k)
				close(e.stop)
			}
			f.subs.mu.Unlock()
			return
		}
	}
}

// runResources sends resources/list_changed and prompts/list_changed when
// the merged lists change (debounced like tools), to the sessions whose
// view of them changed.
func (f *Front) runResources(stop <-chan struct{}) {
	cat := f.c.Resources()
	sub := cat.Subscribe()
	defer sub.Close()
	last := cat.Current()
	f.follow(stop, sub.C(), func(authChanged bool) {
		snap := cat.Current()
		if snap.Revision == last.Revision && !authChanged {
			return
		}
		// A reload's new rules change views as a catalog change does.
		var lists []listKind
		if authChanged || !sameResourceLists(last, snap) {
			lists = append(lists, kindResources)
		}
		if authChanged || !samePromptLists(last, snap) {
			lists = append(lists, kindPrompts)
		}
		last = snap
		changed := f.viewsChanged(lists...)
		if changed[kindResources] {
			f.notifyResourcesChanged()
		}
		if changed[kindPrompts] {
			f.notifyPromptsChanged()
		}
	})
}

func sameResourceLists(a, b *core.ResourceSnapshot) bool {
	return core.ResourceRevision(a.Resources, a.Templates, nil) == core.ResourceRevision(b.Resources, b.Templates, nil)
}

func samePromptLists(a, b *core.ResourceSnapshot) bool {
	return core.ResourceRevision(nil, nil, a.Prompts) == core.ResourceRevision(nil, nil, b.Prompts)
}
