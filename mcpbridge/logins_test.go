package mcpbridge

import (
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/tokenstore"
)

// onlyStore hides a store's Keys: a store that cannot list (as Redis).
type onlyStore struct{ tokenstore.Store }

// TestLogins: the stored logins to userOAuth servers, a principal's or
// (from a store that lists its keys) everyone's, sorted and bounded; a
// token for a server not in mode userOAuth is not a login; a store that
// cannot list answers a named principal and refuses everyone's; no token
// is in a Login.
func TestLogins(t *testing.T) {
	ctx := context.Background()
	key := make([]byte, tokenstore.KeySize)
	_, _ = rand.Read(key)
	f, err := tokenstore.OpenFile(filepath.Join(t.TempDir(), "tokens"), key)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exp := time.Now().Add(time.Hour).Round(0)
	for _, k := range []tokenstore.Key{{Principal: "bob", Server: "up"}, {Principal: "alice", Server: "up"}, {Principal: "alice", Server: "gone"}} {
		if _, err := f.Put(ctx, k, 0, tokenstore.Token{AccessToken: "secret-" + k.String(), RefreshToken: "r", Expiry: exp}); err != nil {
			t.Fatal(err)
		}
	}
	newBridge := func(store tokenstore.Store) *Bridge {
		b, err := New(Config{Servers: []ServerConfig{{Name: "up", Transport: TransportStreamableHTTP, URL: "http://127.0.0.1:9/mcp",
			Credentials: &CredentialsConfig{Mode: CredentialsUserOAuth, ClientID: "toolsvc", Issuer: "http://127.0.0.1:9"}}},
			Logins: &LoginConfig{Store: store, Key: key, RedirectURL: "http://127.0.0.1:9/oauth/callback"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	b := newBridge(f)
	all, more, err := b.Logins(ctx, "", 10)
	want := []Login{{Principal: "alice", Server: "up", Expiry: exp, Refreshable: true}, {Principal: "bob", Server: "up", Expiry: exp, Refreshable: true}}
	if err != nil || more || !slices.EqualFunc(all, want, func(a, b Login) bool {
		return a.Principal == b.Principal && a.Server == b.Server && a.Expiry.Equal(b.Expiry) && a.Refreshable
	}) {
		t.Errorf("Logins(all) = %+v, %v, %v; want alice's and bob's to up", all, more, err)
	}
	if one, more, _ := b.Logins(ctx, "", 1); len(one) != 1 || !more || one[0].Principal != "alice" {
		t.Errorf("Logins(all, 1) = %+v, %v; want alice's and more", one, more)
	}
	if mine, _, err := b.Logins(ctx, "bob", 10); err != nil || len(mine) != 1 || mine[0].Principal != "bob" {
		t.Errorf("Logins(bob) = %+v, %v", mine, err)
	}
	if none, _, err := b.Logins(ctx, "carol", 10); err != nil || len(none) != 0 {
		t.Errorf("Logins(carol) = %+v, %v; want none", none, err)
	}
	nl := newBridge(onlyStore{f})
	if _, _, err := nl.Logins(ctx, "", 10); !errors.Is(err, ErrLoginsNotListable) {
		t.Errorf("everyone's logins from a store that cannot list: %v, want ErrLoginsNotListable", err)
	}
	if mine, _, err := nl.Logins(ctx, "alice", 10); err != nil || len(mine) != 1 || mine[0].Server != "up" {
		t.Errorf("alice's logins from a store that cannot list: %+v, %v", mine, err)
	}
}
