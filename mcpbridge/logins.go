package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
	"github.com/toolsvc/toolsvc/tokenstore"
)

// userOAuth logins (docs/credentials.md): the bridge side of toolsvc's
// login callback and of logout. The tokens live in Config.Logins.Store;
// each userOAuth upstream has an oauth.UserTokens over it (userSource).

// LoginCallbackPath is the path of toolsvc's login callback on its HTTP
// listener; Config.Logins.RedirectURL names it as browsers reach it.
const LoginCallbackPath = "/oauth/callback"

// ErrNotUserOAuth: the server named is not in credentials mode userOAuth
// (Logout).
var ErrNotUserOAuth = errors.New("not a server in credentials mode userOAuth")

// userTokens is the oauth.UserTokens of the userOAuth server sc (nil
// when the bridge has no token store: validation refuses that).
func (b *Bridge) userTokens(sc ServerConfig, resource string) *oauth.UserTokens {
	l := b.cfg.Logins
	if l == nil || l.Store == nil {
		return nil
	}
	c := sc.Credentials
	ut, err := oauth.NewUserTokens(oauth.UserOAuthConfig{Server: sc.Name, Issuer: c.Issuer, AuthorizationURL: c.AuthorizationURL,
		TokenURL: c.TokenURL, ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scopes, Resource: resource,
		RedirectURL: l.RedirectURL, ExpiryGuard: DefaultTokenExpiryGuard, RequireSameSubject: c.RequireSameSubject,
		Observe: b.credentialObserver(sc.Name)}, l.Store, l.Key)
	if err != nil {
		b.log.Error("userOAuth: the token store key is unusable", "server", sc.Name, "error", err)
		return nil
	}
	return ut
}

// storeError is why the token store could not be opened ("" when it was,
// or when there is none).
func (b *Bridge) storeError() string {
	if l := b.cfg.Logins; l != nil && l.Store == nil {
		return l.StoreError
	}
	return ""
}

// storeFailed is the error of a login or logout to the userOAuth server
// when the token store could not be opened (nil otherwise).
func (b *Bridge) storeFailed(principal, server string) error {
	if b.storeError() == "" {
		return nil
	}
	u, err := b.upstream(server)
	if err != nil || u.cfg.Credentials.mode() != CredentialsUserOAuth {
		return nil
	}
	if principal == "" {
		return &CredentialsError{Server: server, Mode: CredentialsUserOAuth, Code: CodeNoPrincipal}
	}
	return b.storeUnavailable(server)
}

// storeUnavailable is the error of a userOAuth server's call or login
// when the bridge has no token store.
func (b *Bridge) storeUnavailable(server string) error {
	return &UnavailableError{Server: server, Reason: ReasonTokenStore, Detail: b.storeError()}
}

// credentialObserver is the Observer's CredentialEvent for server, or nil
// when the Observer does not hear credential events.
func (b *Bridge) credentialObserver(server string) func(op, outcome string) {
	co, ok := b.cfg.Observer.(CredentialObserver)
	if !ok {
		return nil
	}
	return func(op, outcome string) { co.CredentialEvent(server, op, outcome) }
}

// userSources are the userOAuth upstreams' sources, by server.
func (b *Bridge) userSources() map[string]*userSource {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := map[string]*userSource{}
	for name, u := range b.ups {
		if s, ok := u.source.credentials().(*userSource); ok && s.ut != nil {
			out[name] = s
		}
	}
	return out
}

// CompleteLogin is toolsvc's login callback: query is the authorization
// server's redirect (code and state, or error). The state names the
// server and the principal the link was made for; the token is stored for
// them. It returns them. Errors never hold a token or the code.
func (b *Bridge) CompleteLogin(ctx context.Context, query url.Values) (principal, server string, err error) {
	for name, s := range b.userSources() {
		if !s.ut.Owns(query) {
			continue
		}
		p, err := s.ut.Complete(ctx, query)
		if err != nil {
			// The detail (a token endpoint's error, a store's) is logged
			// here, redacted like every upstream error; the callback shows
			// the browser only its kind.
			msg := err.Error()
			if u, uerr := b.upstream(name); uerr == nil {
				msg = u.redact(msg)
			}
			b.log.Warn("userOAuth login refused", "server", name, "error", msg)
			return "", name, err
		}
		b.log.Info("userOAuth login stored", "server", name, "principal", p)
		return p, name, nil
	}
	return "", "", errors.New("login callback: the link is not one of this toolsvc's (made under another store key, or for a server no longer in mode userOAuth)")
}

// Logout revokes principal's token for the userOAuth server (RFC 7009, at
// the authorization server) and deletes it from the store; the principal's
// session, if any, closes once idle, and its next call gets a login link.
// A principal without a token is no error.
func (b *Bridge) Logout(ctx context.Context, principal, server string) error {
	if err := b.storeFailed(principal, server); err != nil {
		return err
	}
	s, ok := b.userSources()[server]
	if !ok {
		if _, err := b.upstream(server); err != nil {
			return err
		}
		return fmt.Errorf("logout of server %q: %w", server, ErrNotUserOAuth)
	}
	err := s.ut.Logout(ctx, principal)
	if u, uerr := b.upstream(server); uerr == nil {
		u.source.loggedOut(principal) // nothing more is sent with the old token
	}
	if err != nil {
		return s.failure(ctx, err)
	}
	b.log.Info("userOAuth logout", "server", server, "principal", principal)
	return nil
}

// Login is principal's login to the userOAuth server before any call: the
// link to open (the one a call would answer LOGIN_REQUIRED with), or ""
// when a usable token is stored already (refreshed if due), unless force
// asks for a new link anyway. Errors: as Logout for the server; an
// anonymous principal is *CredentialsError CodeNoPrincipal; the store or
// the authorization server failing is *UnavailableError.
func (b *Bridge) Login(ctx context.Context, principal, server string, force bool) (string, error) {
	if err := b.storeFailed(principal, server); err != nil {
		return "", err
	}
	s, ok := b.userSources()[server]
	if !ok {
		if _, err := b.upstream(server); err != nil {
			return "", err
		}
		return "", fmt.Errorf("login to server %q: %w", server, ErrNotUserOAuth)
	}
	if principal == "" {
		return "", &CredentialsError{Server: server, Mode: CredentialsUserOAuth, Code: CodeNoPrincipal}
	}
	if !force {
		_, err := s.token(ctx, principal, "")
		var le *LoginRequiredError
		switch {
		case err == nil:
			return "", nil
		case errors.As(err, &le):
			return le.URL, nil
		}
		return "", err
	}
	if s.ut == nil {
		return "", b.storeUnavailable(server)
	}
	link, err := s.ut.LoginURL(ctx, principal)
	if err != nil {
		return "", s.failure(ctx, err)
	}
	return link, nil
}

// UserOAuthServers are the names of the servers in credentials mode
// userOAuth.
func (b *Bridge) UserOAuthServers() []string {
	var out []string
	for name := range b.userSources() {
		out = append(out, name)
	}
	return out
}

// Login is one stored userOAuth login: whose, to which server, when its
// access token expires and whether it can be refreshed. Never the token.
type Login struct {
	Principal   string
	Server      string
	Expiry      time.Time // zero: the token did not say
	Refreshable bool
}

// ErrLoginsNotListable: every principal's logins were asked of a token
// store that cannot list whose tokens it holds (a Redis store keys each by
// a sealed name): name the principal.
var ErrLoginsNotListable = errors.New("the token store cannot list every principal's logins (a Redis store keeps only sealed names); name the principal")

// Logins are the stored logins to the userOAuth servers, sorted by
// principal then server, at most limit of them (more: there are others):
// principal's (one store read per userOAuth server), or with principal ""
// every principal's (a tokenstore.Lister's keys, those of servers no
// longer in mode userOAuth left out). Without a token store: none, or
// the store's error when userOAuth servers are configured.
func (b *Bridge) Logins(ctx context.Context, principal string, limit int) ([]Login, bool, error) {
	srcs := b.userSources()
	var store tokenstore.Store
	if l := b.cfg.Logins; l != nil {
		store = l.Store
	}
	if store == nil {
		if b.storeError() != "" && len(b.UserOAuthServers()) > 0 {
			return nil, false, &UnavailableError{Reason: ReasonTokenStore, Detail: b.storeError()}
		}
		return nil, false, nil
	}
	var keys []tokenstore.Key
	more := false
	if principal != "" {
		for name := range srcs {
			keys = append(keys, tokenstore.Key{Principal: principal, Server: name})
		}
		slices.SortFunc(keys, func(a, b tokenstore.Key) int { return strings.Compare(a.Server, b.Server) })
	} else {
		lister, ok := store.(tokenstore.Lister)
		if !ok {
			return nil, false, ErrLoginsNotListable
		}
		all, m, err := lister.Keys(ctx, limit, func(k tokenstore.Key) bool { _, ok := srcs[k.Server]; return ok })
		if err != nil {
			return nil, false, err
		}
		keys, more = all, m
	}
	out := make([]Login, 0, len(keys))
	for _, k := range keys {
		if len(out) == limit {
			more = true
			break
		}
		e, err := store.Get(ctx, k)
		if errors.Is(err, tokenstore.ErrNotFound) {
			continue // logged out meanwhile, or never logged in
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, Login{Principal: k.Principal, Server: k.Server, Expiry: e.Token.Expiry, Refreshable: e.Token.RefreshToken != ""})
	}
	return out, more, nil
}
