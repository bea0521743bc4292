package tokenstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	_, _ = rand.Read(k)
	return k
}

func openFile(t *testing.T, path string, key []byte) *File {
	t.Helper()
	f, err := OpenFile(path, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

var (
	alice = Key{Principal: "alice@example.com", Server: "github"}
	bob   = Key{Principal: "bob@example.com", Server: "github"}
)

func tok(n int) Token {
	return Token{AccessToken: fmt.Sprintf("access-secret-%04d", n), RefreshToken: fmt.Sprintf("refresh-secret-%04d", n),
		TokenType: "Bearer", Expiry: time.Now().Add(time.Hour).Round(0)}
}

// TestFileEncryptedAtRest: the file holds neither tokens nor principal or
// server names; reopened with its key it gives them back, with another key
// it is ErrCorrupt; a second process cannot open it at the same time.
func TestFileEncryptedAtRest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	key := newKey(t)
	f := openFile(t, path, key)
	t1 := tok(1)
	if _, err := f.Put(ctx, alice, 0, t1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Put(ctx, bob, 0, tok(2)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"access-secret", "refresh-secret", "alice", "bob", "github", "Bearer"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the store file contains %q", secret)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("store file mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := OpenFile(path, key); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("a second open while the first holds it: %v", err)
	}
	f.Close()

	if _, err := OpenFile(path, newKey(t)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("open with another key: %v, want ErrCorrupt", err)
	}
	g := openFile(t, path, key)
	e, err := g.Get(ctx, alice)
	if err != nil {
		t.Fatalf("reopened: %v", err)
	}
	if e.Token.AccessToken != t1.AccessToken || e.Token.RefreshToken != t1.RefreshToken || !e.Token.Expiry.Equal(t1.Expiry) {
		t.Errorf("reopened token differs")
	}
	// Flipping one byte makes the whole file fail authentication.
	raw[len(raw)-1] ^= 1
	g.Close()
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(path, key); !errors.Is(err, ErrCorrupt) {
		t.Errorf("open of a tampered file: %v, want ErrCorrupt", err)
	}
}

// TestSealerBindsKey: a value sealed for alice does not open as bob's, and
// names are stable, distinct and reveal nothing.
func TestSealerBindsKey(t *testing.T) {
	s, err := NewSealer(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.Seal([]byte("secret"), keyContext(alice))
	if _, err := s.Open(sealed, keyContext(bob)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("alice's value opened as bob's: %v", err)
	}
	if p, err := s.Open(sealed, keyContext(alice)); err != nil || string(p) != "secret" {
		t.Errorf("open: %q, %v", p, err)
	}
	if s.Name(alice) != s.Name(alice) || s.Name(alice) == s.Name(bob) || strings.Contains(s.Name(alice), "alice") {
		t.Errorf("names %q %q", s.Name(alice), s.Name(bob))
	}
	// A principal name with the separator in it cannot pose as another key.
	if bytes.Equal(keyContext(Key{"a\x00b", "c"}), keyContext(Key{"a", "b\x00c"})) {
		t.Error("key contexts collide")
	}
}

// TestFileCompareAndSwap: a write with a stale version is ErrConflict and
// changes nothing; versions never repeat, even after a Delete.
func TestFileCompareAndSwap(t *testing.T) {
	ctx := context.Background()
	f := openFile(t, filepath.Join(t.TempDir(), "tokens"), newKey(t))
	v1, err := f.Put(ctx, alice, 0, tok(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Put(ctx, alice, 0, tok(9)); !errors.Is(err, ErrConflict) {
		t.Errorf("create over an existing token: %v, want ErrConflict", err)
	}
	v2, err := f.Put(ctx, alice, v1, tok(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Put(ctx, alice, v1, tok(9)); !errors.Is(err, ErrConflict) {
		t.Errorf("write with a stale version: %v, want ErrConflict", err)
	}
	if err := f.Delete(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(ctx, alice); !errors.Is(err, ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	v3, err := f.Put(ctx, alice, 0, tok(3))
	if err != nil {
		t.Fatal(err)
	}
	if v3 == v1 || v3 == v2 {
		t.Errorf("versions repeat: %d %d %d", v1, v2, v3)
	}
	if _, err := f.Put(ctx, alice, v2, tok(9)); !errors.Is(err, ErrConflict) {
		t.Errorf("a version from before the delete: %v, want ErrConflict", err)
	}
}

// TestFreshOneRefresh: 64 goroutines find alice's and bob's tokens stale
// at once; each key is refreshed exactly once and every caller gets the
// refreshed token. A key with no token is ErrNotFound, never refreshed.
func TestFreshOneRefresh(t *testing.T) {
	ctx := context.Background()
	f := openFile(t, filepath.Join(t.TempDir(), "tokens"), newKey(t))
	for _, k := range []Key{alice, bob} {
		old := tok(0)
		old.Expiry = time.Now().Add(-time.Minute)
		if _, err := f.Put(ctx, k, 0, old); err != nil {
			t.Fatal(err)
		}
	}
	var refreshes sync.Map // Key → *atomic.Int32
	refresh := func(k Key) func(context.Context, Token) (Token, error) {
		return func(context.Context, Token) (Token, error) {
			n, _ := refreshes.LoadOrStore(k, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			time.Sleep(20 * time.Millisecond) // the authorization server's round trip
			return Token{AccessToken: "new-" + k.Principal, Expiry: time.Now().Add(time.Hour)}, nil
		}
	}
	var wg sync.WaitGroup
	for i := range 64 {
		k := []Key{alice, bob}[i%2]
		wg.Go(func() {
			got, err := Fresh(ctx, f, k, ExpiresWithin(30*time.Second), refresh(k))
			if err != nil || got.AccessToken != "new-"+k.Principal {
				t.Errorf("Fresh(%s): %v, %v", k, got, err)
			}
		})
	}
	wg.Wait()
	for _, k := range []Key{alice, bob} {
		if n, _ := refreshes.Load(k); n == nil || n.(*atomic.Int32).Load() != 1 {
			t.Errorf("%s refreshed %v times, want 1", k, n)
		}
	}
	carol := Key{"carol", "github"}
	if _, err := Fresh(ctx, f, carol, ExpiresWithin(0), refresh(carol)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Fresh without a token: %v, want ErrNotFound", err)
	}
	if _, ok := refreshes.Load(carol); ok {
		t.Error("a key without a token was refreshed")
	}
}

// TestExpiresWithinAndLockWait (synctest): a token is fresh until guard
// before its expiry; Lock waits for the holder (polling at most maxPoll
// apart) and gives up at its context's deadline.
func TestExpiresWithinAndLockWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stale := ExpiresWithin(30 * time.Second)
		tk := Token{AccessToken: "a", Expiry: time.Now().Add(time.Minute)}
		if stale(tk) {
			t.Error("stale a minute before expiry")
		}
		time.Sleep(30*time.Second + time.Nanosecond)
		if !stale(tk) {
			t.Error("fresh within the guard")
		}
		if stale(Token{AccessToken: "a"}) {
			t.Error("a token without expiry is stale")
		}

		f := &File{locks: map[Key]bool{}} // locks need no file
		unlock, err := Lock(t.Context(), f, alice)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := f.TryLock(t.Context(), alice); ok {
			t.Error("TryLock took a held lock")
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		if _, err := Lock(ctx, f, alice); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("Lock while held: %v after %v, want DeadlineExceeded after 1s", err, time.Since(start))
		}
		go func() {
			time.Sleep(5 * time.Second)
			unlock()
		}()
		start = time.Now()
		u2, err := Lock(t.Context(), f, alice)
		if waited := time.Since(start); err != nil || waited < 5*time.Second || waited > 5*time.Second+maxPoll {
			t.Errorf("Lock after release: %v after %v, want the lock within %v of 5s", err, waited, maxPoll)
		}
		u2()
		unlock() // idempotent: must not release anything now
		if len(f.locks) != 0 {
			t.Errorf("%d lock entries left", len(f.locks))
		}
	})
}

// TestTokenNeverPrinted: fmt and slog show no token value; neither does
// a NotStoredError.
func TestTokenNeverPrinted(t *testing.T) {
	tk := tok(7)
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("t", "token", tk, "entry", Entry{Token: tk})
	err := &NotStoredError{Token: tk, Err: ErrUnavailable}
	for _, s := range []string{fmt.Sprint(tk), fmt.Sprintf("%+v", tk), fmt.Sprintf("%#v", tk), fmt.Sprintf("%v", Entry{Token: tk}),
		fmt.Sprintf("%+v", &Entry{Token: tk}), buf.String(), err.Error(), fmt.Sprintf("%v", err)} {
		if strings.Contains(s, "secret") {
			t.Errorf("a token value is printed: %s", s)
		}
	}
}

// TestReadKeyFile: raw, hex and base64 keys; a key others may read, or of
// the wrong size, is refused naming the file.
func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	key := newKey(t)
	for name, content := range map[string][]byte{
		"raw": key, "hex": []byte(hex.EncodeToString(key) + "\n"), "b64": []byte(base64.StdEncoding.EncodeToString(key) + "\n"),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadKeyFile(p)
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("%s key: %v", name, err)
		}
	}
	open := filepath.Join(dir, "open")
	_ = os.WriteFile(open, key, 0o644)
	if _, err := ReadKeyFile(open); err == nil || !strings.Contains(err.Error(), open) {
		t.Errorf("a world-readable key: %v", err)
	}
	short := filepath.Join(dir, "short")
	_ = os.WriteFile(short, []byte("abc"), 0o600)
	if _, err := ReadKeyFile(short); err == nil || !strings.Contains(err.Error(), short) {
		t.Errorf("a short key: %v", err)
	}
}

// TestFilesReadLikeEveryFile: the store file and the key file are read
// with the rules of every file toolsvc reads: a FIFO,
// /dev/zero (directly or through a symlink, as a mount would), a
// directory, an oversized or empty file are refused at once with what
// they are, never read until memory runs out or waited on; a key file
// readable by others, or one byte short, is refused; CheckFile says the
// same as OpenFile without taking the store's lock.
func TestFilesReadLikeEveryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := newKey(t)
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, nil, 0o600)
	big := filepath.Join(dir, "big")
	if f, err := os.Create(big); err != nil {
		t.Fatal(err)
	} else {
		_ = f.Truncate(MaxFileSize + 1) // sparse: no disk used
		f.Close()
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "not a regular file (a FIFO)"},
		{zero, "not a regular file (a character device)"},
		{"/dev/zero", "not a regular file (a character device)"},
		{sub, "not a regular file (a directory)"},
		{empty, "the file is empty"},
		{big, "larger than the 64 MiB limit of the token store file"},
		{"/proc/self/environ", "pseudo-file"},
	} {
		err := CheckFile(tc.path, key)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "tokenstore file") {
			t.Errorf("CheckFile(%s) = %v; want %q", tc.path, err, tc.want)
		}
		if tc.path == "/dev/zero" || tc.path == "/proc/self/environ" {
			continue // OpenFile would create /dev/zero.lock
		}
		f, err := OpenFile(tc.path, key)
		if err == nil {
			f.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenFile(%s) = %v; want %q", tc.path, err, tc.want)
		}
	}
	if err := CheckFile(filepath.Join(dir, "absent"), key); err != nil {
		t.Errorf("an absent store (created on the first write): %v", err)
	}
	st := openFile(t, filepath.Join(dir, "store"), key)
	if _, err := st.Put(t.Context(), alice, 0, tok(1)); err != nil {
		t.Fatal(err)
	}
	if err := CheckFile(filepath.Join(dir, "store"), key); err != nil {
		t.Errorf("CheckFile of an open store: %v", err)
	}
	if err := CheckFile(filepath.Join(dir, "store"), newKey(t)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("CheckFile under another key = %v, want ErrCorrupt", err)
	}

	writeKey := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // not the umask's
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "not a regular file (a FIFO)"},
		{zero, "not a regular file (a character device)"},
		{sub, "not a regular file (a directory)"},
		{writeKey("k644", key, 0o644), "mode 0644 lets others read it"},
		{writeKey("k640", key, 0o640), "mode 0640 lets others read it"},
		{writeKey("k31", key[:31], 0o600), "holds 31 bytes, not a key"},
		{writeKey("k33", append(bytes.Clone(key), 'x'), 0o600), "holds 33 bytes, not a key"},
		{writeKey("khex63", []byte(hex.EncodeToString(key)[:63]), 0o600), "holds 63 bytes, not a key"},
		{writeKey("kbig", bytes.Repeat([]byte("a"), MaxKeyFileSize+1), 0o600), "larger than the 1024-byte limit"},
		{writeKey("kempty", nil, 0o400), "holds 0 bytes, not a key"},
	} {
		if _, err := ReadKeyFile(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("ReadKeyFile(%s) = %v; want %q and the path", tc.path, err, tc.want)
		}
	}
}

// TestFileKeys: the File store lists whose tokens it holds, sorted by
// principal then server, filtered before it is bounded by the limit (more
// says there are others), also after it is reopened; a deleted token is
// not listed.
func TestFileKeys(t *testing.T) {
	ctx := context.Background()
	path, key := filepath.Join(t.TempDir(), "tokens"), newKey(t)
	f := openFile(t, path, key)
	carolA, aliceZ := Key{Principal: "carol", Server: "a"}, Key{Principal: alice.Principal, Server: "zz"}
	for _, k := range []Key{carolA, bob, aliceZ, alice} {
		if _, err := f.Put(ctx, k, 0, tok(1)); err != nil {
			t.Fatal(err)
		}
	}
	keys, more, err := f.Keys(ctx, -1, nil)
	if err != nil || more || !slices.Equal(keys, []Key{alice, aliceZ, bob, carolA}) {
		t.Errorf("Keys(all) = %v, %v, %v; want alice's two, bob's, carol's", keys, more, err)
	}
	if keys, more, _ := f.Keys(ctx, 2, nil); !more || !slices.Equal(keys, []Key{alice, aliceZ}) {
		t.Errorf("Keys(2) = %v, %v; want the first two and more", keys, more)
	}
	notAlice := func(k Key) bool { return k.Principal != alice.Principal }
	if keys, more, _ := f.Keys(ctx, 1, notAlice); !more || !slices.Equal(keys, []Key{bob}) {
		t.Errorf("Keys(1, not alice) = %v, %v; want bob's and more", keys, more)
	}
	if err := f.Delete(ctx, bob); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g := openFile(t, path, key)
	if keys, more, _ := g.Keys(ctx, 3, nil); more || !slices.Equal(keys, []Key{alice, aliceZ, carolA}) {
		t.Errorf("Keys after a delete and a reopen = %v, %v", keys, more)
	}
	g.Close()
	if _, _, err := g.Keys(ctx, 1, nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Keys of a closed store: %v, want ErrUnavailable", err)
	}
}
