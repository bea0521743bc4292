package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/tokenstore"
)

// TokenStore is the "tokenStore" section: where the per-user tokens of
// userOAuth upstreams are kept (docs/credentials.md). Exactly one of File
// and Redis is set; KeyFile is required.
type TokenStore struct {
	// File is the embedded store for one process: one file, sealed whole
	// (tokenstore.File).
	File string `json:"file"`
	// Redis is the store replicas share (tokenstore/redisstore).
	Redis *TokenStoreRedis `json:"redis"`
	// KeyFile holds the store's key (32 bytes, raw, hex or base64; mode
	// 0600 or 0400): it seals every token and every login link's state,
	// so replicas sharing a store share it.
	KeyFile string `json:"keyFile"`
	// Secrets are the resolved references' values (a Redis password), for
	// redaction.
	Secrets []string `json:"-"`
}

// TokenStoreRedis is "tokenStore.redis".
type TokenStoreRedis struct {
	// URL is redis://[user:password@]host:port/db, rediss:// (TLS) or
	// unix:///path (may use ${ENV} / ${file:…}).
	URL string `json:"url"`
	// Prefix of every key (default "toolsvc:tokens:").
	Prefix string `json:"prefix"`
	// Lease is how long a refresh lock outlives a holder that died
	// (default 30s).
	Lease Duration `json:"lease"`
	// Timeout bounds dialling and each command (default 2s).
	Timeout Duration `json:"timeout"`
}

// parseTokenStore decodes and checks the "tokenStore" section; add
// reports a problem with "tokenStore<field>".
func parseTokenStore(raw json.RawMessage, refs *resolved, add func(field, format string, args ...any)) *TokenStore {
	var tree any
	_ = json.Unmarshal(raw, &tree)
	if _, ok := tree.(map[string]any); !ok {
		add("", "want an object with file or redis, and keyFile")
		return nil
	}
	exp := newExpander(refs)
	tree = exp.expand(tree, "", func(path string, err error) { add("."+path, "%v", err) })
	raw, _ = json.Marshal(tree)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var ts TokenStore
	if err := dec.Decode(&ts); err != nil {
		add("", "%s (want file or redis, and keyFile)", cleanJSONError(err))
		return nil
	}
	ts.Secrets = exp.values()
	switch {
	case ts.File == "" && ts.Redis == nil:
		add(".file", "set one of file (one process) and redis (replicas)")
	case ts.File != "" && ts.Redis != nil:
		add(".redis", "set one of file and redis, not both")
	}
	if ts.Redis != nil {
		u, err := url.Parse(ts.Redis.URL)
		switch {
		case ts.Redis.URL == "":
			add(".redis.url", "required: redis://host:port/db, rediss://… or unix:///path")
		case err != nil || !slices.Contains([]string{"redis", "rediss", "unix"}, u.Scheme):
			add(".redis.url", "want redis://host:port/db, rediss://… or unix:///path (the value is not shown)")
		}
	}
	if ts.KeyFile == "" {
		add(".keyFile", "required: the file holding the store's 32-byte key (tokens and login links are sealed with it)")
	}
	return &ts
}

// checkUserOAuthStore reports each userOAuth server of a file that has
// no tokenStore section.
func (p *parser) checkUserOAuthStore() {
	if p.cfg.TokenStore != nil {
		return
	}
	for _, sc := range p.cfg.Bridge.Servers {
		if sc.Credentials != nil && sc.Credentials.Mode == mcpbridge.CredentialsUserOAuth {
			p.add("", "tokenStore", "required: server %q uses credentials mode %q, whose tokens are kept in it", sc.Name, sc.Credentials.Mode)
			return
		}
	}
}

// String names the store for logs (never the Redis URL: it may hold a
// password).
func (ts *TokenStore) String() string {
	if ts.Redis != nil {
		return "redis"
	}
	return fmt.Sprintf("file %s", ts.File)
}

// CheckFiles reads the store's key file and, for a file store, its file,
// as serve opens them (tokenstore.ReadKeyFile, tokenstore.CheckFile: like
// every file toolsvc reads, a regular file within a size bound, the key
// with owner-only permissions and exactly 32 bytes), and reports each
// problem; file names the configuration in them. `toolsvc config check`
// runs it: Parse does not, since a store that cannot be opened fails
// only the userOAuth upstreams at serve time, not the whole file.
func (ts *TokenStore) CheckFiles(file string) Problems {
	var probs Problems
	add := func(field string, err error) {
		probs = append(probs, Problem{File: file, Field: "tokenStore." + field, Msg: err.Error()})
	}
	key, err := tokenstore.ReadKeyFile(ts.KeyFile)
	if err != nil {
		add("keyFile", err)
	}
	if ts.File == "" {
		return probs
	}
	if key == nil {
		// The file cannot be opened without the key; its kind and size can
		// still be checked.
		key = make([]byte, tokenstore.KeySize)
		if err := tokenstore.CheckFile(ts.File, key); err != nil && !errors.Is(err, tokenstore.ErrCorrupt) {
			add("file", err)
		}
		return probs
	}
	if err := tokenstore.CheckFile(ts.File, key); err != nil {
		add("file", err)
	}
	return probs
}
