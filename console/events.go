package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
)

// TrafficInterval is how often an open Traffic page gets the summary.
const TrafficInterval = 2 * time.Second

// sendTimeout bounds one event's write: a page that stops reading ends its
// stream instead of holding it (the browser's EventSource reconnects).
const sendTimeout = 10 * time.Second

// catalogEvent is one change of the caller's view of the catalog: what was
// added, changed and removed between two revisions (names bounded by
// MaxChangeNames per kind, counts exact).
type catalogEvent struct {
	Revision string    `json:"revision"`
	Previous string    `json:"previous,omitempty"`
	Time     time.Time `json:"time"`
	Count    int       `json:"count"`
	Added    []string  `json:"added,omitempty"`
	Changed  []string  `json:"changed,omitempty"`
	Removed  []string  `json:"removed,omitempty"`
	NAdded   int       `json:"nAdded"`
	NChanged int       `json:"nChanged"`
	NRemoved int       `json:"nRemoved"`
}

// events is a page's event stream (Server-Sent Events): "upstreams" with
// the visible upstreams whenever their status differs from what the
// stream last sent (sampled every Options.SampleInterval while the page is
// open), and "catalog" with each change of the caller's view of the
// catalog (the view's subscription, as WatchCatalog's). A page that is not
// open costs nothing. The stream ends when the auth state changes (the
// browser reconnects and is decided under the new rules), when the
// client goes, or when a write does not finish within sendTimeout.
func (cs *Console) events(w http.ResponseWriter, r *http.Request) {
	c, e := cs.authenticate(r)
	if e != nil {
		writeError(w, e)
		return
	}
	release, e := cs.acquireStream(c.p.Name)
	if e != nil {
		writeError(w, e)
		return
	}
	defer release()
	// ?calls=1 (the Calls page, with its filters): the lines the caller
	// may see, those of the ring first, then as they are written (checked
	// every SampleInterval).
	var callsKeep func(*callLine) bool
	var callsSeq uint64
	callsFirst := true // the first event is sent even when empty: the page is then loaded
	if r.URL.Query().Get("calls") == "1" && cs.opts.Calls != nil {
		if callsKeep, e = callFilter(c, r); e != nil {
			writeError(w, e)
			return
		}
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		return cs.write(w, rc, event, b)
	}
	view := cs.c.Tools(c.ctx)
	sub := view.Subscribe()
	defer sub.Close()
	// The search index is brought to the catalog while the page is open,
	// now and after each change, so the page's first search does not wait
	// for it (core.PrepareSearch: once per revision for the replica, the
	// other pages' calls return at once). Joined before the stream ends.
	// Each preparation's end is told to the page ("search" event), which
	// asks again a search the lexical stage answered.
	// One preparer per stream, kicked on each change (at most one kick
	// waits): a catalog changing faster than a build takes does not pile
	// up goroutines waiting on the replica's build, one per change.
	var prep sync.WaitGroup
	defer prep.Wait()
	prepared := make(chan struct{}, 1)
	kick, stop := make(chan struct{}, 1), make(chan struct{})
	defer close(stop) // before prep.Wait (deferred calls run last first)
	prepare := func() {
		select {
		case kick <- struct{}{}:
		default: // a preparation is already asked for
		}
	}
	prep.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-kick:
			}
			cs.c.PrepareSearch()
			select {
			case prepared <- struct{}{}:
			default: // one is already waiting to be told
			}
		}
	})
	prepare()
	authChanged := cs.c.AuthOf(c.ctx).Changed()

	_, keep := cs.visibleTools(c)
	prev := view.Current()
	if !send("catalog", catalogEvent{Revision: prev.Revision, Time: prev.Created, Count: countKept(prev, keep)}) {
		return
	}
	var lastUp []byte
	sendUpstreams := func() bool {
		b, err := json.Marshal(cs.visibleUpstreams(c))
		if err != nil || bytes.Equal(b, lastUp) {
			return err == nil
		}
		lastUp = b
		return cs.write(w, rc, "upstreams", b)
	}
	// Kubernetes discovery's sources (an operator's, as ListServers'
	// discovery_sources): sent with the upstreams' samples when changed.
	var lastKube []byte
	sendKube := func() bool {
		if !c.admin || cs.opts.Kubernetes == nil {
			return true
		}
		b, err := json.Marshal(cs.opts.Kubernetes().Sources)
		if err != nil || bytes.Equal(b, lastKube) {
			return err == nil
		}
		lastKube = b
		return cs.write(w, rc, "discovery", b)
	}
	if !sendUpstreams() || !sendKube() {
		return
	}
	// ?traffic=1 (the Traffic page, an operator's): the last hour's summary
	// now and every TrafficInterval.
	var trafficC <-chan time.Time
	if r.URL.Query().Get("traffic") == "1" && c.admin && cs.opts.Traffic != nil {
		if !send("traffic", cs.opts.Traffic.View()) {
			return
		}
		tick := time.NewTicker(TrafficInterval)
		defer tick.Stop()
		trafficC = tick.C
	}
	sendCalls := func() bool {
		if callsKeep == nil {
			return true
		}
		lines, seq := cs.opts.Calls.since(callsSeq, callsKeep)
		callsSeq = seq
		if len(lines) == 0 && !callsFirst {
			return true
		}
		callsFirst = false
		return send("calls", callsBody{Seq: seq, Lines: lines, Auth: cs.c.AuthOf(c.ctx).Configured()})
	}
	if !sendCalls() {
		return
	}
	// ?tasks=1 (the Tasks page): the caller's tasks (ListTasks) now and
	// every TrafficInterval when they changed.
	var tasksC, configC <-chan time.Time
	var lastTasks []byte
	sendTasks := func() bool {
		rows, e := cs.taskRows(c)
		if e != nil {
			return send("tasks-error", errorBody{Code: codeName(e.Code), Reason: e.Reason, Message: e.Message, Meta: e.Meta})
		}
		b, err := json.Marshal(rows)
		if err != nil || bytes.Equal(b, lastTasks) {
			return err == nil
		}
		lastTasks = b
		return cs.write(w, rc, "tasks", b)
	}
	// ?config=1 (the Config page, an operator's): the configuration's
	// status now and whenever it changed (a reload), checked every
	// TrafficInterval.
	var lastConfig, lastEffective []byte
	sendConfig := func() bool {
		b, err := json.Marshal(cs.opts.Config())
		if err != nil || bytes.Equal(b, lastConfig) {
			return err == nil
		}
		lastConfig = b
		if !cs.write(w, rc, "config", b) {
			return false
		}
		if cs.opts.Effective == nil { // the status changed: a reload may have changed the configuration
			return true
		}
		if b, err = json.Marshal(cs.opts.Effective()); err != nil || bytes.Equal(b, lastEffective) {
			return err == nil
		}
		lastEffective = b
		return cs.write(w, rc, "effective", b)
	}
	if r.URL.Query().Get("config") == "1" && c.admin && cs.opts.Config != nil {
		if !sendConfig() {
			return
		}
		tick := time.NewTicker(TrafficInterval)
		defer tick.Stop()
		configC = tick.C
	}
	// ?logins=1 (the Logins page): the logins the caller may see now and
	// every TrafficInterval when they changed (a login completed in a
	// browser, a logout from any wire).
	var loginsC <-chan time.Time
	var lastLogins []byte
	sendLogins := func() bool {
		body, e := cs.loginsOf(c, "")
		if e != nil {
			b, _ := json.Marshal(errorOf(e))
			if bytes.Equal(b, lastLogins) {
				return true
			}
			lastLogins = b
			return cs.write(w, rc, "logins-error", b)
		}
		b, err := json.Marshal(body)
		if err != nil || bytes.Equal(b, lastLogins) {
			return err == nil
		}
		lastLogins = b
		return cs.write(w, rc, "logins", b)
	}
	if r.URL.Query().Get("logins") == "1" {
		if !sendLogins() {
			return
		}
		tick := time.NewTicker(TrafficInterval)
		defer tick.Stop()
		loginsC = tick.C
	}
	if r.URL.Query().Get("tasks") == "1" {
		if !sendTasks() {
			return
		}
		tick := time.NewTicker(TrafficInterval)
		defer tick.Stop()
		tasksC = tick.C
	}
	sample := time.NewTicker(cs.opts.SampleInterval)
	defer sample.Stop()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-authChanged:
			return
		case <-sub.C():
			cur := view.Current()
			if cur.Revision == prev.Revision {
				continue
			}
			prepare()
			ev := diff(prev, cur, keep)
			prev = cur
			if ev.NAdded+ev.NChanged+ev.NRemoved == 0 {
				continue // a change the caller's rules do not show
			}
			if !send("catalog", ev) {
				return
			}
		case <-prepared:
			if !send("search", searchEvent{Prepared: cs.c.SearchPrepared()}) {
				return
			}
		case <-sample.C:
			if !sendUpstreams() || !sendKube() || !sendCalls() {
				return
			}
		case <-configC:
			if !sendConfig() {
				return
			}
		case <-tasksC:
			if !sendTasks() {
				return
			}
		case <-loginsC:
			if !sendLogins() {
				return
			}
		case <-trafficC:
			if !send("traffic", cs.opts.Traffic.View()) {
				return
			}
		case <-beat.C:
			if !cs.write(w, rc, "", nil) {
				return
			}
		}
	}
}

// write sends one event (a comment when event is "") and flushes it,
// within sendTimeout.
func (cs *Console) write(w http.ResponseWriter, rc *http.ResponseController, event string, data []byte) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(sendTimeout))
	var buf bytes.Buffer
	if event == "" {
		buf.WriteString(": keep-alive\n\n")
	} else {
		buf.WriteString("event: " + event + "\ndata: ")
		buf.Write(data) // JSON: no newline inside
		buf.WriteString("\n\n")
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return false
	}
	return rc.Flush() == nil
}

func countKept(s *core.Snapshot, keep func(*core.Tool) bool) int {
	n := 0
	for _, t := range s.Tools {
		if keep(t) {
			n++
		}
	}
	return n
}

// diff walks two snapshots' sorted tools once. Entries are immutable and a
// refresh reuses an unchanged tool's entry, so a different pointer under
// one name is a change (its availability included).
func diff(a, b *core.Snapshot, keep func(*core.Tool) bool) catalogEvent {
	ev := catalogEvent{Revision: b.Revision, Previous: a.Revision, Time: b.Created}
	add := func(list *[]string, n *int, name string) {
		if *n < MaxChangeNames {
			*list = append(*list, name)
		}
		*n++
	}
	i, j := 0, 0
	for i < len(a.Tools) || j < len(b.Tools) {
		switch {
		case j == len(b.Tools) || (i < len(a.Tools) && a.Tools[i].Name < b.Tools[j].Name):
			if keep(a.Tools[i]) {
				add(&ev.Removed, &ev.NRemoved, a.Tools[i].Name)
			}
			i++
		case i == len(a.Tools) || b.Tools[j].Name < a.Tools[i].Name:
			if keep(b.Tools[j]) {
				add(&ev.Added, &ev.NAdded, b.Tools[j].Name)
			}
			j++
		default:
			if a.Tools[i] != b.Tools[j] && keep(b.Tools[j]) {
				add(&ev.Changed, &ev.NChanged, b.Tools[j].Name)
			}
			i++
			j++
		}
	}
	ev.Count = countKept(b, keep)
	return ev
}

// searchEvent says the search index holds the current catalog, every
// stage of it (a search now ranks as configured).
type searchEvent struct {
	Prepared bool `json:"prepared"`
}
