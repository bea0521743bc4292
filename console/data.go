package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
)

// upstream is one upstream as the Upstreams page shows it.
type upstream struct {
	Name          string    `json:"name"`
	State         string    `json:"state"`
	Transport     string    `json:"transport"`
	Era           string    `json:"era,omitempty"`
	Tools         int       `json:"tools"`
	Connects      int64     `json:"connects"`
	Refreshes     int64     `json:"refreshes"`
	LastRefresh   time.Time `json:"lastRefresh,omitzero"`
	LastRefreshOK bool      `json:"lastRefreshOK"`
	Connected     time.Time `json:"connected,omitzero"`
	NextConnect   time.Time `json:"nextConnect,omitzero"`
	Breaker       string    `json:"breaker"`
	BreakerRetry  time.Time `json:"breakerRetry,omitzero"`
	Failures      int       `json:"failures"`
	InFlight      int       `json:"inFlight"`
	Push          string    `json:"push,omitempty"`
	PerUser       bool      `json:"perUser,omitempty"`
	UserSessions  int       `json:"userSessions,omitempty"`
	// Operator details (an admin's view only, as ListServers): the last
	// error (secrets removed by the bridge) and the warnings.
	LastError string   `json:"lastError,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	// Object is the Kubernetes object a discovered upstream came from;
	// Refused says the row is an object (or a source) discovery refused,
	// with why as LastError (an operator's view only, as ListServers).
	Object  *kubeObject `json:"object,omitempty"`
	Refused bool        `json:"refused,omitempty"`
}

// visibleUpstreams is the upstreams the caller may see, as ListServers
// decides: an operator sees every one with its errors; anyone else the
// upstreams with at least one tool its rules allow, without errors.
func (cs *Console) visibleUpstreams(c *caller) []upstream {
	var visible map[string]bool
	if allowed := cs.c.AuthOf(c.ctx).Filter(c.ctx); allowed != nil && !c.admin {
		visible = map[string]bool{}
		for _, t := range cs.c.Tools(c.ctx).Current().Tools {
			if !visible[t.Server] && allowed(t.Name) {
				visible[t.Server] = true
			}
		}
	}
	sts := cs.c.Servers()
	var objects map[string]string
	if c.admin && cs.opts.Kubernetes != nil {
		objects = cs.opts.Kubernetes().Objects
	}
	out := make([]upstream, 0, len(sts))
	for _, st := range sts {
		if visible != nil && !visible[st.Name] {
			continue
		}
		u := upstream{Name: st.Name, State: st.State.String(), Transport: st.Transport.String(), Era: st.ProtocolVersion,
			Tools: st.ToolCount, Connects: st.ConnectCount, Refreshes: st.RefreshCount, LastRefresh: st.LastRefreshTime,
			LastRefreshOK: st.LastRefreshOK, Connected: st.ConnectedTime, NextConnect: st.NextConnectTime,
			Breaker: st.Breaker.String(), BreakerRetry: st.BreakerRetryTime, Failures: st.ConsecutiveFailures,
			InFlight: st.InFlightCalls, Push: st.PushChannel, PerUser: st.PerUser, UserSessions: st.UserSessions}
		if c.admin {
			u.LastError, u.Warnings = st.LastError, st.Warnings
			if src, ok := objects[st.Name]; ok {
				if o, ok := objectOf(src); ok {
					u.Object = &o
				}
			} else if src, ok := strings.CutPrefix(st.Name, refusedPrefix); ok {
				u.Refused = true
				if o, ok := objectOf(src); ok {
					u.Object = &o
				}
			}
		}
		out = append(out, u)
	}
	return out
}

func (cs *Console) upstreams(c *caller, _ *http.Request) (any, *core.Error) {
	return cs.visibleUpstreams(c), nil
}

// toolsBody is the catalog listing, each tool a row of name, server, title and a
// clipped one-line description, as arrays to keep 20,000 of them small.
type toolsBody struct {
	Revision string      `json:"revision"`
	Total    int         `json:"total"`   // the caller's tools (of the server asked for)
	Tools    [][4]string `json:"tools"`   // name, server, title, description
	Partial  bool        `json:"partial"` // limit cut the list: more rows follow Tools
}

// MaxToolsWindow bounds the limit of /ui/api/tools: the first rows a page
// shows, and each block it loads the rest in (a block of 1,000 rows is
// parsed by the browser in a few milliseconds, so a keystroke typed while
// the list loads is never queued behind the parse of all 20,000 rows).
const MaxToolsWindow = 1000

// toolRow is a tool as the Catalog's list shows it.
func toolRow(t *core.Tool) [4]string {
	return [4]string{t.Name, t.Server, clip(t.Title, 120), clip(trimSpaceAll(t.Description), MaxDescriptionRunes)}
}

// visibleTools is the caller's view of the catalog with its rules applied.
func (cs *Console) visibleTools(c *caller) (*core.Snapshot, func(*core.Tool) bool) {
	snap := cs.c.Tools(c.ctx).Current()
	allowed := cs.c.AuthOf(c.ctx).Filter(c.ctx)
	return snap, func(t *core.Tool) bool { return allowed == nil || allowed(t.Name) }
}

func (cs *Console) tools(c *caller, r *http.Request) (any, *core.Error) {
	server, e := query(r, "server")
	if e != nil {
		return nil, e
	}
	snap, keep := cs.visibleTools(c)
	limit := len(snap.Tools)
	if v, e := query(r, "limit"); e != nil {
		return nil, e
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxToolsWindow {
			return nil, fieldError("limit", fmt.Sprintf("an integer from 1 to %d, got %q", MaxToolsWindow, clip(v, 32)))
		}
		limit = n
	}
	// offset: the rows before it are left out (the page loads the list in
	// blocks; each block says its revision, so a block of another catalog
	// is not mixed in).
	offset := 0
	if v, e := query(r, "offset"); e != nil {
		return nil, e
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fieldError("offset", fmt.Sprintf("an integer from 0, got %q", clip(v, 32)))
		}
		offset = n
	}
	body := toolsBody{Revision: snap.Revision, Tools: make([][4]string, 0, min(limit, max(len(snap.Tools)-offset, 0)))}
	for _, t := range snap.Tools {
		if (server != "" && t.Server != server) || !keep(t) {
			continue
		}
		body.Total++
		if body.Total <= offset {
			continue
		}
		if len(body.Tools) == limit {
			body.Partial = true
			continue
		}
		body.Tools = append(body.Tools, toolRow(t))
	}
	return body, nil
}

// toolBody is one tool's whole entry, for the schema view.
type toolBody struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	OriginalName string          `json:"originalName"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *mcpAnnotations `json:"annotations,omitempty"`
	TaskSupport  string          `json:"taskSupport,omitempty"`
	Available    bool            `json:"available"`
}

type mcpAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

func (cs *Console) tool(c *caller, r *http.Request) (any, *core.Error) {
	name, e := query(r, "name")
	if e != nil {
		return nil, e
	}
	if name == "" {
		return nil, fieldError("name", "required: a tool's exposed name")
	}
	snap, keep := cs.visibleTools(c)
	t, ok := snap.Lookup(name)
	if !ok || !keep(t) {
		// A tool the caller may not use is reported as absent, as a call
		// to it would be.
		return nil, core.NewError(core.NotFound, core.ReasonToolNotFound, fmt.Sprintf("no tool %q in your catalog", name),
			map[string]string{"tool": name})
	}
	b := toolBody{Name: t.Name, Server: t.Server, OriginalName: t.OriginalName, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchemaJSON, OutputSchema: t.OutputSchemaJSON, TaskSupport: t.TaskSupport, Available: t.Available}
	if a := t.Annotations; a != nil {
		b.Annotations = &mcpAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return b, nil
}

// searchBody is a search's ranked names (the page has the rows) and the
// ranking that ordered them (complete false: the index's lexical stage,
// the full ranking once the event stream's "search" event says prepared).
type searchBody struct {
	Revision string   `json:"revision"`
	Names    []string `json:"names"`
	// Tools are the hits' rows, in Names' order: the page renders them
	// without looking them up in the whole list (which may still be
	// loading, and whose lookup map of 20,000 rows cost a keystroke tens of
	// milliseconds on a busy machine).
	Tools    [][4]string `json:"tools"`
	Ranking  string      `json:"ranking"`
	Complete bool        `json:"complete"`
}

// search is SearchTools, the operation every caller's search is: rate
// limited, authorized per result, audited.
func (cs *Console) search(c *caller, r *http.Request) (any, *core.Error) {
	q, e := query(r, "q")
	if e != nil {
		return nil, e
	}
	server, e := query(r, "server")
	if e != nil {
		return nil, e
	}
	// Staged: while the index's dense stage is built (the first seconds
	// after a page opens on a large catalog) a keystroke is answered by the
	// lexical stage at once, said so, rather than waiting for it.
	in := core.SearchInput{Query: q, Limit: 100, QueryField: "q", LimitField: "limit", GlobField: "name", Staged: true}
	if server != "" {
		in.Servers = []string{server}
	}
	res, e := cs.c.SearchToolsRanked(c.ctx, in, core.Fields{})
	if e != nil {
		return nil, e
	}
	b := searchBody{Revision: res.Revision, Names: make([]string, 0, len(res.Hits)), Tools: make([][4]string, 0, len(res.Hits)),
		Ranking: res.Ranking, Complete: res.Complete}
	for _, h := range res.Hits {
		b.Names = append(b.Names, h.Tool.Name)
		b.Tools = append(b.Tools, toolRow(h.Tool))
	}
	return b, nil
}

// upstreamAction reconnects or refreshes an upstream: an operator's
// action, the same admin operation of the core as AdminService's
// ReconnectServer and RefreshServer (the core's admin rule, the
// principal's rate limit, one audit line).
func (cs *Console) upstreamAction(c *caller, r *http.Request) (any, *core.Error) {
	if e := cs.checkCSRF(c, r); e != nil {
		return nil, e
	}
	name, action := r.PathValue("name"), r.PathValue("action")
	kind, do := core.OpAdminReconnect, (*core.AdminOp).Reconnect
	switch action {
	case "reconnect":
	case "refresh":
		kind, do = core.OpAdminRefresh, (*core.AdminOp).Refresh
	default:
		return nil, fieldError("action", "one of reconnect, refresh")
	}
	op, err := cs.c.BeginAdmin(c.ctx, kind, name, "")
	if err == nil {
		_, err = do(op)
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return nil, fail
	}
	return map[string]string{"server": name, "action": action}, nil
}
