package server

import (
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
	"github.com/toolsvc/toolsvc/tokenstore"
	"github.com/toolsvc/toolsvc/tokenstore/redisstore"
)

// userOAuth on serve's side (docs/credentials.md): the config's
// tokenStore opened for the bridge, and the login callback served on the
// admin listener at mcpbridge.LoginCallbackPath, whose external URL is
// --public-url (default: http:// and the admin listener's address).

// openLogins opens the config's token store (if any) and returns the
// bridge's LoginConfig, the redirect URL naming the callback on adminAddr
// unless --public-url says otherwise. nil, nil without a tokenStore. A
// store that cannot be opened (its key file or file refused, a Redis URL
// that does not parse) is logged and leaves the LoginConfig without a
// Store but with the reason: only the userOAuth upstreams fail (with it),
// the others serve.
func openLogins(loaded *config.Config, publicURL string, adminAddr net.Addr, log interface{ Error(string, ...any) }) (*mcpbridge.LoginConfig, error) {
	if loaded == nil || loaded.TokenStore == nil {
		return nil, nil
	}
	ts := loaded.TokenStore
	if publicURL == "" {
		if adminAddr == nil {
			return nil, errors.New("tokenStore: the login callback is served on --admin-listen, which is off; set it (and --public-url if browsers reach it by another name)")
		}
		publicURL = "http://" + adminAddr.String()
	}
	lc := &mcpbridge.LoginConfig{RedirectURL: strings.TrimSuffix(publicURL, "/") + mcpbridge.LoginCallbackPath}
	unusable := func(field string, err error) (*mcpbridge.LoginConfig, error) {
		msg := err.Error()
		for _, s := range ts.Secrets { // a Redis URL's password
			if len(s) >= 4 {
				msg = strings.ReplaceAll(msg, s, "[redacted]")
			}
		}
		lc.StoreError = field + ": " + msg
		log.Error("the token store cannot be opened: the userOAuth upstreams fail until it is fixed and toolsvc restarted; the others serve",
			"servers", userOAuthServers(loaded), "error", lc.StoreError)
		return lc, nil
	}
	key, err := tokenstore.ReadKeyFile(ts.KeyFile)
	if err != nil {
		return unusable("tokenStore.keyFile", err)
	}
	var st tokenstore.Store
	if ts.Redis != nil {
		st, err = redisstore.Open(ts.Redis.URL, key, &redisstore.Options{Prefix: ts.Redis.Prefix, Lease: ts.Redis.Lease.D, Timeout: ts.Redis.Timeout.D})
		if err != nil {
			return unusable("tokenStore.redis", err)
		}
	} else if st, err = tokenstore.OpenFile(ts.File, key); err != nil {
		return unusable("tokenStore.file", err)
	}
	lc.Store, lc.Key = st, key
	return lc, nil
}

// userOAuthServers names the config's userOAuth servers.
func userOAuthServers(loaded *config.Config) []string {
	var out []string
	for _, sc := range loaded.Bridge.Servers {
		if sc.Credentials != nil && sc.Credentials.Mode == mcpbridge.CredentialsUserOAuth {
			out = append(out, sc.Name)
		}
	}
	return out
}

// loginCallback is the handler of mcpbridge.LoginCallbackPath: the
// authorization server's redirect after a principal logged in. The query
// (code, state) is never logged.
func loginCallback(b func() *mcpbridge.Bridge, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		principal, server, err := b().CompleteLogin(r.Context(), r.URL.Query())
		if err != nil {
			// The browser is nobody toolsvc authenticated: it gets the kind of
			// failure and a fixed text, never the error's detail (the bridge
			// logged it, redacted).
			status, why := loginFailure(err)
			log.Warn("login callback refused", "server", server, "status", status)
			w.WriteHeader(status)
			fmt.Fprintf(w, "<!doctype html><title>Login failed</title><p>toolsvc could not complete the login: %s</p>\n", html.EscapeString(why))
			return
		}
		fmt.Fprintf(w, "<!doctype html><title>Logged in</title><p>Logged in to %s as %s at %s. You can close this window and call again.</p>\n",
			html.EscapeString(server), html.EscapeString(principal), time.Now().UTC().Format(time.RFC3339))
	})
}

// loginFailure is the status and the text a login callback's browser gets
// for err: the account that logged in is not the link's (403), the token
// store failed (503), anything else (a link that is not toolsvc's, expired
// or used, a login the authorization server refused or could not redeem)
// 400.
func loginFailure(err error) (int, string) {
	switch {
	case errors.Is(err, oauth.ErrOtherSubject):
		return http.StatusForbidden, "the account that logged in is not the one the link was made for"
	case errors.Is(err, tokenstore.ErrUnavailable), errors.Is(err, tokenstore.ErrConflict), errors.Is(err, tokenstore.ErrCorrupt):
		return http.StatusServiceUnavailable, "the login could not be stored; use the link again in a moment"
	}
	return http.StatusBadRequest, "the link is not valid (expired, used already, or not made by this toolsvc), or the authorization server did not complete the login; call again for a new link"
}
