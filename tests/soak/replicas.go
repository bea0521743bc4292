package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

var (
	servingRE = regexp.MustCompile(`msg=serving addr=(\S+)`)
	readyRE   = regexp.MustCompile(`msg=ready`)
)

// replica is one toolsvc process slot: fixed gRPC and admin ports and a
// config file, so that a restarted instance comes back where clients and
// watchers expect it.
type replica struct {
	s          *soak
	idx        int
	port       int
	adminPort  int
	configPath string

	mu      sync.Mutex
	gen     int
	proc    *child
	started time.Time       // when the current instance became ready
	revSeen map[string]bool // revisions the current instance's watchers received
	// quiet samples of the current instance
	samples []quietSample
	// the first quiet period's goroutines and heap of the current
	// instance: the base of its quiet bound (quiet.go)
	baseGoroutines, baseHeap float64

	conn   *grpc.ClientConn // load and checks, as principal soak
	client toolsvcv1.ToolServiceClient
	// the principal-flood's two principals (principals.go)
	principalConns []*grpc.ClientConn
	flooder, other toolsvcv1.ToolServiceClient
}

type quietSample struct {
	at         time.Time
	rss        float64
	goroutines float64
}

func (r *replica) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// owner is the SOAK_OWNER value of the running instance ("" when none).
func (r *replica) owner() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return ""
	}
	return fmt.Sprintf("replica%d-%d", r.idx, r.gen)
}

func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return 0
	}
	return r.proc.pid()
}

// dial connects to a replica as the principal whose bearer token is token.
func dial(addr, token string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(bearer(token)),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 2 * time.Second,
		}))
}

// start runs a new instance and waits until it is ready.
func (r *replica) start() error {
	r.mu.Lock()
	r.gen++
	gen := r.gen
	r.samples = nil
	r.baseGoroutines, r.baseHeap = 0, 0
	r.revSeen = map[string]bool{}
	r.mu.Unlock()
	owner := fmt.Sprintf("replica%d-%d", r.idx, gen)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := startChild(owner, filepath.Join(r.s.dir, fmt.Sprintf("replica%d.log", r.idx)),
			markerEnv(r.s.run, owner), []*regexp.Regexp{servingRE, readyRE},
			r.s.toolsvc, "serve", "--config", r.configPath,
			"--listen", r.addr(), "--admin-listen", fmt.Sprintf("127.0.0.1:%d", r.adminPort),
			"--input-timeout", inputTimeout.String(), "--max-input-request-bytes", strconv.Itoa(maxInputRequestBytes), "--state-key-file", r.s.stateKey, "--log-level", "info",
			// 100 watched tasks at the default 50 ms are 2,000 polls a
			// second on the task upstreams; the soak checks that no task
			// is lost, not how soon its end arrives.
			"--task-poll-interval", "500ms",
			// Every watch of the soak is principal soak's: the
			// tasks-rolling-restart fault's 100 watches, a third per
			// replica, move to the next replica while one restarts
			// (about 66 there), past the default 64.
			"--max-task-watches-per-principal", "256")
		if err != nil {
			return err
		}
		c.mu.Lock()
		ready := c.matches[readyRE]
		c.mu.Unlock()
		_, err = c.waitMatch(readyRE, ready, time.Until(deadline))
		if err == nil {
			r.mu.Lock()
			r.proc, r.started = c, time.Now()
			r.mu.Unlock()
			return nil
		}
		c.killGroup()
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %d: %v (see replica%d.log)", r.idx, err, r.idx)
		}
		// The port may still be held by the previous instance's sockets.
		time.Sleep(200 * time.Millisecond)
	}
}

// stop SIGTERMs the instance, records an unclean exit (a race report exits
// 66), and checks that none of its children outlive it.
func (r *replica) stop() {
	r.mu.Lock()
	c, gen := r.proc, r.gen
	r.proc = nil
	r.mu.Unlock()
	if c == nil {
		return
	}
	err, killed := c.terminate(30 * time.Second)
	if killed || err != nil {
		r.s.noteReplicaExit(fmt.Sprintf("replica %d instance %d: exit %v (killed after 30s: %v)", r.idx, gen, err, killed))
	}
	r.s.checkGone(fmt.Sprintf("replica %d instance %d's children", r.idx, gen), fmt.Sprintf("SOAK_OWNER=replica%d-%d", r.idx, gen))
}

// metrics scrapes go_goroutines and process_resident_memory_bytes from the
// admin endpoint.
func (r *replica) metrics(ctx context.Context) (goroutines, rss float64, err error) {
	m, err := r.metricValues(ctx)
	if err != nil {
		return 0, 0, err
	}
	g, ok1 := m["go_goroutines"]
	rss, ok2 := m["process_resident_memory_bytes"]
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("metrics lack go_goroutines or process_resident_memory_bytes")
	}
	return g, rss, nil
}

// metricValues scrapes the admin endpoint's gauges: each family's samples
// summed.
func (r *replica) metricValues(ctx context.Context) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", r.adminPort), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if g := m.GetGauge(); g != nil {
				out[name] += g.GetValue()
			}
		}
	}
	return out, nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeFileAtomic writes a file by rename, as editors and ConfigMaps do.
func writeFileAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
