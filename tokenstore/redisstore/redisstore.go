// Package redisstore is the shared tokenstore.Store of toolsvc replicas:
// tokens in Redis (or Valkey, which speaks the same protocol), through
// github.com/redis/go-redis/v9.
//
// Each key is one Redis hash, named by an HMAC of (principal, server)
// under the store key so names reveal nobody, holding the version "v" and
// the token "d" sealed with AES-256-GCM bound to (principal, server): a
// copy of the database (or its AOF and RDB files) without the key reveals
// nothing, and a value moved to another principal's hash does not decrypt.
// Put is a compare-and-swap in one Lua script; Delete keeps the version
// (a tombstone that expires after a week), so versions never repeat.
// TryLock is a lease: SET NX PX with a random holder token, released by a
// script that deletes it only if it still holds that token (the
// single-instance pattern in Redis's documentation).
//
// Any failure to reach Redis is tokenstore.ErrUnavailable; the caller's
// context ending is its own error. Nothing is cached: every replica reads
// the same truth.
package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolsvc/toolsvc/tokenstore"
)

// Options configures a Store; nil means the defaults.
type Options struct {
	// Prefix of every Redis key; default "toolsvc:tokens:".
	Prefix string
	// Lease is how long a Lock holds when its holder never releases it
	// (it died); default 30s.
	Lease time.Duration
	// Timeout bounds dialling and each command (default 2s), so an
	// unreachable Redis is ErrUnavailable quickly rather than a hang.
	Timeout time.Duration
}

// Store is a tokenstore.Store on Redis.
type Store struct {
	rdb    *redis.Client
	sealer *tokenstore.Sealer
	prefix string
	lease  time.Duration
}

var _ tokenstore.Store = (*Store)(nil)

// Open connects to the Redis at url (redis://[user:password@]host:port/db,
// rediss:// for TLS, unix:///path/to/socket) with the store key key
// (tokenstore.ReadKeyFile). It does not dial: an unreachable Redis shows
// as ErrUnavailable on use. The URL's password never appears in errors.
func Open(url string, key []byte, o *Options) (*Store, error) {
	sealer, err := tokenstore.NewSealer(key)
	if err != nil {
		return nil, err
	}
	ro, err := redis.ParseURL(url)
	if err != nil {
		return nil, errors.New("redisstore: the URL does not parse (want redis://host:port/db, rediss:// or unix:///path)")
	}
	opts := Options{}
	if o != nil {
		opts = *o
	}
	if opts.Prefix == "" {
		opts.Prefix = "toolsvc:tokens:"
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = opts.Timeout, opts.Timeout, opts.Timeout
	// One retry of a command, one redial: a dead Redis is reported in
	// milliseconds, not after go-redis's default five dials.
	ro.MaxRetries, ro.DialerRetries = 1, 1
	ro.DisableIdentity = true // no CLIENT SETINFO: Redis 7.0 (Debian 12) lacks it
	return &Store{rdb: redis.NewClient(ro), sealer: sealer, prefix: opts.Prefix, lease: opts.Lease}, nil
}

func (s *Store) dataKey(k tokenstore.Key) string { return s.prefix + "t:" + s.sealer.Name(k) }
func (s *Store) lockKey(k tokenstore.Key) string { return s.prefix + "l:" + s.sealer.Name(k) }

// fail maps a go-redis error: the caller's context ending stays itself,
// anything else is ErrUnavailable (go-redis errors carry no password).
func fail(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("redisstore %s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%w: redis %s: %v", tokenstore.ErrUnavailable, op, err)
}

// Get implements tokenstore.Store.
func (s *Store) Get(ctx context.Context, k tokenstore.Key) (tokenstore.Entry, error) {
	vals, err := s.rdb.HMGet(ctx, s.dataKey(k), "v", "d").Result()
	if err != nil {
		return tokenstore.Entry{}, fail(ctx, "get", err)
	}
	vs, _ := vals[0].(string)
	d, _ := vals[1].(string)
	if d == "" {
		return tokenstore.Entry{}, tokenstore.ErrNotFound
	}
	var v uint64
	if _, err := fmt.Sscan(vs, &v); err != nil {
		return tokenstore.Entry{}, tokenstore.ErrCorrupt
	}
	t, err := s.sealer.OpenToken(k, []byte(d))
	if err != nil {
		return tokenstore.Entry{}, err
	}
	return tokenstore.Entry{Token: t, Version: v}, nil
}

// casScript stores ARGV[2] as the token of KEYS[1] if its live version is
// ARGV[1] (0: none live) and returns the new version, else 0.
var casScript = redis.NewScript(`
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
local cur = 0
if redis.call('HEXISTS', KEYS[1], 'd') == 1 then cur = v end
if cur ~= tonumber(ARGV[1]) then return 0 end
v = v + 1
redis.call('HSET', KEYS[1], 'v', v, 'd', ARGV[2])
redis.call('PERSIST', KEYS[1])
return v
`)

// Put implements tokenstore.Store.
func (s *Store) Put(ctx context.Context, k tokenstore.Key, prev uint64, t tokenstore.Token) (uint64, error) {
	v, err := casScript.Run(ctx, s.rdb, []string{s.dataKey(k)}, prev, s.sealer.SealToken(k, t)).Uint64()
	if err != nil {
		return 0, fail(ctx, "put", err)
	}
	if v == 0 {
		return 0, tokenstore.ErrConflict
	}
	return v, nil
}

// deleteScript drops KEYS[1]'s token, keeping its version for a week.
var deleteScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'd') == 1 then
  redis.call('HDEL', KEYS[1], 'd')
  redis.call('EXPIRE', KEYS[1], 604800)
end
return 1
`)

// Delete implements tokenstore.Store.
func (s *Store) Delete(ctx context.Context, k tokenstore.Key) error {
	if err := deleteScript.Run(ctx, s.rdb, []string{s.dataKey(k)}).Err(); err != nil {
		return fail(ctx, "delete", err)
	}
	return nil
}

// unlockScript deletes KEYS[1] only while it holds ARGV[1].
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// TryLock implements tokenstore.Store: SET NX PX with a random holder.
func (s *Store) TryLock(ctx context.Context, k tokenstore.Key) (func(), bool, error) {
	key, holder := s.lockKey(k), rand.Text()
	ok, err := s.rdb.SetNX(ctx, key, holder, s.lease).Result()
	if err != nil {
		return nil, false, fail(ctx, "lock", err)
	}
	if !ok {
		return nil, false, nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// Not the caller's context: it may have ended, and the lock
			// must still go (else it holds for the whole lease).
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = unlockScript.Run(ctx, s.rdb, []string{key}, holder).Err()
		})
	}, true, nil
}

// Close closes the connections.
func (s *Store) Close() error { return s.rdb.Close() }
