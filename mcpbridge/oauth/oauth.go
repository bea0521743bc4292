// Package oauth is toolsvc's OAuth 2.1 client for streamable HTTP
// upstreams: the configuration (Config), a headless go-sdk
// auth.OAuthHandler that gets, caches and refreshes tokens by the client
// credentials or refresh token grant (Handler), the interactive login
// an operator runs once to provision a refresh token (Login), and the RFC
// 8693 token exchange of an upstream in credentials mode tokenExchange
// (Exchanger, exchange.go).
//
// The bridge (package mcpbridge) reaches OAuth only through this package:
// it holds a *Handler per upstream, hands Hook(h) to the transport, and
// asks Failure() to tell an authentication problem from a crash
// (mcpbridge/deps_test.go keeps the OAuth dependencies out of the bridge
// core). Specifications: https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization
package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/toolsvc/toolsvc/internal/loopback"
	"github.com/toolsvc/toolsvc/mcpbridge/internal/origin"
)

// OAuth grants (Config.Grant).
const (
	// ClientCredentials is RFC 6749 §4.4 (and the MCP
	// client-credentials extension): toolsvc is a confidential client
	// acting for itself.
	ClientCredentials = "client_credentials"
	// RefreshToken is the authorization code grant with a refresh
	// token an operator obtained once, interactively (with PKCE), and
	// provisioned: toolsvc only ever refreshes it.
	RefreshToken = "refresh_token"
)

// Token endpoint client authentication methods (Config.AuthMethod).
const (
	AuthBasic      = "client_secret_basic"
	AuthPost       = "client_secret_post"
	AuthNone       = "none"
	AuthPrivateKey = "private_key_jwt" // RFC 7523 client assertion signed with PrivateKey
)

// clientAssertionType is RFC 7523's client_assertion_type.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// refreshEarly is how long before its expiry an access token is
// replaced, so that a request never leaves with a token about to expire.
const refreshEarly = 30 * time.Second

// Config configures OAuth 2.1 for one streamable HTTP upstream.
type Config struct {
	Grant        string // ClientCredentials or RefreshToken
	ClientID     string
	ClientSecret string // required for client_credentials; empty: a public client
	// Scopes requested; empty: the scope of the upstream's 401 challenge,
	// else its protected-resource metadata's scopes_supported, else none.
	Scopes []string
	// TokenURL, if set, skips discovery (RFC 9728 protected-resource
	// metadata, then RFC 8414 / OpenID authorization-server metadata).
	TokenURL string
	// RefreshToken is the provisioned refresh token (RefreshToken).
	RefreshToken string
	// RefreshTokenFile, instead of RefreshToken, holds the refresh token;
	// it is read when the first token is needed, and a token the server
	// rotates is written back to it (mode 0600, atomically), so a restart
	// continues with the current one.
	RefreshTokenFile string
	// Resource is the RFC 8707 resource indicator sent with token requests;
	// empty: the protected-resource metadata's resource, else the URL.
	Resource string
	// AuthMethod is the token endpoint client authentication; empty: chosen
	// from the authorization server's metadata (basic when it says
	// nothing, none for a client without a secret, private_key_jwt with a
	// PrivateKey).
	AuthMethod string
	// PrivateKey (PEM: PKCS#8, EC or RSA) signs RFC 7523 client assertions
	// for private_key_jwt; SigningAlg is ES256/ES384/ES512/RS256/PS256…
	// (empty: ES256 for P-256, ES384 for P-384, ES512 for P-521, RS256 for
	// RSA).
	PrivateKey string
	SigningAlg string
}

// Secrets are the configured values to redact wherever the bridge logs or
// reports.
func (c *Config) Secrets() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, s := range []string{c.ClientSecret, c.RefreshToken, c.PrivateKey} {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	return out
}

// Validate reports the first problem with c, naming the field as written in
// a configuration file ("clientId: required").
func (c *Config) Validate() error {
	if ps := c.Problems(); len(ps) > 0 {
		return fmt.Errorf("%s: %w", ps[0].Field, ps[0].Err)
	}
	return nil
}

// Problem is one problem of a Config, in the field named as in a
// configuration file ("clientId", "scopes[1]").
type Problem struct {
	Field string
	Err   error
}

// problems collects a Config's problems.
type problems []Problem

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, Problem{Field: field, Err: fmt.Errorf(format, args...)})
}

// Problems reports every problem of c (the server it belongs to checks
// what concerns the server too: its transport, its headers).
func (c *Config) Problems() []Problem {
	var probs problems
	c.grantProblems(&probs)
	if c.ClientID == "" {
		probs.add("clientId", "required")
	}
	c.methodProblems(&probs)
	for i, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			probs.add(fmt.Sprintf("scopes[%d]", i), "%q is not a scope token", s)
		}
	}
	for _, f := range []struct{ name, v string }{{"tokenUrl", c.TokenURL}, {"resource", c.Resource}} {
		if f.v == "" {
			continue
		}
		u, err := url.Parse(f.v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			probs.add(f.name, "want an absolute http(s) URL, got %q", f.v)
			continue
		}
		if f.name == "tokenUrl" && u.Scheme == "http" && !loopback.Host(u.Hostname()) {
			probs.add(f.name, "want https (http only for localhost), got %q", f.v)
		}
	}
	return probs
}

// grantProblems checks the grant and what it needs.
func (c *Config) grantProblems(probs *problems) {
	switch c.Grant {
	case ClientCredentials:
		if c.ClientSecret == "" && c.PrivateKey == "" && c.AuthMethod != AuthNone && c.AuthMethod != AuthPrivateKey {
			probs.add("clientSecret", "required for the client_credentials grant (or privateKey for private_key_jwt)")
		}
		if c.RefreshToken != "" || c.RefreshTokenFile != "" {
			probs.add("refreshToken", "only for the refresh_token grant")
		}
	case RefreshToken:
		switch {
		case c.RefreshToken == "" && c.RefreshTokenFile == "":
			probs.add("refreshToken", "required for the refresh_token grant, or refreshTokenFile (obtain one once with `toolsvc oauth login`)")
		case c.RefreshToken != "" && c.RefreshTokenFile != "":
			probs.add("refreshTokenFile", "set either refreshToken or refreshTokenFile, not both")
		case c.RefreshTokenFile != "":
			if v, err := readSecretFile(c.RefreshTokenFile); err != nil {
				probs.add("refreshTokenFile", "cannot read it: %v", err)
			} else if v == "" {
				probs.add("refreshTokenFile", "%s is empty", c.RefreshTokenFile)
			}
		}
	default:
		probs.add("grant", "want %q or %q, got %q", ClientCredentials, RefreshToken, c.Grant)
	}
}

// methodProblems checks the token endpoint client authentication.
func (c *Config) methodProblems(probs *problems) {
	switch c.AuthMethod {
	case "", AuthBasic, AuthPost, AuthNone, AuthPrivateKey:
	default:
		probs.add("authMethod", "want %q, %q, %q or %q, got %q", AuthBasic, AuthPost, AuthPrivateKey, AuthNone, c.AuthMethod)
	}
	if c.method() != AuthPrivateKey {
		if c.PrivateKey != "" {
			probs.add("privateKey", "only for authMethod private_key_jwt")
		}
		return
	}
	switch {
	case c.PrivateKey == "":
		probs.add("privateKey", "required for private_key_jwt (a PEM key, e.g. \"${file:/path/key.pem}\")")
	case c.ClientSecret != "":
		probs.add("clientSecret", "not with private_key_jwt (the assertion authenticates the client)")
	default:
		if _, _, err := assertionSigner(c.PrivateKey, c.SigningAlg); err != nil {
			probs.add("privateKey", "%v", err)
		}
	}
}

// Handler is a headless go-sdk auth.OAuthHandler: it never asks
// anyone. It gets tokens by the configured grant, caches them and replaces
// them before they expire; on a 401/403 from the upstream it discovers the
// token endpoint if needed, fetches a fresh token, and lets the transport
// retry once.
type Handler struct {
	cfg       Config
	serverURL string
	client    *http.Client // discovery and token requests; never the upstream's headers
	log       *slog.Logger
	ctx       context.Context // the upstream's lifetime
	timeout   time.Duration   // per token or discovery exchange
	onSecret  func(string)    // learns issued tokens, for redaction
	now       func() time.Time

	mu        sync.Mutex
	tokenURL  string
	issuer    string // from discovery: the audience of client assertions
	authStyle oauth2.AuthStyle
	scopes    []string
	resource  string
	tok       *oauth2.Token
	refresh   string // the current refresh token (rotated by the server)
	failed    string // the last token request's failure, "" after a success
}

var _ auth.OAuthHandler = (*Handler)(nil)

// NewHandler returns the handler of one upstream at serverURL. ctx is the
// upstream's lifetime; timeout bounds each token or discovery exchange;
// onSecret, if set, learns every token issued (for redaction).
func NewHandler(ctx context.Context, cfg Config, serverURL string, log *slog.Logger, timeout time.Duration, onSecret func(string)) *Handler {
	return newHandler(ctx, cfg, serverURL, newClient(), log, timeout, onSecret)
}

func newHandler(ctx context.Context, cfg Config, serverURL string, client *http.Client, log *slog.Logger, timeout time.Duration, onSecret func(string)) *Handler {
	h := &Handler{cfg: cfg, serverURL: serverURL, client: client, log: log, ctx: ctx, timeout: timeout, onSecret: onSecret,
		tokenURL: cfg.TokenURL, scopes: cfg.Scopes, resource: cfg.Resource, refresh: cfg.RefreshToken, now: time.Now}
	h.authStyle = authStyleFor(cfg, nil)
	return h
}

// TokenSource implements auth.OAuthHandler: nil (send no token) until the
// token endpoint is known, from the configuration or from discovery.
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokenURL == "" {
		return nil, nil
	}
	return h, nil
}

// Token implements oauth2.TokenSource: the cached token, or a new one when
// it is missing or expires within refreshEarly.
func (h *Handler) Token() (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tok != nil && h.tok.AccessToken != "" && (h.tok.Expiry.IsZero() || h.tok.Expiry.Sub(h.now()) > refreshEarly) {
		return h.tok, nil
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.timeout)
	defer cancel()
	return h.fetchLocked(ctx)
}

// SetToken sets r's Authorization to the current token, as go-sdk's
// streamable client does with an auth.OAuthHandler (toolsvc's own
// streamable connection calls it for every request): nothing before the
// token endpoint is known; an invalid_grant (the refresh token was
// refused) sends the request without a token, so the upstream's 401 runs
// Authorize.
func (h *Handler) SetToken(ctx context.Context, r *http.Request) error {
	ts, err := h.TokenSource(ctx)
	if err != nil || ts == nil {
		return err
	}
	tok, err := ts.Token()
	if err != nil {
		var rerr *oauth2.RetrieveError
		if errors.As(err, &rerr) && rerr.ErrorCode == "invalid_grant" {
			return nil
		}
		return err
	}
	if tok != nil {
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	return nil
}

// Authorize implements auth.OAuthHandler: the upstream refused the request
// (401 or 403). The token it saw is dropped and a fresh one fetched (with
// discovery first if the token endpoint is not known yet); the transport
// then retries the request once. Requests refused together share one
// refresh: a request that carried an older token than the current one is
// simply retried with the current one.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokenURL == "" {
		if err := h.discoverLocked(ctx, challenges); err != nil {
			h.failed = err.Error()
			return err
		}
	}
	if h.tok != nil && req != nil && resp.StatusCode == http.StatusUnauthorized &&
		req.Header.Get("Authorization") != "Bearer "+h.tok.AccessToken {
		return nil // refreshed meanwhile by another refused request
	}
	if len(h.cfg.Scopes) == 0 {
		// Step-up (403 insufficient_scope) or a first challenge naming the
		// scopes: ask for the union of what we had and what it names.
		for _, s := range challengeScopes(challenges) {
			if !slices.Contains(h.scopes, s) {
				h.scopes = append(h.scopes, s)
			}
		}
	}
	h.tok = nil
	_, err := h.fetchLocked(ctx)
	return err
}

// discoverLocked finds the token endpoint: protected-resource metadata
// (RFC 9728) from the challenge's resource_metadata, else the well-known
// URLs beside the MCP endpoint; then the authorization server's metadata
// (RFC 8414, then OpenID Connect discovery); the 2025-03-26 fallback is the
// server's origin and /token.
func (h *Handler) discoverLocked(ctx context.Context, challenges []oauthex.Challenge) error {
	prm, err := h.resourceMetadata(ctx, challenges)
	if err != nil {
		return err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, h.client)
	if err != nil {
		return fmt.Errorf("oauth: authorization server metadata of %s: %w", issuer, err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: issuer, TokenEndpoint: strings.TrimRight(issuer, "/") + "/token"}
	}
	if asm.TokenEndpoint == "" {
		return fmt.Errorf("oauth: authorization server %s has no token_endpoint", issuer)
	}
	if h.cfg.Grant == ClientCredentials && len(asm.GrantTypesSupported) > 0 && !slices.Contains(asm.GrantTypesSupported, ClientCredentials) {
		return fmt.Errorf("oauth: authorization server %s does not offer the client_credentials grant (it offers %s)", issuer, strings.Join(asm.GrantTypesSupported, ", "))
	}
	h.tokenURL = asm.TokenEndpoint
	h.issuer = asm.Issuer
	h.authStyle = authStyleFor(h.cfg, asm.TokenEndpointAuthMethodsSupported)
	if h.resource == "" {
		h.resource = prm.Resource
	}
	if len(h.cfg.Scopes) == 0 && len(challengeScopes(challenges)) == 0 && len(h.scopes) == 0 {
		h.scopes = slices.Clone(prm.ScopesSupported)
	}
	h.log.Info("oauth: discovered the token endpoint", "token_endpoint", h.tokenURL, "issuer", asm.Issuer)
	return nil
}

func (h *Handler) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge) (*oauthex.ProtectedResourceMetadata, error) {
	type try struct{ url, resource string }
	var tries []try
	for _, c := range challenges {
		if u := c.Params["resource_metadata"]; u != "" {
			tries = append(tries, try{u, h.serverURL})
			break
		}
	}
	if su, err := url.Parse(h.serverURL); err == nil {
		mu := *su
		mu.RawQuery, mu.Fragment = "", ""
		mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(su.Path, "/")
		tries = append(tries, try{mu.String(), h.serverURL})
		mu.Path = "/.well-known/oauth-protected-resource"
		root := *su
		root.Path, root.RawQuery, root.Fragment = "", "", ""
		tries = append(tries, try{mu.String(), root.String()})
	}
	var errs []error
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.url, t.resource, h.client)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("oauth: protected resource metadata at %s names no authorization server", t.url)
		}
		return prm, nil
	}
	// 2025-03-26: no metadata; the server's origin is the authorization
	// server.
	su, err := url.Parse(h.serverURL)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	h.log.Debug("oauth: no protected resource metadata; trying the server's origin as the authorization server", "tried", errors.Join(errs...))
	return &oauthex.ProtectedResourceMetadata{Resource: h.serverURL, AuthorizationServers: []string{su.Scheme + "://" + su.Host}}, nil
}

// fetchLocked gets a new access token by the configured grant: the
// request's parameters (tokenParams), the exchange (exchange), then the
// new tokens kept (keepLocked).
func (h *Handler) fetchLocked(ctx context.Context) (*oauth2.Token, error) {
	if h.tokenURL == "" {
		return nil, errors.New("oauth: token endpoint not known yet")
	}
	extra, err := h.tokenParamsLocked()
	if err != nil {
		h.failed = err.Error()
		return nil, err
	}
	tok, err := h.exchange(ctx, extra)
	if err != nil {
		err = fmt.Errorf("oauth: %s token request to %s failed: %s", h.cfg.Grant, h.tokenURL, tokenErrorText(err))
		h.failed = err.Error()
		return nil, err
	}
	h.keepLocked(tok)
	return tok, nil
}

// tokenParamsLocked are the token request's parameters beyond what
// x/oauth2 sends: the RFC 8707 resource and a fresh RFC 7523 client
// assertion. It reads a refresh token kept in a file on first use.
func (h *Handler) tokenParamsLocked() (url.Values, error) {
	extra := url.Values{}
	if h.resource != "" {
		extra.Set("resource", h.resource)
	}
	if h.cfg.Grant == RefreshToken && h.refresh == "" {
		v, err := readSecretFile(h.cfg.RefreshTokenFile)
		if err != nil || v == "" {
			return nil, fmt.Errorf("oauth: refreshTokenFile: cannot read a token (%v)", err)
		}
		h.refresh = v
		if h.onSecret != nil {
			h.onSecret(h.refresh)
		}
	}
	if h.cfg.method() == AuthPrivateKey {
		a, err := h.clientAssertion()
		if err != nil {
			return nil, err
		}
		extra.Set("client_assertion_type", clientAssertionType)
		extra.Set("client_assertion", a)
	}
	return extra, nil
}

// exchange sends the token request by the configured grant.
func (h *Handler) exchange(ctx context.Context, extra url.Values) (*oauth2.Token, error) {
	// x/oauth2 has no hook for extra parameters on refresh requests: they go
	// in through the token request's transport. Every token request, with
	// extra parameters or not, refuses a redirect to another origin.
	client := &http.Client{Transport: orDefaultTransport(h.client.Transport), CheckRedirect: tokenRedirect}
	if len(extra) > 0 {
		client.Transport = &formParams{base: client.Transport, tokenURL: h.tokenURL, extra: extra}
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, client)
	switch h.cfg.Grant {
	case ClientCredentials:
		cc := &clientcredentials.Config{ClientID: h.cfg.ClientID, ClientSecret: h.cfg.ClientSecret, TokenURL: h.tokenURL,
			Scopes: h.scopes, AuthStyle: h.authStyle}
		return cc.Token(ctx)
	case RefreshToken:
		oc := &oauth2.Config{ClientID: h.cfg.ClientID, ClientSecret: h.cfg.ClientSecret, Scopes: h.scopes,
			Endpoint: oauth2.Endpoint{TokenURL: h.tokenURL, AuthStyle: h.authStyle}}
		return oc.TokenSource(ctx, &oauth2.Token{RefreshToken: h.refresh}).Token()
	}
	return nil, fmt.Errorf("grant %q", h.cfg.Grant)
}

// keepLocked keeps a new token, and a refresh token the server rotated
// (written back to refreshTokenFile when there is one).
func (h *Handler) keepLocked(tok *oauth2.Token) {
	h.failed = ""
	if h.onSecret != nil {
		h.onSecret(tok.AccessToken)
	}
	if tok.RefreshToken != "" && tok.RefreshToken != h.refresh {
		if h.onSecret != nil {
			h.onSecret(tok.RefreshToken)
		}
		h.refresh = tok.RefreshToken
		if h.cfg.RefreshTokenFile == "" {
			h.log.Info("oauth: the authorization server rotated the refresh token (kept in memory; refreshTokenFile would keep it across restarts)")
		} else if err := writeSecretFile(h.cfg.RefreshTokenFile, tok.RefreshToken); err != nil {
			h.log.Error("oauth: the authorization server rotated the refresh token, and writing it to refreshTokenFile failed: a restart will use the old one", "error", err)
		} else {
			h.log.Info("oauth: the authorization server rotated the refresh token (written to refreshTokenFile)")
		}
	}
	h.tok = tok
	h.log.Debug("oauth: new access token", "expires_in", time.Until(tok.Expiry).Round(time.Second))
}

// Failure is the last token request's failure, "" if it succeeded.
func (h *Handler) Failure() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed
}

// tokenErrorText is a token endpoint failure without the response body
// beyond the RFC 6749 §5.2 error code and description.
func tokenErrorText(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		s := fmt.Sprintf("HTTP %d", re.Response.StatusCode)
		if re.ErrorCode != "" {
			s += ": " + re.ErrorCode
		}
		if re.ErrorDescription != "" {
			s += " (" + re.ErrorDescription + ")"
		}
		return s
	}
	return err.Error()
}

// method is the configured token endpoint authentication, or what the
// configuration implies: private_key_jwt with a key, none without a
// secret; "" leaves it to the server's metadata.
func (c *Config) method() string {
	switch {
	case c.AuthMethod != "":
		return c.AuthMethod
	case c.PrivateKey != "":
		return AuthPrivateKey
	case c.ClientSecret == "":
		return AuthNone
	}
	return ""
}

// authStyleFor picks the token endpoint authentication: the configured (or
// implied) one, else what the server supports (basic preferred: RFC 8414's
// default and the one every server accepts). private_key_jwt and none send
// client_id in the form.
func authStyleFor(cfg Config, supported []string) oauth2.AuthStyle {
	method := cfg.method()
	if method == "" {
		switch {
		case len(supported) == 0 || slices.Contains(supported, AuthBasic):
			method = AuthBasic
		case slices.Contains(supported, AuthPost):
			method = AuthPost
		default:
			method = AuthBasic
		}
	}
	if method == AuthBasic {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams // post, and none (client_id in the body)
}

func challengeScopes(cs []oauthex.Challenge) []string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

// formParams adds parameters (the RFC 8707 resource, an RFC 7523 client
// assertion) to token requests that do not carry them already.
type formParams struct {
	base     http.RoundTripper
	tokenURL string
	extra    url.Values
}

func (t *formParams) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.URL.String() != t.tokenURL || r.Body == nil {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range t.extra {
		if form.Get(k) == "" {
			form[k] = vs
		}
	}
	enc := form.Encode()
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(strings.NewReader(enc))
	r.ContentLength = int64(len(enc))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(enc)), nil }
	return t.base.RoundTrip(r)
}

func orDefaultTransport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport
	}
	return rt
}

// newClient is the client of an upstream's discovery and token
// requests. It has no CheckRedirect: go-sdk's discovery (oauthex) then
// applies its own redirect policy (no HTTPS to HTTP downgrade, no redirect
// into loopback or private addresses), which it skips for a client that
// brings its own. Token requests add tokenRedirect (fetchLocked).
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 90 * time.Second}}
}

// tokenRedirect is the CheckRedirect of token requests: it keeps their
// body (client secret, refresh token, client assertion) at the origin it
// was sent to. A 307/308 resends a POST's body, and net/http drops only
// the Authorization header, and only for another host name.
func tokenRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= origin.MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", origin.MaxRedirects)
	}
	if origin.Of(req.URL) != origin.Of(via[0].URL) {
		return fmt.Errorf("oauth: HTTP %d redirect of a token request to another origin (%s) refused", req.Response.StatusCode, origin.Of(req.URL))
	}
	return nil
}

// clientAssertion is a fresh RFC 7523 client assertion: iss and sub the
// client id, aud the authorization server's issuer (the token endpoint if
// it was configured rather than discovered), a minute's validity, a unique
// jti.
func (h *Handler) clientAssertion() (string, error) {
	method, key, err := assertionSigner(h.cfg.PrivateKey, h.cfg.SigningAlg)
	if err != nil {
		return "", fmt.Errorf("oauth: privateKey: %w", err)
	}
	aud := h.issuer
	if aud == "" {
		aud = h.tokenURL
	}
	var jti [16]byte
	_, _ = rand.Read(jti[:])
	now := time.Now()
	claims := jwt.RegisteredClaims{Issuer: h.cfg.ClientID, Subject: h.cfg.ClientID, Audience: jwt.ClaimStrings{aud},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)), ID: hex.EncodeToString(jti[:])}
	return jwt.NewWithClaims(method, claims).SignedString(key)
}

// assertionSigner parses a PEM private key (PKCS#8, SEC 1 EC or PKCS#1
// RSA) and picks the signing method: alg if given (it must suit the key),
// else ES256/ES384/ES512 by curve or RS256.
func assertionSigner(pemKey, alg string) (jwt.SigningMethod, any, error) {
	block, _ := pem.Decode([]byte(pemKey))
	if block == nil {
		return nil, nil, errors.New("not a PEM private key")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("PEM block %q: %v", block.Type, err)
	}
	def := ""
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		def = map[string]string{"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}[k.Curve.Params().Name]
	case *rsa.PrivateKey:
		def = "RS256"
	default:
		return nil, nil, fmt.Errorf("a %T key: want EC or RSA", key)
	}
	if alg == "" {
		alg = def
	}
	m := jwt.GetSigningMethod(alg)
	ok := false
	switch m.(type) {
	case *jwt.SigningMethodECDSA:
		_, isEC := key.(*ecdsa.PrivateKey)
		ok = isEC && alg == def
	case *jwt.SigningMethodRSA, *jwt.SigningMethodRSAPSS:
		_, ok = key.(*rsa.PrivateKey)
	}
	if !ok {
		return nil, nil, fmt.Errorf("signingAlg %q does not suit the key (want e.g. %s)", alg, def)
	}
	return m, key, nil
}

// readSecretFile reads a secret kept in a file: at most 64 KiB, surrounding
// white space trimmed.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", unwrapPath(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", unwrapPath(err)
	}
	return strings.TrimSpace(string(b)), nil
}

// writeSecretFile replaces path's content with v+"\n" atomically (a
// temporary file in the same directory, mode 0600, renamed over it).
func writeSecretFile(path, v string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".toolsvc-refresh-*")
	if err != nil {
		return unwrapPath(err)
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(v + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return unwrapPath(os.Rename(f.Name(), path))
}

// unwrapPath drops an *os.PathError's operation and path (the caller names
// the file) and keeps the cause.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
