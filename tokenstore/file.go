package tokenstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/toolsvc/toolsvc/internal/boundedfile"
)

// fileContext is what the whole file is sealed under.
var fileContext = []byte("toolsvc tokenstore file v1")

// File is the embedded token store for one process: every token in
// memory, and in one file sealed as a whole (so the file reveals neither
// tokens nor principal names, nor how many of each), rewritten atomically
// (temporary file, fsync, rename) before each Put or Delete returns. An
// exclusive lock on PATH.lock keeps a second process from opening the
// same store. Locks are in-process.
type File struct {
	path   string
	sealer *Sealer
	lockf  *os.File

	// mu guards the map and the file: each write is durable before it
	// returns, and writes are serial anyway, so a write holds mu across its
	// file I/O (Get waits for at most one rewrite).
	mu     sync.Mutex
	tokens map[Key]Entry
	next   uint64 // the next version; never reused
	closed bool

	locksMu sync.Mutex
	locks   map[Key]bool // held
}

type fileJSON struct {
	Next   uint64      `json:"next"`
	Tokens []fileEntry `json:"tokens"`
}

type fileEntry struct {
	Principal string `json:"p"`
	Server    string `json:"s"`
	Version   uint64 `json:"v"`
	Token     Token  `json:"t"`
}

// OpenFile opens (or creates, on the first write) the store at path,
// sealed under key (ReadKeyFile). A file that does not decrypt under key
// is an error wrapping ErrCorrupt.
func OpenFile(path string, key []byte) (*File, error) {
	sealer, err := NewSealer(key)
	if err != nil {
		return nil, err
	}
	lockf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("tokenstore: %w", err)
	}
	if err := unix.Flock(int(lockf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lockf.Close()
		return nil, fmt.Errorf("tokenstore %s: another process has it open (%w)", path, err)
	}
	f := &File{path: path, sealer: sealer, lockf: lockf, tokens: map[Key]Entry{}, next: 1, locks: map[Key]bool{}}
	if err := f.load(); err != nil {
		lockf.Close()
		return nil, err
	}
	return f, nil
}

func (f *File) load() error {
	fj, err := readStoreFile(f.path, f.sealer)
	if err != nil {
		return err
	}
	for _, e := range fj.Tokens {
		f.tokens[Key{e.Principal, e.Server}] = Entry{Token: e.Token, Version: e.Version}
	}
	f.next = max(fj.Next, 1)
	return nil
}

// MaxFileSize bounds the store file: 64 MiB, some 100,000 logins (a sealed
// entry with its access and refresh tokens is a few hundred bytes to 2
// KiB); a store that needs more is a shared one (Redis).
const MaxFileSize = 64 << 20

// readStoreFile reads and opens the store file at path, like every file
// toolsvc reads (boundedfile: a regular file, never a FIFO, a device or a
// directory, at most MaxFileSize bytes). A file that does not exist is an
// empty store (it is created on the first write); an empty one is not a
// store toolsvc wrote (it writes whole files, renamed into place), nor is
// one that does not open under the key (ErrCorrupt).
func readStoreFile(path string, sealer *Sealer) (fileJSON, error) {
	var fj fileJSON
	sealed, _, err := boundedfile.Read(path, MaxFileSize, "the token store file")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fj, nil
	case err != nil:
		return fj, fmt.Errorf("tokenstore file %s: %w", path, err)
	case len(sealed) == 0:
		return fj, fmt.Errorf("tokenstore file %s: %w: the file is empty, which toolsvc never writes (remove it to start an empty store)", path, ErrCorrupt)
	}
	plain, err := sealer.Open(sealed, fileContext)
	if err != nil {
		return fj, fmt.Errorf("tokenstore file %s: %w (the wrong key file?)", path, err)
	}
	defer clear(plain)
	if err := json.Unmarshal(plain, &fj); err != nil {
		return fj, fmt.Errorf("tokenstore file %s: %w", path, ErrCorrupt)
	}
	return fj, nil
}

// CheckFile reads the store file at path as OpenFile would, without
// locking it or keeping what it holds (`toolsvc config check`): nil when
// OpenFile would load it under key.
func CheckFile(path string, key []byte) error {
	sealer, err := NewSealer(key)
	if err != nil {
		return err
	}
	_, err = readStoreFile(path, sealer)
	return err
}

// Get implements Store.
func (f *File) Get(_ context.Context, k Key) (Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return Entry{}, fmt.Errorf("%w: closed", ErrUnavailable)
	}
	e, ok := f.tokens[k]
	if !ok {
		return Entry{}, ErrNotFound
	}
	return e, nil
}

// Put implements Store.
func (f *File) Put(_ context.Context, k Key, prev uint64, t Token) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, fmt.Errorf("%w: closed", ErrUnavailable)
	}
	old, had := f.tokens[k]
	if old.Version != prev {
		return 0, ErrConflict
	}
	v := f.next
	f.next++
	f.tokens[k] = Entry{Token: t, Version: v}
	if err := f.writeLocked(); err != nil {
		if had {
			f.tokens[k] = old
		} else {
			delete(f.tokens, k)
		}
		return 0, err
	}
	return v, nil
}

// Delete implements Store.
func (f *File) Delete(_ context.Context, k Key) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("%w: closed", ErrUnavailable)
	}
	old, had := f.tokens[k]
	if !had {
		return nil
	}
	delete(f.tokens, k)
	if err := f.writeLocked(); err != nil {
		f.tokens[k] = old
		return err
	}
	return nil
}

// writeLocked replaces the file with the sealed map.
func (f *File) writeLocked() error {
	fj := fileJSON{Next: f.next, Tokens: make([]fileEntry, 0, len(f.tokens))}
	for k, e := range f.tokens {
		fj.Tokens = append(fj.Tokens, fileEntry{Principal: k.Principal, Server: k.Server, Version: e.Version, Token: e.Token})
	}
	plain, err := json.Marshal(fj)
	if err != nil {
		return err
	}
	sealed := f.sealer.Seal(plain, fileContext)
	clear(plain)
	dir := filepath.Dir(f.path)
	tmp, err := os.CreateTemp(dir, ".tokens-*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if err := tmp.Chmod(0o600); err == nil {
		if _, err = tmp.Write(sealed); err == nil {
			err = tmp.Sync()
		}
	}
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err == nil {
		if d, derr := os.Open(dir); derr == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrUnavailable, f.path, err)
	}
	return nil
}

// TryLock implements Store with an in-process lock (no lease: a holder
// in this process cannot vanish without its deferred unlock running).
func (f *File) TryLock(_ context.Context, k Key) (func(), bool, error) {
	f.locksMu.Lock()
	defer f.locksMu.Unlock()
	if f.locks[k] {
		return nil, false, nil
	}
	f.locks[k] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			f.locksMu.Lock()
			delete(f.locks, k)
			f.locksMu.Unlock()
		})
	}, true, nil
}

// Keys implements Lister: the keys of the stored tokens that keep
// accepts, sorted by principal then server, at most limit of them (more:
// there are others). It holds the store's lock while it copies them, as
// Get does.
func (f *File) Keys(_ context.Context, limit int, keep func(Key) bool) ([]Key, bool, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, false, fmt.Errorf("%w: closed", ErrUnavailable)
	}
	keys := make([]Key, 0, len(f.tokens))
	for k := range f.tokens {
		if keep == nil || keep(k) {
			keys = append(keys, k)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(keys, compareKeys)
	if limit >= 0 && len(keys) > limit {
		return keys[:limit], true, nil
	}
	return keys, false, nil
}

func compareKeys(a, b Key) int {
	return cmp.Or(strings.Compare(a.Principal, b.Principal), strings.Compare(a.Server, b.Server))
}

var _ Lister = (*File)(nil)

// Close releases the file lock; later calls fail with ErrUnavailable.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	clear(f.tokens)
	return f.lockf.Close()
}
