package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"golang.org/x/time/rate"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/console"
	"github.com/toolsvc/toolsvc/service/core"
)

// authLoader turns the config's auth section into the service's auth
// configuration, at start and on every reload. Every part is rebuilt from
// the section (tokens, tokensFile, jwt, mtls, rules, admins, rateLimits,
// audit); the one thing kept across loads is a JWKS URL's key set, while
// the URL is unchanged, so that a reload neither refetches it nor starts a
// second refresh goroutine.
type authLoader struct {
	ctx  context.Context // the process's: a JWKS URL is refreshed for as long as it lives
	mtls bool            // --tls-client-ca was given
	log  *slog.Logger

	started    bool            // a load was applied: later ones are reloads
	jwksURL    string          // the URL of jwksKF ("" : none)
	jwksKF     keyfunc.Keyfunc // its key set, refreshed in the background
	jwksCancel context.CancelFunc

	calls *console.Calls // the console's ring of audit lines (nil: none)
}

// load builds the configuration of a. The caller applies it, then calls
// done(true); or, when it is not applied, done(false). Only then is a
// replaced JWKS refresh stopped (or the new, unused one).
func (l *authLoader) load(a *config.Auth) (core.AuthConfig, func(applied bool), error) {
	noop := func(bool) {}
	tokens, err := loadTokens(a)
	if err != nil {
		return core.AuthConfig{}, noop, err
	}
	if a.MTLS && !l.mtls {
		return core.AuthConfig{}, noop, fmt.Errorf("auth.mtls needs --tls-client-ca")
	}
	jwtOpts, jwtDone, err := l.loadJWT(a)
	if err != nil {
		return core.AuthConfig{}, noop, err
	}
	done := func(applied bool) {
		jwtDone(applied)
		l.started = l.started || applied
	}
	var rules []core.Rule
	for _, r := range a.Rules {
		rules = append(rules, core.Rule{Principal: r.Principal, Allow: r.Allow, Deny: r.Deny})
	}
	c := core.AuthConfig{
		Authenticator: core.NewAuthenticator(tokens, jwtOpts, a.MTLS),
		Authorizer:    core.NewAuthorizer(rules, a.Admins),
		AuditLog:      l.auditLog(),
	}
	if au := a.Audit; au != nil {
		if au.Enabled != nil && !*au.Enabled {
			c.AuditLog = nil
		}
		c.AuditArguments = au.Arguments
	}
	for _, r := range a.RateLimits {
		c.RateLimits = append(c.RateLimits, core.RateLimit{Principal: r.Principal, CallsPerSecond: r.CallsPerSecond,
			Burst: r.Burst, MaxConcurrent: r.MaxConcurrent})
	}
	return c, done, nil
}

// auditLog is the audit log: the process's log, and the console's Calls
// page's ring when there is one.
func (l *authLoader) auditLog() *slog.Logger {
	lg := l.log.With("audit", true)
	if l.calls == nil {
		return lg
	}
	return slog.New(l.calls.Tee(lg.Handler()))
}

// loadTokens is auth.tokens plus the lines of auth.tokensFile, as token →
// principal.
func loadTokens(a *config.Auth) (map[string]string, error) {
	tokens := map[string]string{}
	for name, tok := range a.Tokens {
		tokens[tok] = name
	}
	if a.TokensFile == "" {
		return tokens, nil
	}
	data, err := config.ReadFile(a.TokensFile)
	if err != nil {
		return nil, fmt.Errorf("tokensFile: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, tok, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" || len(strings.TrimSpace(tok)) < 16 {
			return nil, fmt.Errorf("tokensFile %s:%d: want \"principal:token\" with a token of at least 16 characters", a.TokensFile, n)
		}
		tokens[strings.TrimSpace(tok)] = strings.TrimSpace(name)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokensFile: %w", err)
	}
	return tokens, nil
}

// loadJWT is auth.jwt's options: a jwksFile read again, a jwksURL's key
// set reused while the URL is unchanged, else fetched (a failed fetch is
// an error: at start toolsvc does not start, on reload the reload is
// refused).
func (l *authLoader) loadJWT(a *config.Auth) (*core.JWTOptions, func(bool), error) {
	url := ""
	if a.JWT != nil && a.JWT.JWKSFile == "" {
		url = a.JWT.JWKSURL
	}
	// done stops whichever URL key set is not in use after the load.
	prevCancel := l.jwksCancel
	done := func(bool) {}
	if url != l.jwksURL && l.jwksURL != "" {
		done = func(applied bool) {
			if applied {
				prevCancel()
				l.jwksURL, l.jwksKF, l.jwksCancel = "", nil, nil
			}
		}
	}
	j := a.JWT
	if j == nil {
		return nil, done, nil
	}
	if j.JWKSFile != "" {
		raw, err := config.ReadFile(j.JWKSFile)
		if err != nil {
			return nil, nil, fmt.Errorf("jwt.jwksFile: %w", err)
		}
		kf, err := keyfunc.NewJWKSetJSON(json.RawMessage(raw))
		if err != nil {
			return nil, nil, fmt.Errorf("jwt.jwksFile: %w", err)
		}
		return &core.JWTOptions{Keyfunc: kf, Issuer: j.Issuer, Audience: j.Audience}, done, nil
	}
	if url == l.jwksURL {
		return &core.JWTOptions{Keyfunc: l.jwksKF, Issuer: j.Issuer, Audience: j.Audience}, done, nil
	}
	// cancel stops the key set's refresh goroutine (jwkset's storage.go:
	// it returns on ctx.Done, and its HTTP refresh is made with a context
	// of ctx). jwkset gives no way to wait for it, so it is not awaited;
	// l.ctx, the process's, ends any left at exit.
	ctx, cancel := context.WithCancel(l.ctx)
	kf, err := l.fetchJWKS(ctx, url)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("jwt.jwksURL: fetching the key set: %w", err)
	}
	done = func(applied bool) {
		if !applied {
			cancel()
			return
		}
		if prevCancel != nil {
			prevCancel()
		}
		l.jwksURL, l.jwksKF, l.jwksCancel = url, kf, cancel
	}
	return &core.JWTOptions{Keyfunc: kf, Issuer: j.Issuer, Audience: j.Audience}, done, nil
}

// fetchJWKS returns the key set at url, refreshed hourly while ctx lives
// (keyfunc.NewDefaultCtx's settings). At start a failed first fetch is
// logged and retried by the refresh (toolsvc starts while the identity
// provider is down, refusing JWTs until it answers); on a reload it is an
// error, so that a mistyped URL refuses the reload instead of replacing
// working keys with none.
//
// Each request has jwksTimeout and its body is read through a 16 MiB limit
// (config.MaxConfigFileSize, as for jwksFile); logs and errors show the URL
// without user info, query or fragment, where a credential could sit.
func (l *authLoader) fetchJWKS(ctx context.Context, jwksURL string) (keyfunc.Keyfunc, error) {
	safe := safeURL(jwksURL)
	// The URL as written, then the parts that can carry a credential
	// (password, query, fragment) wherever an error quotes them: net/http
	// quotes the URL with the password starred but the query whole.
	forms := []string{jwksURL}
	if u, err := url.Parse(jwksURL); err == nil {
		pw, _ := u.User.Password()
		forms = append(forms, pw, u.RawQuery, u.Fragment)
	}
	hide := func(err error) error {
		if err == nil {
			return nil
		}
		msg := strings.ReplaceAll(err.Error(), jwksURL, safe)
		for _, f := range forms[1:] {
			if len(f) >= 3 {
				msg = strings.ReplaceAll(msg, f, "<redacted>")
			}
		}
		return errors.New(msg)
	}
	st, err := jwkset.NewStorageFromHTTP(jwksURL, jwkset.HTTPClientStorageOptions{
		Ctx:                       ctx,
		Client:                    &http.Client{Transport: limitedBodies{http.DefaultTransport, config.MaxConfigFileSize}},
		HTTPTimeout:               jwksTimeout,
		NoErrorReturnFirstHTTPReq: !l.started,
		RefreshErrorHandler: func(ctx context.Context, err error) {
			l.log.ErrorContext(ctx, "JWKS refresh failed", "url", safe, "error", hide(err))
		},
		RefreshInterval: time.Hour,
	})
	if err != nil {
		return nil, hide(err)
	}
	client, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{jwksURL: st},
		RateLimitWaitMax:  time.Minute,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(5*time.Minute), 1),
	})
	if err != nil {
		return nil, hide(err)
	}
	kf, err := keyfunc.New(keyfunc.Options{Storage: client})
	return kf, hide(err)
}

// jwksTimeout bounds one JWKS request (jwkset's default is a minute, and a
// reload waits for the first fetch).
const jwksTimeout = 10 * time.Second

// safeURL is u without user info, query and fragment, for logs and errors.
func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(an unparsable URL)"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

// limitedBodies is a RoundTripper whose response bodies fail past max
// bytes.
type limitedBodies struct {
	base http.RoundTripper
	max  int64
}

func (t limitedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max}
	}
	return resp, err
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the response is larger than %d MiB", config.MaxConfigFileSize>>20)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
