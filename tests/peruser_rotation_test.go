package tests

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/authtest"
)

// TestPerUserRotatingPrincipals is the rotating-principals fault of the
// per-user credentials design (docs/credentials.md), all real processes: 120 principals take turns on a tokenExchange
// upstream bounded to 16 per-principal sessions, from 6 concurrent callers,
// so sessions are evicted and created all the time; meanwhile the upstream
// is SIGKILLed and restarted on its port. The gauge of per-principal
// sessions (scraped every 50 ms) never passes the bound, every call made
// while the upstream is up reaches it as its own principal, calls while it
// is down fail UNAVAILABLE and nothing else, every principal is served again
// after the restart, idle eviction brings the sessions to zero once the
// load stops, and no token reaches the log.
func TestPerUserRotatingPrincipals(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	const (
		principals  = 120
		maxSessions = 16
		callers     = 6
	)
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver")), procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	upAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startUp := func() *proc {
		p := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-addr", upAddr, "-auth-issuer", issuer, "-auth-audience", "urn:test:rot"))
		p.log.waitFor(t, urlLineRE, 30*time.Second)
		return p
	}
	up := startUp()
	p := startToolsvc(t, cfg{
		Auth: &authCfg{JWT: &jwtCfg{JWKSURL: jwksURI(t, issuer), Issuer: issuer, Audience: "toolsvc"}},
		// The soak's breaker: a dead upstream fails fast, for a second or two.
		Servers: servers{"rot": goHTTP("http://"+upAddr+"/mcp", upstream{PingInterval: "1h", Breaker: &breaker{Failures: 3, Cooldown: "1s", MaxCooldown: "2s"}, Credentials: &credsCfg{Mode: "tokenExchange",
			Issuer: issuer, ClientID: authToolsvc.ID, ClientSecret: authToolsvc.Secret, Audience: "urn:test:rot",
			MaxSessions: maxSessions, SessionIdle: "2s"}})}})

	tokens := make([]string, principals)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range principals {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tok, err := authtest.Login(ctx, issuer, authAgent, fmt.Sprintf("user%03d", i))
			if err != nil {
				t.Errorf("login user%03d: %v", i, err)
				return
			}
			tokens[i] = tok.AccessToken
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// The gauge, scraped all along.
	sessionsRE := regexp.MustCompile(`(?m)^toolsvc_upstream_user_sessions\{server="rot"\} (\d+)$`)
	gauge := func() int {
		m := sessionsRE.FindStringSubmatch(scrape(t, p.adminAddr))
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	var maxSeen, samples atomic.Int64
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampleCtx.Err() == nil {
			if n := gauge(); n >= 0 {
				samples.Add(1)
				for cur := maxSeen.Load(); int64(n) > cur && !maxSeen.CompareAndSwap(cur, int64(n)); cur = maxSeen.Load() {
				}
			}
			select {
			case <-sampleCtx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	whoami := func(i int) error {
		cctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tokens[i])
		res, err := p.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: "rot__whoami"})
		if err != nil {
			return err
		}
		if sub := res.GetStructuredContent().AsMap()["sub"]; sub != fmt.Sprintf("user%03d", i) {
			return fmt.Errorf("user%03d: the upstream saw %v (tool error %v)", i, sub, res.GetIsError())
		}
		return nil
	}
	// A call that began before the upstream was back (its first success
	// after the restart) may fail UNAVAILABLE: it may have joined a
	// session's connect begun during the outage. Every later one must not.
	var down atomic.Bool
	var back atomic.Int64 // UnixNano of the first success after the restart
	var next, ok, unavailable atomic.Int64
	served := make([]atomic.Bool, principals)
	loadCtx, stopLoad := context.WithCancel(ctx)
	var load sync.WaitGroup
	for range callers {
		load.Go(func() {
			for loadCtx.Err() == nil {
				i := int(next.Add(1) % principals)
				began := time.Now().UnixNano()
				err := whoami(i)
				b := back.Load()
				outage := down.Load() && (b == 0 || began < b)
				switch {
				case err == nil:
					ok.Add(1)
					served[i].Store(true)
				case loadCtx.Err() != nil:
				case outage && status.Code(err) == codes.Unavailable:
					unavailable.Add(1)
				default:
					t.Errorf("user%03d (began during the outage: %v): %v", i, outage, err)
				}
			}
		})
	}
	// Rotation with the upstream up, then the fault, then rotation again.
	time.Sleep(5 * time.Second)
	down.Store(true)
	up.kill()
	time.Sleep(time.Second)
	up = startUp()
	// Every principal is served again after the restart: one call each,
	// from the test, alongside the load.
	deadline := time.Now().Add(20 * time.Second)
	for i := range principals {
		for {
			err := whoami(i)
			if err == nil {
				break
			}
			if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
				t.Fatalf("user%03d after the upstream's restart: %v", i, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if i == 0 {
			back.Store(time.Now().UnixNano()) // the first success: the upstream is back
		}
	}
	time.Sleep(3 * time.Second)
	stopLoad()
	load.Wait()
	for i := range principals {
		if !served[i].Load() {
			t.Errorf("user%03d was never served by the load", i)
		}
	}
	t.Logf("rotation: %d calls served, %d UNAVAILABLE while the upstream was down; sessions at most %d over %d samples",
		ok.Load(), unavailable.Load(), maxSeen.Load(), samples.Load())
	if ok.Load() < 2*principals {
		t.Errorf("%d calls served, want at least %d: the rotation did not run", ok.Load(), 2*principals)
	}

	// Idle: the sweep closes every session (sessionIdle 2 s, swept every
	// 0.5 s).
	deadline = time.Now().Add(15 * time.Second)
	for gauge() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d per-principal sessions still open 15 s after the load stopped, want 0", gauge())
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopSampling()
	<-sampled
	if m := maxSeen.Load(); m > maxSessions || m == 0 {
		t.Errorf("per-principal sessions peaked at %d, want 1..%d (maxSessions)", m, maxSessions)
	}
	logText := p.log.String()
	for i, tok := range tokens {
		if strings.Contains(logText, tok) || strings.Contains(logText, tok[len(tok)-24:]) {
			t.Errorf("user%03d's token appears in toolsvc's log", i)
		}
	}
}
