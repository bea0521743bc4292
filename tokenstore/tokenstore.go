// Package tokenstore keeps per-user upstream tokens: one Token per Key
// (principal, server), encrypted at rest, with the two guarantees per-user
// credentials need across stateless replicas:
//
//   - compare-and-swap writes (Store.Put with the version read), so a
//     writer that lost a race learns it (ErrConflict) instead of
//     overwriting a newer token;
//   - a per-key lease lock (Store.Lock), so that Fresh refreshes a
//     principal's token exactly once however many goroutines and replicas
//     find it stale at the same moment.
//
// Two stores: File (this package), the embedded default for one process,
// and redisstore.Store, shared by replicas through Redis or Valkey. Both
// seal every token with AES-256-GCM under a key from a key file (Key), so a
// copy of the store without the key reveals neither tokens nor principal
// names.
//
// Errors: ErrNotFound (no token: the principal must log in), ErrConflict
// (lost a compare-and-swap), ErrUnavailable (the store cannot be reached:
// UNAVAILABLE at the edge). No error, log line or String of this package
// contains a token.
//
//	Fresh ──Get──▶ fresh? ──yes──▶ token
//	  │ no
//	TryLock(k) ──held elsewhere──▶ wait, Get: fresh now? ──yes──▶ token (the holder refreshed)
//	  │ got it                                 └─no──▶ TryLock again
//	Get again ─▶ refresh ─▶ Put(k, version) ─▶ unlock
package tokenstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Key names one stored token: a principal's token for an upstream server.
type Key struct {
	Principal string
	Server    string
}

func (k Key) String() string { return fmt.Sprintf("%s@%s", k.Principal, k.Server) }

// Token is an OAuth token as stored. Its String, GoString and LogValue
// never show the token values.
type Token struct {
	AccessToken  string    `json:"a"`
	RefreshToken string    `json:"r,omitempty"`
	TokenType    string    `json:"t,omitempty"`
	Expiry       time.Time `json:"e,omitzero"`
}

func (t Token) String() string {
	return fmt.Sprintf("Token{access:%s refresh:%s expiry:%s}", present(t.AccessToken), present(t.RefreshToken), t.Expiry.Format(time.RFC3339))
}

// GoString keeps %#v from printing the fields.
func (t Token) GoString() string { return t.String() }

// LogValue keeps slog from printing the fields.
func (t Token) LogValue() slog.Value { return slog.StringValue(t.String()) }

func present(s string) string {
	if s == "" {
		return "none"
	}
	return "redacted"
}

// Entry is a stored token and its version, the argument of the next Put.
type Entry struct {
	Token   Token
	Version uint64
}

// Store is a token store. Implementations are safe for concurrent use.
// Lister is a Store that can list whose tokens it holds: the File store,
// whose keys are in the clear inside its sealed file. A Redis store keys
// each token by a sealed name (Sealer.Name), so it cannot say whose a key
// is without being told; it is not a Lister.
type Lister interface {
	// Keys returns at most limit keys that keep accepts (nil: all; a
	// negative limit: no bound), sorted by principal then server, and
	// whether there are more.
	Keys(ctx context.Context, limit int, keep func(Key) bool) (keys []Key, more bool, err error)
}

type Store interface {
	// Get returns k's token, or ErrNotFound.
	Get(ctx context.Context, k Key) (Entry, error)
	// Put stores t for k if k's version is still prev (0: k has no
	// token), and returns the new version; otherwise it stores nothing and
	// returns ErrConflict. Versions never repeat for a key, even across a
	// Delete.
	Put(ctx context.Context, k Key, prev uint64, t Token) (uint64, error)
	// Delete removes k's token (absent is no error).
	Delete(ctx context.Context, k Key) error
	// TryLock takes k's lock if no one holds it and returns the function
	// that releases it (idempotent); ok is false when another holder has
	// it. The lock is a lease: if its holder dies, it expires (after the
	// store's lease time), so a holder must finish its work well within
	// that; Put's compare-and-swap protects the token if it does not.
	// Lock waits for it.
	TryLock(ctx context.Context, k Key) (unlock func(), ok bool, err error)
	// Close releases the store's resources.
	Close() error
}

var (
	// ErrNotFound: no token is stored for the key.
	ErrNotFound = errors.New("tokenstore: no token stored")
	// ErrConflict: the key's version changed since it was read.
	ErrConflict = errors.New("tokenstore: token changed concurrently")
	// ErrUnavailable: the store cannot be reached (a UNAVAILABLE error at
	// the edge); retry later. What was stored is still there.
	ErrUnavailable = errors.New("tokenstore: store unavailable")
	// ErrCorrupt: a stored value does not decrypt under the key (the
	// wrong key file, or tampering).
	ErrCorrupt = errors.New("tokenstore: stored value does not decrypt")
)

// NotStoredError is what Fresh returns when a refresh succeeded but the
// new token could not be stored. Token is valid and may be used; the
// authorization server may have rotated the refresh token, so the caller
// should keep Token and store it again (Put with Prev) when it can.
type NotStoredError struct {
	Token Token
	Prev  uint64
	Err   error
}

func (e *NotStoredError) Error() string { return "refreshed token not stored: " + e.Err.Error() }
func (e *NotStoredError) Unwrap() error { return e.Err }

// Fresh returns k's token, refreshing it when stale reports so: at most
// one refresh of a key runs at a time among every goroutine and process
// sharing the store, and a caller that waited for the lock takes the token
// the holder stored instead of refreshing again. A key with no token is
// ErrNotFound (the principal must log in); refresh's error is returned
// wrapped. See NotStoredError for a refresh whose result the store refused.
func Fresh(ctx context.Context, s Store, k Key, stale func(Token) bool, refresh func(context.Context, Token) (Token, error)) (Token, error) {
	e, err := s.Get(ctx, k)
	if err == nil && !stale(e.Token) {
		return e.Token, nil
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Token{}, err
	}
	unlock, e, err := lockOrFresh(ctx, s, k, stale)
	if err != nil || unlock == nil {
		return e.Token, err
	}
	defer unlock()
	if e, err = s.Get(ctx, k); err != nil {
		return Token{}, err
	}
	if !stale(e.Token) {
		return e.Token, nil
	}
	nt, err := refresh(ctx, e.Token)
	if err != nil {
		return Token{}, fmt.Errorf("refreshing the token of %s: %w", k, err)
	}
	if _, err := s.Put(ctx, k, e.Version, nt); err != nil {
		if errors.Is(err, ErrConflict) {
			// Someone wrote in between (our lease expired, or a login
			// stored a new token): theirs is the newer one.
			if e, err := s.Get(ctx, k); err == nil {
				return e.Token, nil
			}
		}
		return nt, &NotStoredError{Token: nt, Prev: e.Version, Err: err}
	}
	return nt, nil
}

// Polling bounds of Lock and Fresh while another holder has the lock.
const (
	minPoll = 2 * time.Millisecond
	maxPoll = 50 * time.Millisecond
)

// lockOrFresh takes k's lock, or, while waiting for it, finds k's token
// fresh (stored by the holder): then unlock is nil and e is that token.
func lockOrFresh(ctx context.Context, s Store, k Key, stale func(Token) bool) (unlock func(), e Entry, err error) {
	wait := minPoll
	for {
		unlock, ok, err := s.TryLock(ctx, k)
		if err != nil || ok {
			return unlock, Entry{}, err
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, Entry{}, err
		}
		wait = min(2*wait, maxPoll)
		if stale != nil {
			switch e, err := s.Get(ctx, k); {
			case err == nil && !stale(e.Token):
				return nil, e, nil
			case err != nil && !errors.Is(err, ErrNotFound):
				return nil, Entry{}, err
			}
		}
	}
}

// Lock waits within ctx for k's lock (TryLock, polled) and returns the
// function that releases it.
func Lock(ctx context.Context, s Store, k Key) (unlock func(), err error) {
	unlock, _, err = lockOrFresh(ctx, s, k, nil)
	return unlock, err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ExpiresWithin is the usual stale test for Fresh: a token is stale when
// it expires within guard (a token without an expiry never is), so it is
// replaced before a request carrying it could arrive expired.
func ExpiresWithin(guard time.Duration) func(Token) bool {
	return func(t Token) bool { return !t.Expiry.IsZero() && time.Until(t.Expiry) < guard }
}
