package tokenstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFilePut measures a compare-and-swap write to the file store
// holding 3,000 tokens (1,000 principals × 3 upstreams, the issue's
// goal): each write re-seals and fsyncs the whole file.
func BenchmarkFilePut(b *testing.B) {
	ctx := context.Background()
	key := make([]byte, KeySize)
	f, err := OpenFile(filepath.Join(b.TempDir(), "tokens"), key)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	versions := map[Key]uint64{}
	for i := range 3000 {
		k := Key{Principal: fmt.Sprintf("user%04d@example.com", i/3), Server: fmt.Sprintf("server%d", i%3)}
		t := Token{AccessToken: fmt.Sprintf("%0900d", i), RefreshToken: fmt.Sprintf("%0400d", i), Expiry: time.Now().Add(time.Hour)}
		f.tokens[k] = Entry{Token: t, Version: uint64(i + 1)} // fill without 3,000 rewrites
		versions[k] = uint64(i + 1)
	}
	f.next = 3001
	k := Key{Principal: "user0000@example.com", Server: "server0"}
	b.ResetTimer()
	for b.Loop() {
		v, err := f.Put(ctx, k, versions[k], Token{AccessToken: "new", Expiry: time.Now().Add(time.Hour)})
		if err != nil {
			b.Fatal(err)
		}
		versions[k] = v
	}
}

// BenchmarkFileGet measures a read (memory only).
func BenchmarkFileGet(b *testing.B) {
	ctx := context.Background()
	f, err := OpenFile(filepath.Join(b.TempDir(), "tokens"), make([]byte, KeySize))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	k := Key{Principal: "alice", Server: "github"}
	if _, err := f.Put(ctx, k, 0, Token{AccessToken: "a"}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := f.Get(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
}
