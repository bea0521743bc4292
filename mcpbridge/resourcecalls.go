package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	// ErrResourceNotFound: the upstream does not have that resource (it
	// answered resources/read with "resource not found": isResourceNotFound
	// in gosdk.go), or no
	// upstream lists it or has a template matching it.
	ErrResourceNotFound = errors.New("resource not found")
	// ErrPromptNotFound: no prompt with that exposed name.
	ErrPromptNotFound = errors.New("prompt not found")
)

// AmbiguousResourceError: ReadResource without a server, and more than one
// upstream lists the URI or has a template matching it.
type AmbiguousResourceError struct {
	URI        string
	Candidates []string
}

func (e *AmbiguousResourceError) Error() string {
	return fmt.Sprintf("resource %q is offered by several servers (%s): name one in server", trimURI(e.URI), strings.Join(e.Candidates, ", "))
}

// ResolveResourceServer picks the server of a resource: server itself when
// set (it must be configured; the URI need not be listed: resource_links
// and template URIs are read as given), else the one upstream that lists
// the URI or has a template matching it.
func (b *Bridge) ResolveResourceServer(server, uri string) (string, error) {
	if b.ctx.Err() != nil {
		return "", ErrClosed
	}
	if server != "" {
		if _, err := b.upstream(server); err != nil {
			return "", err
		}
		return server, nil
	}
	cands := b.resources.Current().ServersFor(uri)
	switch len(cands) {
	case 1:
		return cands[0], nil
	case 0:
		select {
		case <-b.ready:
		default:
			return "", &UnavailableError{Reason: ReasonStarting, RetryAfter: time.Second}
		}
		return "", fmt.Errorf("%w: no server lists %q or has a template matching it", ErrResourceNotFound, trimURI(uri))
	}
	return "", &AmbiguousResourceError{URI: uri, Candidates: cands}
}

// Discovered is nil once the first discovery round finished: a name or URI
// missing from the catalogs is then really missing. Before, it is an
// *UnavailableError (ReasonStarting); after Close, ErrClosed.
func (b *Bridge) Discovered() error {
	if b.ctx.Err() != nil {
		return ErrClosed
	}
	select {
	case <-b.ready:
		return nil
	default:
		return &UnavailableError{Reason: ReasonStarting, RetryAfter: time.Second}
	}
}

// ResolvePrompt looks an exposed prompt name up in the current snapshot.
func (b *Bridge) ResolvePrompt(name string) (*Prompt, error) {
	if b.ctx.Err() != nil {
		return nil, ErrClosed
	}
	p, ok := b.resources.Current().LookupPrompt(name)
	if !ok {
		select {
		case <-b.ready:
		default:
			return nil, &UnavailableError{Reason: ReasonStarting, RetryAfter: time.Second}
		}
		return nil, fmt.Errorf("%w: %q", ErrPromptNotFound, name)
	}
	return p, nil
}

// ReadResource reads uri from server (see ResolveResourceServer for an
// empty server) on behalf of principal (forwarded as for tools/call). An
// upstream "not found" answer is ErrResourceNotFound. in, if set, lets the
// upstream ask for input as CallOptions.Input does for a call.
func (b *Bridge) ReadResource(ctx context.Context, server, uri, principal string, in *Interaction) (*mcp.ReadResourceResult, string, error) {
	server, err := b.ResolveResourceServer(server, uri)
	if err != nil {
		return nil, "", err
	}
	u, err := b.upstream(server)
	if err != nil {
		return nil, "", err
	}
	if in != nil {
		ctx = withInteraction(ctx, in)
	}
	var res *mcp.ReadResourceResult
	err = b.request(ctx, u, labelOf("resources/read"), func(ctx context.Context, s *session) error {
		var err error
		params := &mcp.ReadResourceParams{URI: uri, Meta: s.principalMeta(principal)}
		if in != nil {
			params.InputResponses, params.RequestState = in.Responses, in.State
		}
		ctx, rq := startRaw(ctx) // the raw result, for a caller that asked (rawresult.go)
		res, err = s.cs.ReadResource(ctx, params)
		rq.finish(ctx, res, err)
		return err
	})
	var uerr *UpstreamError
	if errors.As(err, &uerr) && isResourceNotFound(uerr.Code) {
		return nil, server, fmt.Errorf("%w: server %q has no resource %q (%s)", ErrResourceNotFound, server, trimURI(uri), uerr.Message)
	}
	return res, server, err
}

// MissingArgumentsError: GetPrompt without a required argument.
type MissingArgumentsError struct {
	Prompt  string
	Missing []string
}

func (e *MissingArgumentsError) Error() string {
	return fmt.Sprintf("prompt %q requires argument(s) %s", e.Prompt, strings.Join(e.Missing, ", "))
}

// GetPrompt renders the prompt p (from ResolvePrompt) with args on behalf
// of principal (forwarded as for tools/call). Required arguments are
// checked first (*MissingArgumentsError; nothing is sent). in, if set, lets
// the upstream ask for input as CallOptions.Input does for a call.
func (b *Bridge) GetPrompt(ctx context.Context, p *Prompt, args map[string]string, principal string, in *Interaction) (*mcp.GetPromptResult, error) {
	var missing []string
	for _, a := range p.P.Arguments {
		if a != nil && a.Required {
			if _, ok := args[a.Name]; !ok {
				missing = append(missing, a.Name)
			}
		}
	}
	if len(missing) > 0 {
		return nil, &MissingArgumentsError{Prompt: p.Name, Missing: missing}
	}
	u, err := b.upstream(p.Server)
	if err != nil {
		return nil, err
	}
	if in != nil {
		ctx = withInteraction(ctx, in)
	}
	var res *mcp.GetPromptResult
	err = b.request(ctx, u, labelOf("prompts/get"), func(ctx context.Context, s *session) error {
		var err error
		params := &mcp.GetPromptParams{Name: p.P.Name, Arguments: args, Meta: s.principalMeta(principal)}
		if in != nil {
			params.InputResponses, params.RequestState = in.Responses, in.State
		}
		res, err = s.cs.GetPrompt(ctx, params)
		return err
	})
	return res, err
}

// resourceSubs are one session's resource subscriptions: per URI, the
// subscribers' signals. The upstream is subscribed once per URI and
// unsubscribed when the last subscriber leaves.
type resourceSubs struct {
	mu   sync.Mutex
	uris map[string]*uriSub
	// closed is set (under mu) by teardown before it waits for the
	// session's goroutines: no resubscribe starts after it.
	closed bool
}

// uriSub is the upstream subscription to one URI on one session.
type uriSub struct {
	chans map[chan struct{}]struct{}
	// ready is closed once the upstream answered the subscription (err
	// says how); subscribers that join meanwhile wait for it and share the
	// outcome.
	ready chan struct{}
	err   error

	// A 2026-07-28 subscription over streamable HTTP is a
	// subscriptions/listen stream, which the upstream can end while the
	// session lives on (a stateless server restarted behind the same URL
	// looks like the same session). The bridge then subscribes again
	// (resubscribe), with backoff, and signals every subscriber once the
	// new stream is up: the contents may have changed meanwhile.
	resubscribing bool          // a resubscribe is scheduled or running
	reopened      bool          // a new stream was requested; signal when up
	upSince       time.Time     // when the current stream came up; zero while down
	backoff       time.Duration // before the next resubscribe
	// pendingDown: the first stream failed before the subscription was
	// ready (go-sdk's Subscribe sends the listen request and returns
	// without its outcome); SubscribeResource then schedules a resubscribe.
	pendingDown bool
}

// Resubscribe backoff: from the first to the last, doubling while streams
// end within resubscribeStable of coming up.
const (
	resubscribeFirst  = 100 * time.Millisecond
	resubscribeMax    = 5 * time.Second
	resubscribeStable = 10 * time.Second
)

// nextResubscribeWait is the wait before subscribing again, given the
// previous wait (0: none yet) and how long the ended stream was up.
func nextResubscribeWait(prev, upFor time.Duration) time.Duration {
	if prev == 0 || upFor > resubscribeStable {
		return resubscribeFirst
	}
	return min(2*prev, resubscribeMax)
}

// onSubscriptionStream is the pushChannel's subStream hook: a resource
// subscription's listen stream came up or ended. It never blocks.
func (s *session) onSubscriptionStream(uris []string, up bool) {
	s.rsubs.mu.Lock()
	defer s.rsubs.mu.Unlock()
	for _, uri := range uris {
		e := s.rsubs.uris[uri]
		if e == nil {
			continue
		}
		if up {
			e.upSince = time.Now()
			if e.reopened {
				e.reopened = false
				for ch := range e.chans {
					select {
					case ch <- struct{}{}:
					default:
					}
				}
			}
			continue
		}
		select {
		case <-e.ready:
		default:
			e.pendingDown = true // SubscribeResource schedules the resubscribe
			continue
		}
		if e.err != nil || e.resubscribing || s.rsubs.closed || s.isDead() || s.ctx.Err() != nil {
			continue
		}
		upFor := time.Duration(0) // a stream that never came up: keep backing off
		if !e.upSince.IsZero() {
			upFor = time.Since(e.upSince)
		}
		e.upSince = time.Time{}
		e.backoff = nextResubscribeWait(e.backoff, upFor)
		e.resubscribing = true
		s.wg.Add(1) // teardown waits for it (rsubs.closed orders this Add before its Wait)
		go func(uri string, e *uriSub, wait time.Duration) {
			defer s.wg.Done()
			s.resubscribe(uri, e, wait)
		}(uri, e, e.backoff)
	}
}

// resubscribe opens a new listen stream for uri after wait, unless the
// session or the subscription went away meanwhile.
func (s *session) resubscribe(uri string, e *uriSub, wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.deadCtx.Done():
		return
	case <-s.ctx.Done():
		return
	case <-t.C:
	}
	s.rsubs.mu.Lock()
	current := s.rsubs.uris[uri] == e
	e.resubscribing = false
	if current {
		e.reopened = true
	}
	s.rsubs.mu.Unlock()
	if !current || s.isDead() || s.ctx.Err() != nil {
		return
	}
	s.u.log.Debug("resource subscription stream ended; subscribing again", "uri", trimURI(uri))
	ctx, cancel := context.WithTimeout(s.ctx, time.Second)
	defer cancel()
	if err := resubscribeStream(ctx, s.cs, uri); err != nil { // its outcome: onSubscriptionStream
		s.onSubscriptionStream([]string{uri}, false)
		return
	}
	// The last subscriber may have left (and unsubscribed) meanwhile: then
	// the stream just opened has no owner. (A newer subscription of the
	// same URI shares it: go-sdk keeps one stream per URI.)
	s.rsubs.mu.Lock()
	gone := s.rsubs.uris[uri] == nil
	s.rsubs.mu.Unlock()
	if gone {
		_ = s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	}
}

// leaveURI removes one subscriber of uri; it reports whether it was the
// last of a subscription the upstream accepted (which should then be
// unsubscribed). A failed subscription's entry goes with its last
// subscriber, so the next one subscribes afresh.
func (s *session) leaveURI(uri string, ch chan struct{}) bool {
	s.rsubs.mu.Lock()
	defer s.rsubs.mu.Unlock()
	e := s.rsubs.uris[uri]
	if e == nil {
		return false
	}
	delete(e.chans, ch)
	if len(e.chans) > 0 {
		return false
	}
	delete(s.rsubs.uris, uri)
	select {
	case <-e.ready:
		return e.err == nil
	default:
		return false // the first subscriber is still subscribing; it cleans up
	}
}

// onResourceUpdated is the resources/updated handler: a non-blocking signal
// to each subscriber of the URI (like markDirty, it never blocks).
func (s *session) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req.Params == nil {
		return
	}
	s.rsubs.mu.Lock()
	defer s.rsubs.mu.Unlock()
	e := s.rsubs.uris[req.Params.URI]
	if e == nil {
		return
	}
	for ch := range e.chans {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// ErrSubscriptionsUnsupported: the upstream does not declare
// resources.subscribe.
var ErrSubscriptionsUnsupported = errors.New("the upstream does not support resource subscriptions")

// ResourceSubscription is one subscriber's view of an upstream resource
// subscription on one session.
type ResourceSubscription struct {
	// Updated is signalled (capacity 1: updates collapse) on every
	// resources/updated for the URI.
	Updated <-chan struct{}
	// Done is closed when the session goes away; Err then says why.
	Done <-chan struct{}
	// Server is the server subscribed to.
	Server string

	s     *session
	uri   string
	ch    chan struct{}
	close sync.Once
}

// Err is the reason the subscription ended (an *UnavailableError once the
// session is gone).
func (r *ResourceSubscription) Err() error {
	return &UnavailableError{Server: r.Server, Reason: ReasonSessionLost, RetryAfter: r.s.u.nextConnectIn()}
}

// Close ends the subscription; the last subscriber of a URI unsubscribes
// the upstream (best effort, bounded).
func (r *ResourceSubscription) Close() {
	r.close.Do(func() {
		s := r.s
		if !s.leaveURI(r.uri, r.ch) {
			return
		}
		if !s.isDead() && s.ctx.Err() == nil {
			ctx, cancel := context.WithTimeout(s.ctx, time.Second)
			_ = s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: r.uri})
			cancel()
		}
	})
}

// SubscribeResource subscribes to uri on the session for ctx's request (see
// ResolveResourceServer for an empty server). The caller reads the
// contents itself (ReadResource) after subscribing and on every Updated
// signal, and must Close the subscription.
func (b *Bridge) SubscribeResource(ctx context.Context, server, uri string) (*ResourceSubscription, error) {
	server, err := b.ResolveResourceServer(server, uri)
	if err != nil {
		return nil, err
	}
	u, err := b.upstream(server)
	if err != nil {
		return nil, err
	}
	// Decided without a request where the session tells (no verdict for
	// the breaker, no slot), and again on the session the request gets: a
	// per-user caller's first one, or a newer one, is known only there.
	unsupported := fmt.Errorf("%w (server %q)", ErrSubscriptionsUnsupported, server)
	if s := u.source.current(ctx); s != nil {
		if _, can, _ := s.caps(); !can {
			return nil, unsupported
		}
	}
	var sub *ResourceSubscription
	var pre error // decided without a request (not an upstream failure)
	err = b.request(ctx, u, labelOf("resources/subscribe"), func(ctx context.Context, s *session) error {
		if _, can, _ := s.caps(); !can {
			pre = unsupported
			return nil
		}
		ch, err := s.joinURI(ctx, uri)
		if err != nil {
			return err
		}
		sub = &ResourceSubscription{Updated: ch, Done: s.deadCtx.Done(), Server: server, s: s, uri: uri, ch: ch}
		return nil
	})
	if err == nil {
		err = pre
	}
	if err != nil {
		return nil, err
	}
	// Teardown marks the session dead, so Done also closes when the server
	// is removed or the bridge closes.
	return sub, nil
}

// joinURI adds a subscriber of uri on the session and returns its signal:
// the first subscriber subscribes the upstream, later ones wait for that
// outcome and share it.
func (s *session) joinURI(ctx context.Context, uri string) (chan struct{}, error) {
	ch := make(chan struct{}, 1)
	s.rsubs.mu.Lock()
	if s.rsubs.uris == nil {
		s.rsubs.uris = map[string]*uriSub{}
	}
	e := s.rsubs.uris[uri]
	first := e == nil
	if first {
		e = &uriSub{chans: map[chan struct{}]struct{}{}, ready: make(chan struct{})}
		s.rsubs.uris[uri] = e
	}
	e.chans[ch] = struct{}{}
	s.rsubs.mu.Unlock()
	if first {
		e.err = s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		s.rsubs.mu.Lock()
		close(e.ready)
		down := e.pendingDown && e.err == nil
		e.pendingDown = false
		s.rsubs.mu.Unlock()
		if down {
			s.onSubscriptionStream([]string{uri}, false)
		}
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			s.leaveURI(uri, ch)
			return nil, ctx.Err()
		}
	}
	if e.err != nil {
		s.leaveURI(uri, ch)
		return nil, e.err
	}
	return ch, nil
}
