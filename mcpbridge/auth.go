package mcpbridge

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
)

// Authentication to upstreams: static headers (transport.go) or OAuth 2.1,
// which lives in its own package (mcpbridge/oauth) with its dependencies;
// the bridge holds one *oauth.Handler per OAuth upstream and tells an
// authentication failure from a crash here.

// OAuthConfig configures OAuth 2.1 for one streamable HTTP upstream
// (mcpbridge/oauth).
type OAuthConfig = oauth.Config

// OAuth grants (OAuthConfig.Grant).
const (
	OAuthClientCredentials = oauth.ClientCredentials
	OAuthRefreshToken      = oauth.RefreshToken
)

// DefaultAuthRetry is how long an upstream that rejected toolsvc's
// credentials (HTTP 401/403, or a failed token request) waits before the
// next connection attempt: credentials do not fix themselves in a second,
// so it is not retried like a crashed server. An operator reconnect
// (AdminService.ReconnectServer) or a reload retries at once.
const DefaultAuthRetry = 5 * time.Minute

// oauthProblems reports the problems of the server's oauth settings, as
// fields "oauth.<field>" of the server, and what concerns the server too.
func (sc *ServerConfig) oauthProblems() []*FieldError {
	var probs []*FieldError
	add := func(field string, err error) {
		probs = append(probs, &FieldError{Server: sc.Name, Field: strings.TrimSuffix("oauth."+field, "."), Err: err})
	}
	switch {
	case sc.Transport == TransportGRPC:
		probs = append(probs, sc.grpcOAuthProblems()...)
	case sc.Transport != TransportStreamableHTTP && sc.NewTransport == nil:
		add("", fmt.Errorf("only for streamable HTTP servers and \"type\": \"grpc\" (not stdio, and not \"type\": \"sse\": go-sdk's SSE client has no OAuth hook)"))
	}
	for h := range sc.Headers {
		if strings.EqualFold(h, "Authorization") {
			add("", fmt.Errorf("set either oauth or an Authorization header, not both"))
		}
	}
	for _, p := range sc.OAuth.Problems() {
		add(p.Field, p.Err)
	}
	return probs
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

// AuthReporter is implemented by a transport of Config.Transports whose
// upstream can refuse toolsvc's credentials (the gRPC binding's
// UNAUTHENTICATED or PERMISSION_DENIED, a failed token request of its own
// OAuth handler): it is the transport's authWatch, so that the supervisor
// tells an authentication problem from a crash by the peer's real answer
// and holds it for AuthRetry as it does an HTTP upstream's 401/403.
type AuthReporter interface {
	// AuthRejected says why the upstream's latest answer refused
	// toolsvc's credentials (or why the latest token request failed),
	// "" when it did not. The bridge redacts it.
	AuthRejected() string
}

// authReporter boxes an AuthReporter for an atomic.Pointer.
type authReporter struct{ AuthReporter }

// watchAuth makes t, the transport of the upstream's newest session, the
// one authRejected asks, when it reports refusals.
func (u *upstream) watchAuth(t any) {
	if r, ok := t.(AuthReporter); ok {
		u.authRep.Store(&authReporter{r})
	}
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
// discovery requests use a client of their own (mcpbridge/oauth): the
// upstream's static headers are never sent to an authorization server.
func (u *upstream) initAuth() {
	u.authw = &authWatch{base: u.http.Transport}
	u.http = &http.Client{Transport: u.authw}
	if u.cfg.OAuth == nil {
		return
	}
	for _, s := range u.cfg.OAuth.Secrets() {
		u.runtimeSecrets.add(s)
	}
	u.oauth = oauth.NewHandler(u.ctx, *u.cfg.OAuth, u.cfg.URL, u.log, u.cfg.ConnectTimeout, u.runtimeSecrets.add)
}

// authRejected says why a failed attempt or lost session (err) is an
// authentication problem: the upstream's last HTTP answer was 401/403, or
// the last token request failed, or the transport reports either
// (AuthReporter). "" when it is not.
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
		if f := u.oauth.Failure(); f != "" {
			why = u.redact(f)
		}
	}
	if r := u.authRep.Load(); r != nil {
		if w := r.AuthRejected(); w != "" {
			why = u.redact(w)
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
	if u.oauth != nil || u.cfg.OAuth != nil { // the handler is the bridge's or the transport's (gRPC)
		hint = "check the server's oauth settings"
	}
	if strings.Contains(msg, why) {
		why = "see below" // the token request's failure is in msg already
	}
	msg = fmt.Sprintf("authentication failed (%s; %s; next attempt in %s or on ReconnectServer): %s", why, hint, u.cfg.AuthRetry, msg)
	return max(delay, u.cfg.AuthRetry), msg
}
