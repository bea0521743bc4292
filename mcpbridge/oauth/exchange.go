package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/zitadel/oidc/v3/pkg/client/tokenexchange"
	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// ExchangeConfig configures an Exchanger: the upstream's credentials
// object in mode tokenExchange (docs/credentials.md).
type ExchangeConfig struct {
	// Issuer's metadata gives the token endpoint, unless TokenURL is set.
	Issuer   string
	TokenURL string
	// ClientID and ClientSecret authenticate toolsvc (client_secret_basic).
	ClientID     string
	ClientSecret string
	// Audience and Resource (RFC 8707) name the upstream in the request.
	Audience string
	Resource string
	Scopes   []string
	// SubjectTokenType is how the caller's token is presented (default
	// urn:ietf:params:oauth:token-type:access_token).
	SubjectTokenType string
	// ExpiryGuard: a cached token is replaced this long before it expires
	// (default 30 s).
	ExpiryGuard time.Duration
	// MaxEntries bounds the cached principals (default 10,000); past it,
	// expired entries go first, then the one expiring soonest.
	MaxEntries int
	// Timeout bounds one exchange (default 10 s).
	Timeout time.Duration
	// Observe, if set, hears each exchange made at the authorization
	// server (not the cached answers): op "exchange", outcome "ok",
	// "refused" (the server said no) or "error". It must not block.
	Observe func(op, outcome string)
}

// Exchanger is the RFC 8693 client of one upstream in mode tokenExchange:
// it exchanges a caller's token (the subject token) at the authorization
// server for a token whose audience is the upstream, caches it per
// principal until ExpiryGuard before it expires, and runs at most one
// exchange per principal at a time (concurrent callers share its result).
// The protocol is zitadel/oidc's client (pkg/client/tokenexchange).
type Exchanger struct {
	cfg      ExchangeConfig
	exchange func(ctx context.Context, subjectToken string) (access string, lifetime time.Duration, err error)

	ctx    context.Context // ends with Close; flights run on it
	cancel context.CancelFunc
	wg     sync.WaitGroup // flights

	mu      sync.Mutex
	cache   map[string]exchanged // by principal
	flights map[string]*flight   // by principal
	closed  bool

	teMu sync.Mutex
	te   tokenexchange.TokenExchanger // built on first use (discovery)
	hc   *http.Client
}

type exchanged struct {
	access  string
	expires time.Time
}

// NewExchanger returns an Exchanger for cfg; Close releases it. It does
// not contact the authorization server; discovery happens on the first
// exchange (and is retried by the next one if it fails).
func NewExchanger(cfg ExchangeConfig) *Exchanger {
	if cfg.SubjectTokenType == "" {
		cfg.SubjectTokenType = string(oidc.AccessTokenType)
	}
	if cfg.ExpiryGuard <= 0 {
		cfg.ExpiryGuard = 30 * time.Second
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 10_000
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	x := &Exchanger{cfg: cfg, cache: map[string]exchanged{}, flights: map[string]*flight{}}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	x.hc = newClient()
	x.hc.CheckRedirect = tokenRedirect
	x.exchange = x.exchangeAtServer
	return x
}

// ExchangeError is an exchange the authorization server answered with an
// OAuth error (RFC 6749 §5.2). It never contains a token.
type ExchangeError struct {
	Code        string // "access_denied", "invalid_grant", …
	Description string // the server's, clipped
}

func (e *ExchangeError) Error() string {
	if e.Description == "" {
		return "token exchange refused: " + e.Code
	}
	return fmt.Sprintf("token exchange refused: %s (%s)", e.Code, e.Description)
}

// Refused reports whether the server refused this caller (its token, its
// subject, the audience for it): PERMISSION_DENIED. Otherwise toolsvc's own
// client credentials or the server failed (invalid_client, server_error):
// the caller can do nothing about it.
func (e *ExchangeError) Refused() bool {
	return slices.Contains([]string{"access_denied", "invalid_grant", "invalid_request", "invalid_target",
		"invalid_scope", "unauthorized_client"}, e.Code)
}

// ErrNoSubjectToken: the caller presented no token to exchange (a static
// toolsvc token or a client certificate identifies a principal but is not a
// token the authorization server knows).
var ErrNoSubjectToken = errors.New("token exchange: the caller presented no token to exchange")

// Token returns an access token for the upstream on behalf of principal:
// the cached one, or one exchanged for subjectToken. Errors:
// ErrNoSubjectToken; *ExchangeError; anything else is the authorization
// server being unreachable (wrapped, without tokens).
func (x *Exchanger) Token(ctx context.Context, principal, subjectToken string) (string, error) {
	if tok, ok := x.cached(principal); ok {
		return tok, nil
	}
	if subjectToken == "" {
		return "", ErrNoSubjectToken
	}
	x.mu.Lock()
	f := x.flights[principal]
	if f == nil {
		if x.closed {
			x.mu.Unlock()
			return "", errors.New("token exchange: closed")
		}
		f = &flight{done: make(chan struct{})}
		x.flights[principal] = f
		// The flight is shared, so it runs on the Exchanger's context, not
		// this caller's; Close cancels and waits for it.
		x.wg.Go(func() {
			ctx, cancel := context.WithTimeout(x.ctx, x.cfg.Timeout)
			defer cancel()
			f.tok, f.lifetime, f.err = x.exchange(ctx, subjectToken)
			if x.ctx.Err() == nil { // an exchange Close cut off is no outcome
				x.observe(f.err)
			}
			x.mu.Lock()
			delete(x.flights, principal)
			if f.err == nil {
				x.storeLocked(principal, f.tok, f.lifetime)
			}
			x.mu.Unlock()
			close(f.done)
		})
	}
	x.mu.Unlock()
	select {
	case <-f.done:
		return f.tok, f.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// observe reports an exchange's outcome to cfg.Observe.
func (x *Exchanger) observe(err error) {
	if x.cfg.Observe == nil {
		return
	}
	var ee *ExchangeError
	switch {
	case err == nil:
		x.cfg.Observe("exchange", "ok")
	case errors.As(err, &ee) && ee.Refused():
		x.cfg.Observe("exchange", "refused")
	default:
		x.cfg.Observe("exchange", "error")
	}
}

// flight is one exchange in progress for a principal; callers of the same
// principal wait for it rather than starting another.
type flight struct {
	done     chan struct{}
	tok      string
	lifetime time.Duration
	err      error
}

// Close cancels exchanges in flight and waits for them.
func (x *Exchanger) Close() {
	x.mu.Lock()
	x.closed = true
	x.mu.Unlock()
	x.cancel()
	x.wg.Wait()
	x.hc.CloseIdleConnections()
}

// Forget drops principal's cached token (the upstream refused it, or the
// principal logged out), so the next Token exchanges again.
func (x *Exchanger) Forget(principal string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.cache, principal)
}

func (x *Exchanger) cached(principal string) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.cache[principal]
	if !ok || time.Until(e.expires) < x.cfg.ExpiryGuard {
		return "", false
	}
	return e.access, true
}

// storeLocked caches a token; one without a known lifetime, or too short
// to outlive the guard, is used once and not cached.
func (x *Exchanger) storeLocked(principal, access string, lifetime time.Duration) {
	if lifetime <= x.cfg.ExpiryGuard {
		return
	}
	now := time.Now()
	if _, ok := x.cache[principal]; !ok && len(x.cache) >= x.cfg.MaxEntries {
		soonest, first := "", time.Time{}
		for p, e := range x.cache {
			if now.After(e.expires.Add(-x.cfg.ExpiryGuard)) {
				delete(x.cache, p)
				continue
			}
			if soonest == "" || e.expires.Before(first) {
				soonest, first = p, e.expires
			}
		}
		if len(x.cache) >= x.cfg.MaxEntries {
			delete(x.cache, soonest)
		}
	}
	x.cache[principal] = exchanged{access: access, expires: now.Add(lifetime)}
}

// exchangeAtServer is one RFC 8693 request.
func (x *Exchanger) exchangeAtServer(ctx context.Context, subjectToken string) (string, time.Duration, error) {
	te, err := x.exchanger(ctx)
	if err != nil {
		return "", 0, err
	}
	var aud, res []string
	if x.cfg.Audience != "" {
		aud = []string{x.cfg.Audience}
	}
	if x.cfg.Resource != "" {
		res = []string{x.cfg.Resource}
	}
	resp, err := tokenexchange.ExchangeToken(ctx, te, subjectToken, oidc.TokenType(x.cfg.SubjectTokenType), "", "",
		res, aud, x.cfg.Scopes, oidc.AccessTokenType)
	if err != nil {
		var oe *oidc.Error
		if errors.As(err, &oe) {
			return "", 0, &ExchangeError{Code: string(oe.ErrorType), Description: clip(oe.Description, 200)}
		}
		// Not the library's text for other failures: it quotes the
		// response body, which may hold a token (a malformed success).
		var ue *url.Error
		if errors.As(err, &ue) {
			return "", 0, fmt.Errorf("token exchange at %s: %w", te.TokenEndpoint(), ue.Err)
		}
		return "", 0, fmt.Errorf("token exchange at %s: the answer is neither a token nor an OAuth error", te.TokenEndpoint())
	}
	if resp.AccessToken == "" || (resp.TokenType != "" && !strings.EqualFold(resp.TokenType, "bearer")) {
		return "", 0, fmt.Errorf("token exchange at %s: no bearer access token in the answer", te.TokenEndpoint())
	}
	return resp.AccessToken, time.Duration(resp.ExpiresIn) * time.Second, nil
}

// exchanger builds zitadel's client on first use: discovery (unless
// TokenURL is set) may fail, and the next exchange retries it.
func (x *Exchanger) exchanger(ctx context.Context) (tokenexchange.TokenExchanger, error) {
	x.teMu.Lock()
	defer x.teMu.Unlock()
	if x.te != nil {
		return x.te, nil
	}
	opts := []func(*tokenexchange.OAuthTokenExchange){tokenexchange.WithHTTPClient(x.hc)}
	if x.cfg.TokenURL != "" {
		opts = append(opts, tokenexchange.WithStaticTokenEndpoint(x.cfg.Issuer, x.cfg.TokenURL))
	}
	te, err := tokenexchange.NewTokenExchangerClientCredentials(ctx, x.cfg.Issuer, x.cfg.ClientID, x.cfg.ClientSecret, opts...)
	if err != nil {
		return nil, fmt.Errorf("token exchange: discovering %s: %w", x.cfg.Issuer, err)
	}
	x.te = te
	return te, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
