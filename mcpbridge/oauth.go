package mcpbridge

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
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// OAuth grants (OAuthConfig.Grant).
const (
	// OAuthClientCredentials is RFC 6749 §4.4 (and the MCP
	// client-credentials extension): toolsvc is a confidential client
	// acting for itself.
	OAuthClientCredentials = "client_credentials"
	// OAuthRefreshToken is the authorization code grant with a refresh
	// token an operator obtained once, interactively (with PKCE), and
	// provisioned: toolsvc only ever refreshes it.
	OAuthRefreshToken = "refresh_token"
)

// Token endpoint client authentication methods (OAuthConfig.AuthMethod).
const (
	OAuthAuthBasic      = "client_secret_basic"
	OAuthAuthPost       = "client_secret_post"
	OAuthAuthNone       = "none"
	OAuthAuthPrivateKey = "private_key_jwt" // RFC 7523 client assertion signed with PrivateKey
)

// clientAssertionType is RFC 7523's client_assertion_type.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// DefaultAuthRetry is how long an upstream that rejected toolsvc's
// credentials (HTTP 401/403, or a failed token request) waits before the
// next connection attempt: credentials do not fix themselves in a second,
// so it is not retried like a crashed server. An operator reconnect
// (AdminService.ReconnectServer) or a reload retries at once.
const DefaultAuthRetry = 5 * time.Minute

// oauthRefreshEarly is how long before its expiry an access token is
// replaced, so that a request never leaves with a token about to expire.
const oauthRefreshEarly = 30 * time.Second

// OAuthConfig configures OAuth 2.1 for one streamable HTTP upstream.
type OAuthConfig struct {
	Grant        string // OAuthClientCredentials or OAuthRefreshToken
	ClientID     string
	ClientSecret string // required for client_credentials; empty: a public client
	// Scopes requested; empty: the scope of the upstream's 401 challenge,
	// else its protected-resource metadata's scopes_supported, else none.
	Scopes []string
	// TokenURL, if set, skips discovery (RFC 9728 protected-resource
	// metadata, then RFC 8414 / OpenID authorization-server metadata).
	TokenURL string
	// RefreshToken is the provisioned refresh token (OAuthRefreshToken).
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

// secrets are the values to redact.
func (c *OAuthConfig) secrets() []string {
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
func (c *OAuthConfig) Validate() error {
	if ps := c.problems(nil); len(ps) > 0 {
		f, _ := strings.CutPrefix(ps[0].Field, "oauth.")
		return fmt.Errorf("%s: %w", f, ps[0].Err)
	}
	return nil
}

// problems lists every problem with c as fields of the server sc (nil: no
// server context), "oauth.clientId" and so on.
func (c *OAuthConfig) problems(sc *ServerConfig) []*FieldError {
	var probs []*FieldError
	add := func(field, format string, args ...any) {
		fe := &FieldError{Field: "oauth." + field, Err: fmt.Errorf(format, args...)}
		if field == "" {
			fe.Field = "oauth"
		}
		if sc != nil {
			fe.Server = sc.Name
		}
		probs = append(probs, fe)
	}
	if sc != nil {
		if sc.Transport != TransportStreamableHTTP && sc.NewTransport == nil {
			add("", "only for streamable HTTP servers (not stdio, and not \"type\": \"sse\": go-sdk's SSE client has no OAuth hook)")
		}
		for h := range sc.Headers {
			if strings.EqualFold(h, "Authorization") {
				add("", "set either oauth or an Authorization header, not both")
			}
		}
	}
	method := c.method()
	switch c.Grant {
	case OAuthClientCredentials:
		if c.ClientSecret == "" && c.PrivateKey == "" && c.AuthMethod != OAuthAuthNone && c.AuthMethod != OAuthAuthPrivateKey {
			add("clientSecret", "required for the client_credentials grant (or privateKey for private_key_jwt)")
		}
		if c.RefreshToken != "" || c.RefreshTokenFile != "" {
			add("refreshToken", "only for the refresh_token grant")
		}
	case OAuthRefreshToken:
		switch {
		case c.RefreshToken == "" && c.RefreshTokenFile == "":
			add("refreshToken", "required for the refresh_token grant, or refreshTokenFile (obtain one once with `toolsvc oauth login`)")
		case c.RefreshToken != "" && c.RefreshTokenFile != "":
			add("refreshTokenFile", "set either refreshToken or refreshTokenFile, not both")
		case c.RefreshTokenFile != "":
			if v, err := readSecretFile(c.RefreshTokenFile); err != nil {
				add("refreshTokenFile", "cannot read it: %v", err)
			} else if v == "" {
				add("refreshTokenFile", "%s is empty", c.RefreshTokenFile)
			}
		}
	default:
		add("grant", "want %q or %q, got %q", OAuthClientCredentials, OAuthRefreshToken, c.Grant)
	}
	if c.ClientID == "" {
		add("clientId", "required")
	}
	switch c.AuthMethod {
	case "", OAuthAuthBasic, OAuthAuthPost, OAuthAuthNone, OAuthAuthPrivateKey:
	default:
		add("authMethod", "want %q, %q, %q or %q, got %q", OAuthAuthBasic, OAuthAuthPost, OAuthAuthPrivateKey, OAuthAuthNone, c.AuthMethod)
	}
	if method == OAuthAuthPrivateKey {
		switch {
		case c.PrivateKey == "":
			add("privateKey", "required for private_key_jwt (a PEM key, e.g. \"${file:/path/key.pem}\")")
		case c.ClientSecret != "":
			add("clientSecret", "not with private_key_jwt (the assertion authenticates the client)")
		default:
			if _, _, err := assertionSigner(c.PrivateKey, c.SigningAlg); err != nil {
				add("privateKey", "%v", err)
			}
		}
	} else if c.PrivateKey != "" {
		add("privateKey", "only for authMethod private_key_jwt")
	}
	for i, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			add(fmt.Sprintf("scopes[%d]", i), "%q is not a scope token", s)
		}
	}
	for _, f := range []struct{ name, v string }{{"tokenUrl", c.TokenURL}, {"resource", c.Resource}} {
		if f.v == "" {
			continue
		}
		u, err := url.Parse(f.v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			add(f.name, "want an absolute http(s) URL, got %q", f.v)
			continue
		}
		if f.name == "tokenUrl" && u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
			add(f.name, "want https (http only for localhost), got %q", f.v)
		}
	}
	return probs
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	u, err := url.Parse("http://" + h)
	if err != nil {
		return false
	}
	ip := strings.Trim(u.Hostname(), "[]")
	return strings.HasPrefix(ip, "127.") || ip == "::1"
}

// authWatch records whether the upstream's latest HTTP answer refused
// toolsvc's credentials (401 or 403), so that the supervisor can tell an
// authentication problem from a crash by the real status code rather than
// by an error's text.
type authWatch struct {
	base   http.RoundTripper
	status atomic.Int32 // 401 or 403 from the latest answer, else 0
}

func (w *authWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(r)
	if err == nil {
		switch {
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			w.status.Store(int32(resp.StatusCode))
		case resp.StatusCode < 300:
			w.status.Store(0)
		}
	}
	return resp, err
}

// oauthHandler is a headless go-sdk auth.OAuthHandler: it never asks
// anyone. It gets tokens by the configured grant, caches them and replaces
// them before they expire; on a 401/403 from the upstream it discovers the
// token endpoint if needed, fetches a fresh token, and lets the transport
// retry once.
type oauthHandler struct {
	cfg       OAuthConfig
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

var _ auth.OAuthHandler = (*oauthHandler)(nil)

func newOAuthHandler(ctx context.Context, cfg OAuthConfig, serverURL string, client *http.Client, log *slog.Logger, timeout time.Duration, onSecret func(string)) *oauthHandler {
	h := &oauthHandler{cfg: cfg, serverURL: serverURL, client: client, log: log, ctx: ctx, timeout: timeout, onSecret: onSecret,
		tokenURL: cfg.TokenURL, scopes: cfg.Scopes, resource: cfg.Resource, refresh: cfg.RefreshToken, now: time.Now}
	h.authStyle = authStyleFor(cfg, nil)
	return h
}

// TokenSource implements auth.OAuthHandler: nil (send no token) until the
// token endpoint is known, from the configuration or from discovery.
func (h *oauthHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokenURL == "" {
		return nil, nil
	}
	return h, nil
}

// Token implements oauth2.TokenSource: the cached token, or a new one when
// it is missing or expires within oauthRefreshEarly.
func (h *oauthHandler) Token() (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tok != nil && h.tok.AccessToken != "" && (h.tok.Expiry.IsZero() || h.tok.Expiry.Sub(h.now()) > oauthRefreshEarly) {
		return h.tok, nil
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.timeout)
	defer cancel()
	return h.fetchLocked(ctx)
}

// Authorize implements auth.OAuthHandler: the upstream refused the request
// (401 or 403). The token it saw is dropped and a fresh one fetched (with
// discovery first if the token endpoint is not known yet); the transport
// then retries the request once. Requests refused together share one
// refresh: a request that carried an older token than the current one is
// simply retried with the current one.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
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
func (h *oauthHandler) discoverLocked(ctx context.Context, challenges []oauthex.Challenge) error {
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
	if h.cfg.Grant == OAuthClientCredentials && len(asm.GrantTypesSupported) > 0 && !slices.Contains(asm.GrantTypesSupported, OAuthClientCredentials) {
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

func (h *oauthHandler) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge) (*oauthex.ProtectedResourceMetadata, error) {
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

// fetchLocked gets a new access token by the configured grant.
func (h *oauthHandler) fetchLocked(ctx context.Context) (*oauth2.Token, error) {
	if h.tokenURL == "" {
		return nil, errors.New("oauth: token endpoint not known yet")
	}
	// x/oauth2 has no hook for extra parameters on refresh requests: the
	// resource indicator and a fresh client assertion go in through the
	// token request's transport.
	extra := url.Values{}
	if h.resource != "" {
		extra.Set("resource", h.resource)
	}
	if h.cfg.Grant == OAuthRefreshToken && h.refresh == "" {
		v, err := readSecretFile(h.cfg.RefreshTokenFile)
		if err != nil || v == "" {
			err = fmt.Errorf("oauth: refreshTokenFile: cannot read a token (%v)", err)
			h.failed = err.Error()
			return nil, err
		}
		h.refresh = v
		if h.onSecret != nil {
			h.onSecret(h.refresh)
		}
	}
	if h.cfg.method() == OAuthAuthPrivateKey {
		a, err := h.clientAssertion()
		if err != nil {
			h.failed = err.Error()
			return nil, err
		}
		extra.Set("client_assertion_type", clientAssertionType)
		extra.Set("client_assertion", a)
	}
	// Every token request, with extra parameters or not, refuses a
	// redirect to another origin.
	client := &http.Client{Transport: orDefaultTransport(h.client.Transport), CheckRedirect: tokenRedirect}
	if len(extra) > 0 {
		client.Transport = &formParams{base: client.Transport, tokenURL: h.tokenURL, extra: extra}
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, client)
	var tok *oauth2.Token
	var err error
	switch h.cfg.Grant {
	case OAuthClientCredentials:
		cc := &clientcredentials.Config{ClientID: h.cfg.ClientID, ClientSecret: h.cfg.ClientSecret, TokenURL: h.tokenURL,
			Scopes: h.scopes, AuthStyle: h.authStyle}
		tok, err = cc.Token(ctx)
	case OAuthRefreshToken:
		oc := &oauth2.Config{ClientID: h.cfg.ClientID, ClientSecret: h.cfg.ClientSecret, Scopes: h.scopes,
			Endpoint: oauth2.Endpoint{TokenURL: h.tokenURL, AuthStyle: h.authStyle}}
		tok, err = oc.TokenSource(ctx, &oauth2.Token{RefreshToken: h.refresh}).Token()
	default:
		err = fmt.Errorf("grant %q", h.cfg.Grant)
	}
	if err != nil {
		err = fmt.Errorf("oauth: %s token request to %s failed: %s", h.cfg.Grant, h.tokenURL, tokenErrorText(err))
		h.failed = err.Error()
		return nil, err
	}
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
	return tok, nil
}

// tokenFailure is the last token request's failure, "" if it succeeded.
func (h *oauthHandler) tokenFailure() string {
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
func (c *OAuthConfig) method() string {
	switch {
	case c.AuthMethod != "":
		return c.AuthMethod
	case c.PrivateKey != "":
		return OAuthAuthPrivateKey
	case c.ClientSecret == "":
		return OAuthAuthNone
	}
	return ""
}

// authStyleFor picks the token endpoint authentication: the configured (or
// implied) one, else what the server supports (basic preferred: RFC 8414's
// default and the one every server accepts). private_key_jwt and none send
// client_id in the form.
func authStyleFor(cfg OAuthConfig, supported []string) oauth2.AuthStyle {
	method := cfg.method()
	if method == "" {
		switch {
		case len(supported) == 0 || slices.Contains(supported, OAuthAuthBasic):
			method = OAuthAuthBasic
		case slices.Contains(supported, OAuthAuthPost):
			method = OAuthAuthPost
		default:
			method = OAuthAuthBasic
		}
	}
	if method == OAuthAuthBasic {
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

// secretSet holds secret values learnt at run time (issued access and
// refresh tokens) for redaction; it keeps the latest few.
type secretSet struct {
	mu   sync.Mutex
	vals []string
}

const maxRuntimeSecrets = 8

func (s *secretSet) add(v string) {
	if len(v) < 4 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.vals, v) {
		return
	}
	s.vals = append(s.vals, v)
	if len(s.vals) > maxRuntimeSecrets {
		s.vals = slices.Delete(s.vals, 0, len(s.vals)-maxRuntimeSecrets)
	}
}

func (s *secretSet) redact(msg string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.vals {
		msg = strings.ReplaceAll(msg, v, "<redacted>")
	}
	return msg
}

// AuthObserver is optionally implemented by an Observer: it hears of every
// connection attempt or session that ended in an authentication failure.
type AuthObserver interface {
	UpstreamAuthFailed(server string)
}

// initAuth wraps the upstream's HTTP client so that 401/403 answers are
// seen, and builds its OAuth handler when one is configured. Token and
// discovery requests use a client of their own: the upstream's static
// headers are never sent to an authorization server.
func (u *upstream) initAuth() {
	u.authw = &authWatch{base: u.http.Transport}
	u.http = &http.Client{Transport: u.authw}
	if u.cfg.OAuth == nil {
		return
	}
	for _, s := range u.cfg.OAuth.secrets() {
		u.runtimeSecrets.add(s)
	}
	u.oauth = newOAuthHandler(u.ctx, *u.cfg.OAuth, u.cfg.URL, newOAuthClient(), u.log, u.cfg.ConnectTimeout, u.runtimeSecrets.add)
}

// newOAuthClient is the client of an upstream's discovery and token
// requests. It has no CheckRedirect: go-sdk's discovery (oauthex) then
// applies its own redirect policy (no HTTPS to HTTP downgrade, no redirect
// into loopback or private addresses), which it skips for a client that
// brings its own. Token requests add tokenRedirect (fetchLocked).
func newOAuthClient() *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 90 * time.Second}}
}

// tokenRedirect is the CheckRedirect of token requests: it keeps their
// body (client secret, refresh token, client assertion) at the origin it
// was sent to. A 307/308 resends a POST's body, and net/http drops only
// the Authorization header, and only for another host name.
func tokenRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if originOf(req.URL) != originOf(via[0].URL) {
		return fmt.Errorf("oauth: HTTP %d redirect of a token request to another origin (%s) refused", req.Response.StatusCode, originOf(req.URL))
	}
	return nil
}

// oauthHandler is the transport's OAuth hook (a nil interface without
// OAuth).
func (u *upstream) oauthHandler() auth.OAuthHandler {
	if u.oauth == nil {
		return nil
	}
	return u.oauth
}

// authRejected says why a failed attempt or lost session (err) is an
// authentication problem: the upstream's last HTTP answer was 401/403, or
// the last token request failed. "" when it is not.
func (u *upstream) authRejected(err error) string {
	if err == nil {
		return ""
	}
	why := ""
	if u.authw != nil {
		if code := u.authw.status.Load(); code != 0 {
			why = fmt.Sprintf("the upstream answered HTTP %d %s", code, http.StatusText(int(code)))
		}
	}
	if u.oauth != nil {
		if f := u.oauth.tokenFailure(); f != "" {
			why = u.redact(f)
		}
	}
	return why
}

// authHold classifies a failed attempt or lost session: if the upstream's
// last answer was 401/403, or a token request failed, it is an
// authentication problem. The message then says so, the failure is
// counted, and the next attempt waits at least AuthRetry instead of the
// crash backoff.
func (u *upstream) authHold(err error, delay time.Duration, msg string) (time.Duration, string) {
	why := u.authRejected(err)
	if why == "" {
		return delay, msg
	}
	if o, ok := u.b.cfg.Observer.(AuthObserver); ok {
		o.UpstreamAuthFailed(u.cfg.Name)
	}
	hint := "configure headers or oauth for this server"
	if u.oauth != nil {
		hint = "check the server's oauth settings"
	}
	if strings.Contains(msg, why) {
		why = "see below" // the token request's failure is in msg already
	}
	msg = fmt.Sprintf("authentication failed (%s; %s; next attempt in %s or on ReconnectServer): %s", why, hint, u.cfg.AuthRetry, msg)
	return max(delay, u.cfg.AuthRetry), msg
}

// clientAssertion is a fresh RFC 7523 client assertion: iss and sub the
// client id, aud the authorization server's issuer (the token endpoint if
// it was configured rather than discovered), a minute's validity, a unique
// jti.
func (h *oauthHandler) clientAssertion() (string, error) {
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
