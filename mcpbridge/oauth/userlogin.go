package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	oidcclient "github.com/zitadel/oidc/v3/pkg/client"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"

	"github.com/toolsvc/toolsvc/tokenstore"
)

// UserOAuthConfig configures UserTokens: one upstream in credentials mode
// userOAuth (docs/credentials.md).
type UserOAuthConfig struct {
	// Server is the upstream's name, the server of the store's keys.
	Server string
	// Issuer's metadata (RFC 8414, else OpenID discovery) gives the
	// endpoints, unless AuthorizationURL and TokenURL are set.
	Issuer           string
	AuthorizationURL string
	TokenURL         string
	RevocationURL    string // RFC 7009; default: the metadata's, else none
	ClientID         string
	ClientSecret     string
	Scopes           []string
	// Resource is the RFC 8707 resource asked for (the upstream's URL).
	Resource string
	// RedirectURL is toolsvc's callback endpoint, which calls Complete.
	RedirectURL string
	// ExpiryGuard: a token is refreshed this long before it expires
	// (default 30 s).
	ExpiryGuard time.Duration
	// LoginTTL: how long a login link is valid (default 10 min).
	LoginTTL time.Duration
	// RequireSameSubject: the login must return an OpenID id_token (scope
	// openid) whose subject is the principal the link was made for. For an
	// authorization server that is also the identity provider of toolsvc's
	// callers, this refuses a link completed by someone else's browser
	// (docs/credentials.md, "Login confusion").
	RequireSameSubject bool
	// Observe, if set, hears what happens to the principals' tokens (op,
	// outcome; it must not block): "login" ok, "invalid" (a link that is
	// not toolsvc's, or expired), "refused" (the authorization server or
	// the subject check said no) or "error"; "refresh" ok, "refused" (a
	// new login is needed) or "error"; "logout" ok or "error"; "store"
	// "error" (the store failed: ErrUnavailable, a refreshed token it
	// could not keep) or "corrupt" (an entry that no longer opens).
	Observe func(op, outcome string)
}

// UserTokens is the userOAuth mode of one upstream: a login link per
// principal (authorization code with PKCE S256), the callback that stores
// the principal's token in a tokenstore.Store, and the token on each use,
// refreshed exactly once across replicas (tokenstore.Fresh) when it is
// about to expire, and revoked at logout.
//
// The link's state is sealed with the store's key and carries the
// principal, the server, the PKCE verifier and an expiry, so any replica
// sharing the store and its key completes a login another started; nothing
// is kept between the link and the callback.
type UserTokens struct {
	cfg    UserOAuthConfig
	store  tokenstore.Store
	sealer *tokenstore.Sealer
	hc     *http.Client

	mu     sync.Mutex // guards the endpoints, found once
	oc     *oauth2.Config
	revURL string
	idv    *rp.IDTokenVerifier // with RequireSameSubject
}

// ErrLoginRequired: the principal has no usable token for the server (none
// stored, or the authorization server refused to refresh it): the caller
// must follow a login link (LoginURL).
var ErrLoginRequired = errors.New("oauth: the principal must log in to the upstream")

// NewUserTokens returns the userOAuth mode for cfg, storing tokens in
// store and sealing login states with key (the store's key).
func NewUserTokens(cfg UserOAuthConfig, store tokenstore.Store, key []byte) (*UserTokens, error) {
	sealer, err := tokenstore.NewSealer(key)
	if err != nil {
		return nil, err
	}
	if cfg.ExpiryGuard <= 0 {
		cfg.ExpiryGuard = 30 * time.Second
	}
	if cfg.LoginTTL <= 0 {
		cfg.LoginTTL = 10 * time.Minute
	}
	hc := newClient()
	hc.CheckRedirect = tokenRedirect
	return &UserTokens{cfg: cfg, store: store, sealer: sealer, hc: hc}, nil
}

// Close releases idle connections (the store is the caller's).
func (u *UserTokens) Close() { u.hc.CloseIdleConnections() }

// config is the oauth2 configuration, the endpoints discovered on first
// use (and retried on the next use if that fails).
func (u *UserTokens) config(ctx context.Context) (*oauth2.Config, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.oc != nil {
		return u.oc, nil
	}
	authURL, tokenURL, revURL := u.cfg.AuthorizationURL, u.cfg.TokenURL, u.cfg.RevocationURL
	if authURL == "" || tokenURL == "" || u.cfg.RequireSameSubject {
		asm, err := auth.GetAuthServerMetadata(ctx, u.cfg.Issuer, u.hc)
		if err != nil || asm == nil {
			return nil, fmt.Errorf("oauth: metadata of the authorization server %s: %v", u.cfg.Issuer, orNone(err))
		}
		if authURL == "" || tokenURL == "" {
			authURL, tokenURL = asm.AuthorizationEndpoint, asm.TokenEndpoint
		}
		if revURL == "" {
			revURL = asm.RevocationEndpoint
		}
		if u.cfg.RequireSameSubject {
			if asm.JWKSURI == "" {
				return nil, fmt.Errorf("oauth: the authorization server %s has no jwks_uri to verify id_tokens with", u.cfg.Issuer)
			}
			u.idv = rp.NewIDTokenVerifier(asm.Issuer, u.cfg.ClientID, rp.NewRemoteKeySet(u.hc, asm.JWKSURI))
		}
	}
	style := oauth2.AuthStyleInHeader
	if u.cfg.ClientSecret == "" {
		style = oauth2.AuthStyleInParams
	}
	u.oc = &oauth2.Config{ClientID: u.cfg.ClientID, ClientSecret: u.cfg.ClientSecret, RedirectURL: u.cfg.RedirectURL,
		Scopes: u.cfg.Scopes, Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: style}}
	u.revURL = revURL
	return u.oc, nil
}

func orNone(err error) any {
	if err == nil {
		return "none found"
	}
	return err
}

// loginState is what a login link's state carries, sealed.
type loginState struct {
	Principal string    `json:"p"`
	Server    string    `json:"s"`
	Verifier  string    `json:"v"`
	Expires   time.Time `json:"e"`
}

var stateContext = []byte("toolsvc userOAuth login state v1")

// LoginURL is the link principal follows to log in to the upstream. It is
// valid for LoginTTL, on any replica sharing the store's key.
func (u *UserTokens) LoginURL(ctx context.Context, principal string) (string, error) {
	oc, err := u.config(ctx)
	if err != nil {
		return "", err
	}
	verifier := oauth2.GenerateVerifier()
	plain, _ := json.Marshal(loginState{Principal: principal, Server: u.cfg.Server, Verifier: verifier,
		Expires: time.Now().Add(u.cfg.LoginTTL)})
	state := base64.RawURLEncoding.EncodeToString(u.sealer.Seal(plain, stateContext))
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if u.cfg.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", u.cfg.Resource))
	}
	return oc.AuthCodeURL(state, opts...), nil
}

// Owns reports whether the callback's query carries a login state this
// UserTokens made (sealed with its key, for its server), expired or not.
func (u *UserTokens) Owns(query url.Values) bool {
	raw, err := base64.RawURLEncoding.DecodeString(query.Get("state"))
	if err != nil {
		return false
	}
	plain, err := u.sealer.Open(raw, stateContext)
	var st loginState
	return err == nil && json.Unmarshal(plain, &st) == nil && st.Server == u.cfg.Server
}

// Complete handles the callback's query (the authorization server's
// redirect): it opens the state, redeems the code with its PKCE verifier
// and stores the token for (principal, server), replacing any earlier
// one. It returns the principal who logged in.
func (u *UserTokens) Complete(ctx context.Context, query url.Values) (string, error) {
	principal, outcome, err := u.complete(ctx, query)
	u.observe("login", outcome)
	if outcome == "error" {
		u.observeStore(err)
	}
	return principal, err
}

// complete is Complete, with its outcome for Observe.
func (u *UserTokens) complete(ctx context.Context, query url.Values) (string, string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(query.Get("state"))
	if err != nil {
		return "", "invalid", errors.New("oauth: login callback: the state is not one of toolsvc's")
	}
	plain, err := u.sealer.Open(raw, stateContext)
	var st loginState
	if err != nil || json.Unmarshal(plain, &st) != nil || st.Server != u.cfg.Server {
		return "", "invalid", errors.New("oauth: login callback: the state is not one of toolsvc's for this server")
	}
	if time.Now().After(st.Expires) {
		return "", "invalid", errors.New("oauth: login callback: the login link expired; ask for a new one")
	}
	if e := query.Get("error"); e != "" {
		return "", "refused", fmt.Errorf("oauth: the authorization server refused the login: %s", clip(e, 64))
	}
	oc, err := u.config(ctx)
	if err != nil {
		return "", "error", err
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(st.Verifier)}
	if u.cfg.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", u.cfg.Resource))
	}
	tok, err := oc.Exchange(context.WithValue(ctx, oauth2.HTTPClient, u.hc), query.Get("code"), opts...)
	if err != nil {
		return "", "refused", fmt.Errorf("oauth: redeeming the login code: %s", tokenErrorText(err))
	}
	if err := u.checkSubject(ctx, tok, st.Principal); err != nil {
		return "", "refused", err
	}
	k := tokenstore.Key{Principal: st.Principal, Server: u.cfg.Server}
	t := tokenstore.Token{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, TokenType: tok.TokenType, Expiry: tok.Expiry}
	for range 3 { // replace whatever is stored, even if it changes meanwhile
		prev := uint64(0)
		if e, err := u.store.Get(ctx, k); err == nil {
			prev = e.Version
		} else if errors.Is(err, tokenstore.ErrCorrupt) {
			// An entry that no longer opens (a new key file) is replaced by
			// this login, or the principal could never log in again.
			u.observe("store", "corrupt")
			if err := u.store.Delete(ctx, k); err != nil {
				return "", "error", err
			}
		} else if !errors.Is(err, tokenstore.ErrNotFound) {
			return "", "error", err
		}
		if _, err = u.store.Put(ctx, k, prev, t); !errors.Is(err, tokenstore.ErrConflict) {
			if err != nil {
				return "", "error", err
			}
			return st.Principal, "ok", nil
		}
	}
	return "", "error", tokenstore.ErrConflict
}

// observe reports to cfg.Observe.
func (u *UserTokens) observe(op, outcome string) {
	if u.cfg.Observe != nil {
		u.cfg.Observe(op, outcome)
	}
}

// observeStore reports a failure of the store itself (not a token that
// is missing or in conflict).
func (u *UserTokens) observeStore(err error) {
	var ns *tokenstore.NotStoredError
	switch {
	case errors.Is(err, tokenstore.ErrCorrupt):
		u.observe("store", "corrupt")
	case errors.Is(err, tokenstore.ErrUnavailable), errors.As(err, &ns):
		u.observe("store", "error")
	}
}

// checkSubject, with RequireSameSubject, verifies the login's id_token
// (signature, issuer, audience, expiry) and that its subject is principal.
func (u *UserTokens) checkSubject(ctx context.Context, tok *oauth2.Token, principal string) error {
	if !u.cfg.RequireSameSubject {
		return nil
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return errors.New("oauth: login callback: no id_token to check who logged in (is the scope openid asked for?)")
	}
	u.mu.Lock()
	idv := u.idv
	u.mu.Unlock()
	claims, err := rp.VerifyIDToken[*oidc.IDTokenClaims](ctx, raw, idv)
	if err != nil {
		return errors.New("oauth: login callback: the id_token does not verify")
	}
	if claims.Subject != principal {
		return ErrOtherSubject
	}
	return nil
}

// ErrOtherSubject: with RequireSameSubject, the account that completed a
// login link is not the principal the link was made for; nothing is
// stored.
var ErrOtherSubject = errors.New("oauth: login callback: the account that logged in is not the one the link was made for")

// Token returns principal's access token for the upstream, refreshing it
// (once across replicas) when it expires within ExpiryGuard. Errors:
// ErrLoginRequired (none stored, or the refresh was refused: the stored
// token is then deleted), tokenstore.ErrUnavailable, or the authorization
// server unreachable.
func (u *UserTokens) Token(ctx context.Context, principal string) (string, error) {
	k := tokenstore.Key{Principal: principal, Server: u.cfg.Server}
	t, err := tokenstore.Fresh(ctx, u.store, k, tokenstore.ExpiresWithin(u.cfg.ExpiryGuard), u.refresh)
	var refused *refreshRefused
	switch {
	case err == nil:
		return t.AccessToken, nil
	case errors.Is(err, tokenstore.ErrNotFound):
		return "", ErrLoginRequired
	case errors.As(err, &refused):
		_ = u.store.Delete(ctx, k) // dead: the next call gets a login link
		return "", fmt.Errorf("%w (%s)", ErrLoginRequired, refused.code)
	}
	u.observeStore(err)
	var ns *tokenstore.NotStoredError
	if errors.As(err, &ns) {
		// Refreshed, but the store failed: the token works now; the
		// authorization server may have rotated the refresh token, which
		// is then lost unless a later call stores it. Say so.
		return ns.Token.AccessToken, nil
	}
	return "", err
}

// refreshRefused is a refresh the authorization server refused for good
// (invalid_grant), or a token without a refresh token.
type refreshRefused struct{ code string }

func (e *refreshRefused) Error() string { return "refresh refused: " + e.code }

func (u *UserTokens) refresh(ctx context.Context, t tokenstore.Token) (tokenstore.Token, error) {
	nt, err := u.refreshAt(ctx, t)
	var refused *refreshRefused
	switch {
	case err != nil && ctx.Err() != nil:
		// The caller gave up: no outcome of the authorization server's.
	case err == nil:
		u.observe("refresh", "ok")
	case errors.As(err, &refused):
		u.observe("refresh", "refused")
	default:
		u.observe("refresh", "error")
	}
	return nt, err
}

// refreshAt redeems t's refresh token at the authorization server.
func (u *UserTokens) refreshAt(ctx context.Context, t tokenstore.Token) (tokenstore.Token, error) {
	if t.RefreshToken == "" {
		return tokenstore.Token{}, &refreshRefused{code: "no refresh token"}
	}
	oc, err := u.config(ctx)
	if err != nil {
		return tokenstore.Token{}, err
	}
	src := oc.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, u.hc), &oauth2.Token{RefreshToken: t.RefreshToken})
	nt, err := src.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			// Revoked, expired or rotated away: only a new login helps.
			// Other errors (invalid_client: toolsvc's configuration;
			// server_error) leave the user's token alone.
			return tokenstore.Token{}, &refreshRefused{code: re.ErrorCode}
		}
		return tokenstore.Token{}, errors.New("oauth: refreshing: " + tokenErrorText(err))
	}
	out := tokenstore.Token{AccessToken: nt.AccessToken, RefreshToken: nt.RefreshToken, TokenType: nt.TokenType, Expiry: nt.Expiry}
	if out.RefreshToken == "" {
		out.RefreshToken = t.RefreshToken // not rotated: keep the old one
	}
	return out, nil
}

// Logout revokes principal's refresh token at the authorization server
// (RFC 7009, when it has a revocation endpoint), then deletes the stored
// token. A revocation that fails leaves the token stored, so that a retry
// revokes it again (deleting first would leave it valid at the
// authorization server with nothing left here to revoke).
func (u *UserTokens) Logout(ctx context.Context, principal string) error {
	err := u.logout(ctx, principal)
	if err != nil {
		u.observe("logout", "error")
		u.observeStore(err)
	} else {
		u.observe("logout", "ok")
	}
	return err
}

func (u *UserTokens) logout(ctx context.Context, principal string) error {
	k := tokenstore.Key{Principal: principal, Server: u.cfg.Server}
	e, err := u.store.Get(ctx, k)
	switch {
	case errors.Is(err, tokenstore.ErrNotFound):
		return nil
	case errors.Is(err, tokenstore.ErrCorrupt):
		// Unreadable (a new key file): nothing can be revoked, and the
		// entry would block every later login; it goes.
		u.observe("store", "corrupt")
		return u.store.Delete(ctx, k)
	case err != nil:
		return err
	}
	if _, err := u.config(ctx); err != nil {
		return err
	}
	u.mu.Lock()
	rev := u.revURL
	u.mu.Unlock()
	if rev != "" {
		tok, hint := e.Token.RefreshToken, "refresh_token"
		if tok == "" {
			tok, hint = e.Token.AccessToken, "access_token"
		}
		req := oidcclient.RevokeRequest{Token: tok, TokenTypeHint: hint}
		var authFn any
		if u.cfg.ClientSecret != "" {
			authFn = httphelper.AuthorizeBasic(u.cfg.ClientID, u.cfg.ClientSecret)
		} else {
			req.ClientID = u.cfg.ClientID
		}
		if err := oidcclient.CallRevokeEndpoint(ctx, req, authFn, revoker{url: rev, hc: u.hc}); err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return fmt.Errorf("oauth: revoking the token at %s failed (it is still stored: log out again): %v", rev, err)
		}
	}
	return u.store.Delete(ctx, k)
}

// revoker is the RFC 7009 endpoint for zitadel/oidc's revocation client.
type revoker struct {
	url string
	hc  *http.Client
}

func (r revoker) GetRevokeEndpoint() string { return r.url }
func (r revoker) HttpClient() *http.Client  { return r.hc }
