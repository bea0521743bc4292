package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge/catalog"
)

// refreshTimers are the refresher's timers and counts.
type refreshTimers struct {
	backstop, retry, reopen <-chan time.Time
	failures, reopens       int
	wasDown                 bool // the push channel was down: changes may have been missed
}

// nextBackstop is the timer of the next backstop re-list: RefreshInterval,
// PushlessRefresh while the push channel is down, the upstream's ttlMs if
// shorter (nil: none).
func (s *session) nextBackstop() <-chan time.Time {
	u := s.u
	d := u.cfg.RefreshInterval
	if s.pushless() && (d <= 0 || u.cfg.PushlessRefresh < d) {
		d = u.cfg.PushlessRefresh
	}
	if ttl := time.Duration(s.ttl.Load()) * time.Millisecond; ttl > 0 && (d <= 0 || ttl < d) {
		d = max(ttl, time.Second)
	}
	if d <= 0 {
		return nil
	}
	return time.After(d)
}

// pushChanged follows the push channel's state: a channel back up after
// being down asks for a re-list (changes may have been missed meanwhile); a
// 2026-07-28 listen stream that went down is re-opened with backoff.
func (s *session) pushChanged(st *refreshTimers) (relist bool) {
	state := s.push.get()
	st.backstop = s.nextBackstop()
	switch {
	case state == pushUp:
		st.reopen, st.reopens = nil, 0
		relist, st.wasDown = st.wasDown, false
		return relist
	case state == pushDown && s.newProtocol():
		st.wasDown = true
		if st.reopen == nil {
			st.reopen = time.After(backoff(s.u.cfg.BackoffBase, s.u.cfg.BackoffMax, st.reopens))
		}
	default:
		st.wasDown = state == pushDown || state == pushNone
	}
	return false
}

// debounce waits until marks have been quiet for RefreshDebounce, but no
// longer than RefreshMaxDelay after the first one. It consumes the marks:
// those on s.dirty, and the list_changed notifications the stdio
// connection absorbed meanwhile (absorbListChanged), which count from the
// time they were read.
func (s *session) debounce() bool {
	d := s.u.cfg.RefreshDebounce
	start := s.markClock()
	s.debouncing.Store(true)
	defer s.debouncing.Store(false)
	quiet := time.NewTimer(d)
	defer quiet.Stop()
	deadline := time.NewTimer(s.u.cfg.RefreshMaxDelay)
	defer deadline.Stop()
	for {
		select {
		case <-s.dirty:
			quiet.Reset(d)
		case <-quiet.C:
			if last := time.Duration(s.lastMark.Load()); last >= start {
				if rest := d - (s.markClock() - last); rest > 0 {
					quiet.Reset(rest)
					continue
				}
			}
			return true
		case <-deadline.C:
			return true
		case <-s.ctx.Done():
			return false
		case <-s.deadCtx.Done():
			return false
		}
	}
}

// relistWorkHook, when set (tests), is called with +1 when a listing's
// first page is taken in and -1 once its tools are published: it brackets
// the listing's work after the upstream answered.
var relistWorkHook func(delta int)

// refresh lists every page of tools and publishes them. The dirty mark is
// drained first, so a push that lands during the listing causes exactly one
// more pass.
func (s *session) refresh() error {
	select {
	case <-s.dirty:
	default:
	}
	u := s.u
	ctx, cancel := context.WithTimeout(s.ctx, u.cfg.RefreshTimeout)
	defer cancel()
	ctx = connClosing(ctx) // a listing keeps no connection while idle (streamhttp.go)
	began := time.Now()
	// The listing's work once its responses are in runs in turns of the
	// replica's refresh work (refreshwork.go): a storm of listings leaves
	// the calls their CPU.
	hold := &workHold{w: u.b.work, key: u.cfg.Name}
	defer hold.release()
	tools, err := s.listTools(ctx, hold)
	if err == nil {
		// Held already unless the listing came from go-sdk's cache.
		err = hold.gate(ctx)
	}
	if len(u.cfg.ToolsAllow)+len(u.cfg.ToolsDeny) > 0 {
		// First: a tool the operator denied is neither measured nor warned
		// about.
		tools = slices.DeleteFunc(tools, func(t *mcp.Tool) bool { return t == nil || !u.cfg.exposes(t.Name) })
	}
	if err == nil {
		tools = u.usableTools(tools)
	}
	n, shared := 0, false
	if err == nil {
		n, shared, err = u.source.publish(s, tools, s.taskSupport(tools))
	}
	if h := relistWorkHook; h != nil && len(tools) > 0 {
		h(-1)
	}
	hold.release()
	now := time.Now()
	u.mu.Lock()
	u.status.LastRefreshTime = now
	u.status.LastRefreshOK = err == nil
	if err == nil {
		u.status.RefreshCount++
		if shared { // one principal's count is nobody else's
			u.status.ToolCount = n
		}
		u.status.LastListOK = now
	} else {
		if ctx.Err() != nil && s.ctx.Err() == nil {
			err = fmt.Errorf("tools/list timed out after %s", u.cfg.RefreshTimeout)
		}
		u.status.LastError = u.redact(err.Error())
	}
	u.mu.Unlock()
	if o := u.b.cfg.Observer; o != nil && s.ctx.Err() == nil {
		o.RefreshDone(u.cfg.Name, time.Since(began), err)
	}
	if err != nil {
		if isSessionDead(err) {
			s.markDead(err)
		}
		msg := u.redact(err.Error())
		u.log.Warn("tools/list failed", "error", msg)
		return fmt.Errorf("tools/list: %s", msg) // redacted: it reaches operators through Refresh
	}
	u.log.Debug("tools listed", "tools", n)
	// Resources, templates and prompts ride the same pass (and so the same
	// list_changed marks and debounce); their failures never fail it. A
	// per-user upstream listing per principal keeps the resources its
	// first listing published (shared: docs/credentials.md).
	if u.source.listsResources() {
		s.refreshResources()
	}
	return nil
}

// maxToolNameBytes bounds an upstream's tool name. The MCP specification
// says names SHOULD be 1 to 128 characters of [A-Za-z0-9_.-]
// (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names);
// twice that leaves room for upstreams that stretch the SHOULD, while a
// 100 KB name never reaches the catalog, its warnings or a caller's error.
const maxToolNameBytes = 256

// unusableToolName says why an upstream's tool cannot be exposed or called
// by its name ("" when it can): toolsvc calls a tool by the name the
// upstream listed, and shows that name to operators and in errors.
func unusableToolName(t *mcp.Tool) string {
	switch {
	case t == nil:
		return "a null entry"
	case t.Name == "":
		return "an empty name"
	case len(t.Name) > maxToolNameBytes:
		return fmt.Sprintf("a name of %d bytes (over %d)", len(t.Name), maxToolNameBytes)
	case !utf8.ValidString(t.Name) || strings.ContainsRune(t.Name, utf8.RuneError):
		// JSON decoding turns invalid UTF-8 into U+FFFD: the name we hold
		// may not be the one the upstream would answer to.
		return "a name that is not valid UTF-8"
	}
	for _, r := range t.Name {
		// Control characters drive terminals; format characters (bidi
		// overrides, zero-width joiners) make one name look like another.
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return "a name with control or format characters"
		}
	}
	return ""
}

// DefaultMaxToolBytes is the tool-size bound when Config.MaxToolBytes is 0:
// far above real tools (the largest schemas generated from OpenAPI
// documents run to tens of kilobytes) and a quarter of the default
// response limit, so every tool fits in a watch event part and in a
// ListTools page a default gRPC client accepts (4 MiB).
const DefaultMaxToolBytes = 1 << 20

// maxToolBytes is the tool-size bound in force.
func (u *upstream) maxToolBytes() int {
	if n := u.b.cfg.MaxToolBytes; n > 0 {
		return n
	}
	return DefaultMaxToolBytes
}

// usableTools drops the tools whose names cannot be used, and those whose
// definition is over the size bound, with a warning per tool in the
// server's status (ListServers; the first catalog.MaxListWarnings, then a count)
// and, when the set changes, in the log. Names in warnings are quoted
// (escaped) and cut short.
func (u *upstream) usableTools(tools []*mcp.Tool) []*mcp.Tool {
	var warnings []string
	skipped := 0
	limit := u.maxToolBytes()
	kept := tools[:0:0]
	for i, t := range tools {
		why := unusableToolName(t)
		if why == "" {
			if n := toolBytes(t, limit); n > limit {
				why = fmt.Sprintf("a definition of more than %d bytes (the limit per tool)", limit)
			}
		}
		if why == "" {
			kept = append(kept, t)
			continue
		}
		skipped++
		if len(warnings) == catalog.MaxListWarnings {
			continue
		}
		w := fmt.Sprintf("tool #%d skipped: %s", i, why)
		if t != nil && t.Name != "" {
			name := t.Name
			if len(name) > 64 {
				name = name[:64] + "…"
			}
			w += fmt.Sprintf(" (%s)", strconv.QuoteToASCII(name))
		}
		warnings = append(warnings, w)
	}
	if skipped > len(warnings) {
		warnings = append(warnings, fmt.Sprintf("%d more tools skipped", skipped-len(warnings)))
	}
	u.mu.Lock()
	changed := !slices.Equal(u.listWarnings, warnings)
	u.listWarnings = warnings
	u.mu.Unlock()
	if changed && len(warnings) > 0 {
		u.log.Warn("upstream tools skipped", "skipped", skipped, "first", warnings[0])
	}
	return kept
}

// toolBytes is the size of t's definition as JSON text, counted up to a
// little past limit (a tool far over the bound is not measured whole).
func toolBytes(t *mcp.Tool, limit int) int {
	n := len(t.Name) + len(t.Title) + len(t.Description)
	if a := t.Annotations; a != nil {
		n += len(a.Title) + 64 // the hints: a few booleans
	}
	for _, v := range []any{t.InputSchema, t.OutputSchema, map[string]any(t.Meta)} {
		if n > limit {
			break
		}
		n += jsonTextBytes(v, limit-n+1)
	}
	return n
}

// jsonTextBytes is the length of v's JSON encoding (string escapes
// counted as one byte: a lower bound), stopping once it passes budget.
// v is what go-sdk decoded: maps, slices, strings, numbers, booleans, nil,
// or json.RawMessage.
func jsonTextBytes(v any, budget int) int {
	switch v := v.(type) {
	case map[string]any:
		n := 2
		for k, x := range v {
			if n > budget {
				break
			}
			n += len(k) + 4 + jsonTextBytes(x, budget-n)
		}
		return n
	case []any:
		n := 2
		for _, x := range v {
			if n > budget {
				break
			}
			n += 1 + jsonTextBytes(x, budget-n)
		}
		return n
	case string:
		return len(v) + 2
	case json.RawMessage:
		return len(v)
	case decodedSchema:
		return len(v.text)
	case nil:
		return 4
	default: // numbers, booleans
		return 8
	}
}
