package console

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
)

// Bounds of the traffic ring (docs/security.md, "The operator console"):
// one slot per minute of the last hour, each with the totals, at most
// MaxTrafficServers servers and MaxTrafficTools tools (the rest counted
// under "(other)"), so the ring holds at most
// TrafficSlots × (1 + MaxTrafficServers + MaxTrafficTools) stats
// (TrafficRingBytes) whatever the number of tools.
const (
	TrafficSlots      = 60
	TrafficSlotLength = time.Minute
	MaxTrafficServers = 128
	MaxTrafficTools   = 200
	maxOutcomes       = 32
	latencyBuckets    = 48
	otherName         = "(other)"
)

// latencyBound is bucket i's upper bound: 50 µs × 1.5^i (the last is 4,800 s).
func latencyBound(i int) time.Duration {
	return time.Duration(float64(50*time.Microsecond) * math.Pow(1.5, float64(i)))
}

var latencyBounds = func() (b [latencyBuckets]time.Duration) {
	for i := range b {
		b[i] = latencyBound(i)
	}
	return
}()

// stat is one key's calls in one slot: how many, how many did not end
// ok, and a latency histogram.
type stat struct {
	calls, errors uint32
	hist          [latencyBuckets]uint32
}

func (s *stat) add(outcome string, bucket int) {
	s.calls++
	if outcome != "ok" {
		s.errors++
	}
	s.hist[bucket]++
}

// bucketOf is the latency bucket of took.
func bucketOf(took time.Duration) int {
	i, _ := slices.BinarySearch(latencyBounds[:], took)
	return min(i, latencyBuckets-1)
}

func (s *stat) merge(o *stat) {
	s.calls += o.calls
	s.errors += o.errors
	for i, v := range o.hist {
		s.hist[i] += v
	}
}

// quantile is the upper bound of the bucket holding the q-quantile (0
// without calls).
func (s *stat) quantile(q float64) time.Duration {
	if s.calls == 0 {
		return 0
	}
	rank := uint32(math.Ceil(q * float64(s.calls)))
	var n uint32
	for i, v := range s.hist {
		if n += v; n >= rank {
			return latencyBounds[i]
		}
	}
	return latencyBounds[latencyBuckets-1]
}

type slot struct {
	minute   int64 // unix minute it counts; another minute resets it
	total    stat
	outcomes map[string]uint32 // the errors by outcome (a gRPC code name, tool_error), at most maxOutcomes
	servers  map[string]*stat
	tools    map[string]*stat // key: exposed tool name
	toolSrv  map[string]string
}

// Traffic is the console's ring of recent calls, fed by the core's call
// observer (Observer): one mutex-held increment per finished call, and
// nothing else while no page is open; pages read summaries of it.
type Traffic struct {
	mu    sync.Mutex
	slots [TrafficSlots]slot
	now   func() time.Time
}

// CallStarted, OperationDone and RateLimited make Traffic a core.Observer
// (service.Options.Observer); only finished calls are kept.
func (tr *Traffic) CallStarted()                                        {}
func (tr *Traffic) OperationDone(string, string, string, time.Duration) {}
func (tr *Traffic) RateLimited(string, string)                          {}

// CallDone implements core.Observer: the call is filed under the minute
// it ended, which the core read (no clock read here, on every call).
func (tr *Traffic) CallDone(server, tool, outcome string, end time.Time, took time.Duration) {
	tr.observeAt(end, server, tool, outcome, took)
}

// NewTraffic returns an empty ring.
func NewTraffic() *Traffic { return &Traffic{now: time.Now} }

// slotFor is the slot of minute m, reset when it held an older minute.
func (tr *Traffic) slotFor(m int64) *slot {
	s := &tr.slots[m%TrafficSlots]
	if s.minute != m {
		*s = slot{minute: m, outcomes: map[string]uint32{}, servers: map[string]*stat{}, tools: map[string]*stat{}, toolSrv: map[string]string{}}
	}
	return s
}

func bounded(m map[string]*stat, key string, limit int) *stat {
	st, _ := boundedNew(m, key, limit)
	return st
}

// boundedNew is bounded, and whether it added key itself.
func boundedNew(m map[string]*stat, key string, limit int) (*stat, bool) {
	st, ok := m[key]
	if ok {
		return st, false
	}
	if len(m) >= limit {
		key = otherName
		if st, ok = m[key]; ok {
			return st, false
		}
	}
	st = &stat{}
	m[key] = st
	return st, key != otherName
}

// Observe records one finished call.
func (tr *Traffic) Observe(server, tool, outcome string, took time.Duration) {
	tr.observeAt(tr.now(), server, tool, outcome, took)
}

// observeAt records one call that finished at end.
func (tr *Traffic) observeAt(end time.Time, server, tool, outcome string, took time.Duration) {
	m := end.Unix() / 60
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s := tr.slotFor(m)
	b := bucketOf(took) // once for the three stats
	s.total.add(outcome, b)
	if outcome != "ok" {
		if _, ok := s.outcomes[outcome]; !ok && len(s.outcomes) >= maxOutcomes {
			outcome = otherName
		}
		s.outcomes[outcome]++
	}
	bounded(s.servers, server, MaxTrafficServers).add(outcome, b)
	ts, added := boundedNew(s.tools, tool, MaxTrafficTools)
	ts.add(outcome, b)
	if added { // toolSrv holds the tools of tools (at most MaxTrafficTools): one lookup per call, not two
		s.toolSrv[tool] = server
	}
}

// MaxTrafficBytes is the ring's budget (≤ 8 MiB whatever the
// number of tools); TestTrafficMemory measures the ring filled with 20,000
// tools over an hour against it.
const MaxTrafficBytes = 8 << 20

// trafficView is the Traffic page's data for the last hour.
type trafficView struct {
	Minutes []minuteView `json:"minutes"` // oldest first, minutes without calls left out
	Servers []keyView    `json:"servers"` // by calls
	Tools   []keyView    `json:"tools"`   // the 50 with the most calls
}

type minuteView struct {
	Time     time.Time         `json:"time"`
	Calls    uint32            `json:"calls"`
	Errors   uint32            `json:"errors"`
	Outcomes map[string]uint32 `json:"outcomes,omitempty"`
	P50MS    float64           `json:"p50ms"`
	P99MS    float64           `json:"p99ms"`
}

type keyView struct {
	Name   string  `json:"name"`
	Server string  `json:"server,omitempty"`
	Calls  uint32  `json:"calls"`
	Errors uint32  `json:"errors"`
	P50MS  float64 `json:"p50ms"`
	P99MS  float64 `json:"p99ms"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// View summarises the last hour.
func (tr *Traffic) View() trafficView {
	now := tr.now().Unix() / 60
	servers, tools, toolSrv := map[string]*stat{}, map[string]*stat{}, map[string]string{}
	var v trafficView
	tr.mu.Lock()
	for m := now - TrafficSlots + 1; m <= now; m++ {
		s := &tr.slots[((m%TrafficSlots)+TrafficSlots)%TrafficSlots]
		if s.minute != m || s.total.calls == 0 {
			continue
		}
		v.Minutes = append(v.Minutes, minuteView{Time: time.Unix(m*60, 0).UTC(), Calls: s.total.calls, Errors: s.total.errors,
			Outcomes: cloneMap(s.outcomes), P50MS: ms(s.total.quantile(.5)), P99MS: ms(s.total.quantile(.99))})
		for k, st := range s.servers {
			bounded(servers, k, MaxTrafficServers+1).merge(st)
		}
		for k, st := range s.tools {
			bounded(tools, k, MaxTrafficTools+1).merge(st)
		}
		for k, srv := range s.toolSrv {
			toolSrv[k] = srv
		}
	}
	tr.mu.Unlock()
	view := func(m map[string]*stat, withServer bool) []keyView {
		out := make([]keyView, 0, len(m))
		for k, st := range m {
			kv := keyView{Name: k, Calls: st.calls, Errors: st.errors,
				P50MS: ms(st.quantile(.5)), P99MS: ms(st.quantile(.99))}
			if withServer {
				kv.Server = toolSrv[k]
			}
			out = append(out, kv)
		}
		slices.SortFunc(out, func(a, b keyView) int {
			if a.Calls != b.Calls {
				return int(b.Calls) - int(a.Calls)
			}
			if a.Name < b.Name {
				return -1
			}
			return 1
		})
		return out
	}
	v.Servers = view(servers, false)
	v.Tools = view(tools, true)
	if len(v.Tools) > 50 {
		v.Tools = v.Tools[:50]
	}
	return v
}

func cloneMap(m map[string]uint32) map[string]uint32 {
	if m == nil {
		return nil
	}
	out := make(map[string]uint32, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// traffic is the Traffic page's data: an operator's only, since it
// counts every principal's calls.
func (cs *Console) traffic(c *caller, _ *http.Request) (any, *core.Error) {
	if e := operatorOnly(c, "see the traffic of every principal"); e != nil {
		return nil, e
	}
	if cs.opts.Traffic == nil {
		return trafficView{}, nil
	}
	return cs.opts.Traffic.View(), nil
}

func operatorOnly(c *caller, what string) *core.Error {
	if c.admin {
		return nil
	}
	return core.NewError(core.PermissionDenied, core.ReasonPermissionDenied,
		fmt.Sprintf("principal %q may not %s (auth.admins)", c.p.Name, what), map[string]string{"principal": c.p.Name})
}
