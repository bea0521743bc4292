package mcpbridge

import (
	"context"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResourcesAuthName returns the authorization name of a configured server's
// resources (ErrServerNotFound if there is no such server).
func (b *Bridge) ResourcesAuthName(server string) (string, error) {
	u, err := b.upstream(server)
	if err != nil {
		return "", err
	}
	return ResourcesAuthName(u.prefix), nil
}

// Resources returns the resource and prompt catalog.
func (b *Bridge) Resources() *ResourceCatalog { return b.resources }

// caps reports which of resources / prompts the session's upstream
// declares.
func (s *session) caps() (resources, subscribe, prompts bool) {
	ir := s.cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return false, false, false
	}
	c := ir.Capabilities
	return c.Resources != nil, c.Resources != nil && c.Resources.Subscribe, c.Prompts != nil
}

// listChangedKinds is what the session's upstream can announce changes of:
// the letters t (tools), r (resources), p (prompts), for re-opened
// 2026-07-28 listen streams (rewriteListen).
func (s *session) listChangedKinds() string {
	ir := s.cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return "t"
	}
	c := ir.Capabilities
	k := "t"
	if c.Resources != nil && c.Resources.ListChanged {
		k += "r"
	}
	if c.Prompts != nil && c.Prompts.ListChanged {
		k += "p"
	}
	return k
}

// refreshResources lists the session's resources, templates and prompts
// and publishes them. A kind the upstream does not declare is empty (a
// capability lost on reconnect empties it); a list method the upstream
// does not implement is empty too (an upstream without
// resources/templates/list; docs/upstream-behaviour.md §3); any other
// failure keeps
// that kind's previous list and is logged.
func (s *session) refreshResources() {
	u := s.u
	ctx, cancel := contextWithTimeout(s.ctx, u.cfg.RefreshTimeout)
	defer cancel()
	hasRes, _, hasPrompts := s.caps()
	var (
		res   []*mcp.Resource
		tmpls []*mcp.ResourceTemplate
		ps    []*mcp.Prompt
		keep  [3]bool
	)
	fail := func(i int, what string, err error) {
		keep[i] = true
		if isSessionDead(err) {
			s.markDead(err)
		}
		u.log.Warn(what+" failed; keeping the previous list", "error", u.redact(err.Error()))
	}
	var err error
	if hasRes {
		if res, err = s.listResources(ctx); err != nil {
			fail(0, "resources/list", err)
		}
		if tmpls, err = s.listTemplates(ctx); err != nil {
			fail(1, "resources/templates/list", err)
		}
	}
	if hasPrompts {
		if ps, err = s.listPrompts(ctx); err != nil {
			fail(2, "prompts/list", err)
		}
	}
	if s.ctx.Err() != nil {
		return
	}
	u.b.resources.SetServer(u.cfg.Name, u.names, res, tmpls, ps, keep)
}

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// trimURI is a URI for logs and errors: never longer than 200 bytes.
func trimURI(uri string) string {
	if len(uri) > 200 {
		return uri[:200] + "…"
	}
	return strings.ToValidUTF8(uri, "?")
}
