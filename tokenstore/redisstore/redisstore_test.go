package redisstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/toolsvc/toolsvc/tokenstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// redisServer is a real redis-server (Debian's package, installed by
// scripts/interop-deps.sh) on a unix socket in a test directory, with an
// append-only file fsynced on every write, so a restart loses nothing.
type redisServer struct {
	t    testing.TB
	dir  string
	sock string
	cmd  *exec.Cmd
	done chan struct{}
}

func startRedis(t *testing.T) *redisServer { return startRedisB(t) }

// startRedisB is startRedis for tests and benchmarks.
func startRedisB(t testing.TB) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("TOOLSVC_REDIS_TESTS") != "" {
			t.Fatal("redis-server not found: run scripts/interop-deps.sh")
		}
		t.Skip("redis-server not found (scripts/interop-deps.sh installs it; TOOLSVC_REDIS_TESTS=1 makes this a failure)")
	}
	dir := t.TempDir()
	r := &redisServer{t: t, dir: dir, sock: filepath.Join(dir, "redis.sock")}
	r.start()
	t.Cleanup(func() { r.signal(syscall.SIGTERM) })
	return r
}

func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", "0", "--unixsocket", r.sock, "--unixsocketperm", "700",
		"--dir", r.dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "")
	out, _ := r.cmd.StdoutPipe()
	r.cmd.Stderr = r.cmd.Stdout
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	ready := make(chan struct{})
	r.done = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(strings.ToLower(sc.Text()), "ready to accept connections") {
				once.Do(func() { close(ready) })
			}
		}
		_ = r.cmd.Wait()
		close(r.done)
	}()
	select {
	case <-ready:
	case <-r.done:
		r.t.Fatal("redis-server exited at start")
	case <-time.After(20 * time.Second):
		r.signal(syscall.SIGKILL) // never leave it running
		r.t.Fatal("redis-server not ready within 20s")
	}
}

// signal sends sig and waits for the exit (idempotent once exited).
func (r *redisServer) signal(sig syscall.Signal) {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(sig)
	<-r.done
}

func (r *redisServer) url() string { return "unix://" + r.sock }

func newKey() []byte {
	k := make([]byte, tokenstore.KeySize)
	_, _ = rand.Read(k)
	return k
}

func open(t *testing.T, r *redisServer, key []byte, o *Options) *Store {
	t.Helper()
	s, err := Open(r.url(), key, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var (
	alice = tokenstore.Key{Principal: "alice@example.com", Server: "github"}
	bob   = tokenstore.Key{Principal: "bob@example.com", Server: "github"}
)

func tok(n int) tokenstore.Token {
	return tokenstore.Token{AccessToken: fmt.Sprintf("access-secret-%04d", n), RefreshToken: fmt.Sprintf("refresh-secret-%04d", n),
		TokenType: "Bearer", Expiry: time.Now().Add(time.Hour).Round(0)}
}

// TestEncryptedAtRest: neither Redis's keys and values nor its
// append-only file hold a token, a principal or a server name; another
// store key reads ErrCorrupt; a value copied to bob's key does not open.
func TestEncryptedAtRest(t *testing.T) {
	ctx := context.Background()
	r := startRedis(t)
	key := newKey()
	s := open(t, r, key, nil)
	if _, err := s.Put(ctx, alice, 0, tok(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, bob, 0, tok(2)); err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(&redis.Options{Network: "unix", Addr: r.sock, DisableIdentity: true})
	defer raw.Close()
	var dump bytes.Buffer
	keys, err := raw.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		m, _ := raw.HGetAll(ctx, k).Result()
		fmt.Fprintln(&dump, k, m)
	}
	filepath.WalkDir(r.dir, func(p string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() && !strings.HasSuffix(p, ".sock") {
			b, _ := os.ReadFile(p)
			dump.Write(b)
		}
		return nil
	})
	if !strings.Contains(dump.String(), "toolsvc:tokens:t:") {
		t.Fatalf("no token hash found; dump:\n%s", dump.String())
	}
	for _, secret := range []string{"access-secret", "refresh-secret", "alice", "bob", "github", "Bearer"} {
		if strings.Contains(dump.String(), secret) {
			t.Errorf("redis (keys, values or files) contains %q", secret)
		}
	}

	other := open(t, r, newKey(), nil)
	if _, err := other.Get(ctx, alice); !errors.Is(err, tokenstore.ErrNotFound) {
		// Another key names another hash: nothing there.
		t.Errorf("get under another key: %v, want ErrNotFound", err)
	}
	// Copy alice's sealed value into bob's hash: it must not open as bob's.
	d, _ := raw.HGet(ctx, s.dataKey(alice), "d").Result()
	raw.HSet(ctx, s.dataKey(bob), "d", d)
	if _, err := s.Get(ctx, bob); !errors.Is(err, tokenstore.ErrCorrupt) {
		t.Errorf("alice's value in bob's hash: %v, want ErrCorrupt", err)
	}
}

// TestCompareAndSwap: a stale version is ErrConflict and changes nothing;
// versions never repeat across a Delete.
func TestCompareAndSwap(t *testing.T) {
	ctx := context.Background()
	s := open(t, startRedis(t), newKey(), nil)
	v1, err := s.Put(ctx, alice, 0, tok(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, alice, 0, tok(9)); !errors.Is(err, tokenstore.ErrConflict) {
		t.Errorf("create over a token: %v, want ErrConflict", err)
	}
	v2, err := s.Put(ctx, alice, v1, tok(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, alice, v1, tok(9)); !errors.Is(err, tokenstore.ErrConflict) {
		t.Errorf("stale version: %v, want ErrConflict", err)
	}
	if e, err := s.Get(ctx, alice); err != nil || e.Version != v2 || e.Token.AccessToken != tok(2).AccessToken {
		t.Errorf("get: %v v%d, %v", e.Token, e.Version, err)
	}
	if err := s.Delete(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, alice); !errors.Is(err, tokenstore.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if _, err := s.Put(ctx, alice, v2, tok(9)); !errors.Is(err, tokenstore.ErrConflict) {
		t.Errorf("a version from before the delete: %v, want ErrConflict", err)
	}
	v3, err := s.Put(ctx, alice, 0, tok(3))
	if err != nil || v3 == v1 || v3 == v2 {
		t.Errorf("re-create: v%d (before v%d v%d), %v", v3, v1, v2, err)
	}
}

// TestReplicasRefreshOnce: three replicas (stores with their own
// connections) × 20 goroutines find two principals' tokens stale at once;
// each principal is refreshed exactly once, and every caller gets the new
// token.
func TestReplicasRefreshOnce(t *testing.T) {
	ctx := context.Background()
	r := startRedis(t)
	key := newKey()
	replicas := []*Store{open(t, r, key, nil), open(t, r, key, nil), open(t, r, key, nil)}
	for _, k := range []tokenstore.Key{alice, bob} {
		old := tok(0)
		old.Expiry = time.Now().Add(-time.Second)
		if _, err := replicas[0].Put(ctx, k, 0, old); err != nil {
			t.Fatal(err)
		}
	}
	var refreshes [2]atomic.Int32
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 60 {
		s, who := replicas[i%3], i%2
		k := []tokenstore.Key{alice, bob}[who]
		wg.Go(func() {
			got, err := tokenstore.Fresh(ctx, s, k, tokenstore.ExpiresWithin(30*time.Second),
				func(context.Context, tokenstore.Token) (tokenstore.Token, error) {
					refreshes[who].Add(1)
					time.Sleep(50 * time.Millisecond) // the authorization server
					return tokenstore.Token{AccessToken: "new-" + k.Principal, Expiry: time.Now().Add(time.Hour)}, nil
				})
			if err != nil || got.AccessToken != "new-"+k.Principal {
				t.Errorf("Fresh(%s): %v, %v", k, got, err)
			}
		})
	}
	wg.Wait()
	for i := range refreshes {
		if n := refreshes[i].Load(); n != 1 {
			t.Errorf("principal %d refreshed %d times, want 1", i, n)
		}
	}
	t.Logf("60 Fresh calls on 3 replicas, 2 refreshes, in %v", time.Since(start))
}

// TestLeaseExpires: a holder that dies without unlocking holds the lock
// only for the lease; a live holder's unlock releases at once, and a late
// unlock of an expired lease does not release the next holder's lock.
func TestLeaseExpires(t *testing.T) {
	ctx := context.Background()
	r := startRedis(t)
	s := open(t, r, newKey(), &Options{Lease: 300 * time.Millisecond})
	dead, err := tokenstore.Lock(ctx, s, alice)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	next, err := tokenstore.Lock(ctx, s, alice)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("the lock came back after %v, want about the 300 ms lease", d)
	}
	dead() // late: must not release next's lock
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := tokenstore.Lock(short, s, alice); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("lock while next holds it: %v, want DeadlineExceeded", err)
	}
	next()
	start = time.Now()
	again, err := tokenstore.Lock(ctx, s, alice)
	if err != nil || time.Since(start) > 100*time.Millisecond {
		t.Errorf("lock after unlock: %v after %v", err, time.Since(start))
	}
	again()
}

// TestRedisKilled: redis-server killed with SIGKILL → every operation is
// ErrUnavailable within the timeout, and no error shows a token. A refresh
// whose result cannot be stored returns it in a NotStoredError. Restarted
// on the same files, the store has every token it had: none lost, and the
// kept token stores with its version.
func TestRedisKilled(t *testing.T) {
	ctx := context.Background()
	r := startRedis(t)
	key := newKey()
	s := open(t, r, key, &Options{Timeout: 500 * time.Millisecond})
	v1, err := s.Put(ctx, alice, 0, tok(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, bob, 0, tok(2)); err != nil {
		t.Fatal(err)
	}

	r.signal(syscall.SIGKILL)
	start := time.Now()
	_, gerr := s.Get(ctx, alice)
	_, perr := s.Put(ctx, alice, v1, tok(3))
	derr := s.Delete(ctx, bob)
	_, _, lerr := s.TryLock(ctx, alice)
	for name, err := range map[string]error{"get": gerr, "put": perr, "delete": derr, "lock": lerr} {
		if !errors.Is(err, tokenstore.ErrUnavailable) {
			t.Errorf("%s with redis dead: %v, want ErrUnavailable", name, err)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s error shows a token: %v", name, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("four operations against a dead redis took %v", d)
	}
	t.Logf("4 operations with redis dead: %v; get said: %v", time.Since(start), gerr)

	r.start()
	start = time.Now()
	e, err := s.Get(ctx, alice)
	t.Logf("first get after the restart: %v", time.Since(start))
	if err != nil || e.Version != v1 || e.Token.AccessToken != tok(1).AccessToken {
		t.Fatalf("alice after restart: %v v%d, %v (want v%d, the token stored before the kill)", e.Token, e.Version, err, v1)
	}
	if _, err := s.Get(ctx, bob); err != nil {
		t.Errorf("bob after restart (his delete failed): %v", err)
	}

	// The store dies between the refresh and its Put.
	stale := func(tokenstore.Token) bool { return true }
	got, err := tokenstore.Fresh(ctx, s, alice, stale, func(context.Context, tokenstore.Token) (tokenstore.Token, error) {
		r.signal(syscall.SIGKILL)
		return tok(4), nil
	})
	var ns *tokenstore.NotStoredError
	if !errors.As(err, &ns) || !errors.Is(err, tokenstore.ErrUnavailable) || got.AccessToken != tok(4).AccessToken || ns.Prev != v1 {
		t.Fatalf("Fresh with the store dying: %v, %v; want the new token in a NotStoredError", got, err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("NotStoredError shows a token: %v", err)
	}
	r.start()
	if _, err := s.Put(ctx, alice, ns.Prev, ns.Token); err != nil {
		t.Errorf("storing the kept token after restart: %v", err)
	}
	if e, err := s.Get(ctx, alice); err != nil || e.Token.AccessToken != tok(4).AccessToken {
		t.Errorf("alice after the retried put: %v, %v", e.Token, err)
	}
}
