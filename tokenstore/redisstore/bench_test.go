package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/tokenstore"
)

// BenchmarkRedis measures Get and a compare-and-swap Put against a real
// redis-server over a unix socket (appendfsync always: every Put is on
// disk before it returns).
func BenchmarkRedis(b *testing.B) {
	ctx := context.Background()
	r := startRedisB(b)
	s, err := Open(r.url(), newKey(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	k := tokenstore.Key{Principal: "alice@example.com", Server: "github"}
	v, err := s.Put(ctx, k, 0, tokenstore.Token{AccessToken: "a", Expiry: time.Now().Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Get(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Put", func(b *testing.B) {
		for b.Loop() {
			if v, err = s.Put(ctx, k, v, tokenstore.Token{AccessToken: "b", Expiry: time.Now().Add(time.Hour)}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
