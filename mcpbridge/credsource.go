package mcpbridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
	"github.com/toolsvc/toolsvc/tokenstore"
)

// credentialSource is where a per-principal session's bearer token comes
// from: the one difference between the per-user modes (peruser.go holds
// what they share). Its errors are mapped already: *CredentialsError,
// *LoginRequiredError, *UnavailableError, or the context's.
type credentialSource interface {
	// admit checks, before the caller takes its session, that the caller
	// has a credential for the upstream (so a refusal, or a login to make,
	// is the caller's error, not the session's).
	admit(ctx context.Context, c caller) error
	// token is principal's bearer token for a request of its session;
	// subject is the caller's JWT when known (the request's, or the
	// latest one of the principal).
	token(ctx context.Context, principal, subject string) (string, error)
	// forget drops what is cached for principal (the upstream refused
	// its token).
	forget(principal string)
	close()
}

// newCredentialSource is the credential source of u's mode.
func (u *upstream) newCredentialSource() credentialSource {
	c := u.cfg.Credentials
	res := c.Resource
	if res == "" {
		res = u.cfg.URL
	}
	switch c.mode() {
	case CredentialsPassthrough:
		return &passthroughSource{u: u, audience: c.Audience}
	case CredentialsUserOAuth:
		return &userSource{u: u, ut: u.b.userTokens(u.cfg, res)}
	}
	aud := c.Audience
	if aud == "" {
		aud = u.cfg.URL
	}
	return &exchangeSource{u: u, exch: oauth.NewExchanger(oauth.ExchangeConfig{Issuer: c.Issuer, TokenURL: c.TokenURL,
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, Audience: aud, Resource: res, Scopes: c.Scopes,
		SubjectTokenType: c.SubjectTokenType, ExpiryGuard: DefaultTokenExpiryGuard, MaxEntries: max(c.MaxSessions, DefaultMaxUserSessions),
		Observe: u.b.credentialObserver(u.cfg.Name)})}
}

// exchangeSource is mode tokenExchange: the caller's JWT exchanged (RFC
// 8693), cached per principal by the Exchanger.
type exchangeSource struct {
	u    *upstream
	exch *oauth.Exchanger
}

func (x *exchangeSource) admit(ctx context.Context, c caller) error {
	if c.principal == "" || c.subject == "" {
		// Never served from another caller's cache: every request brings
		// the JWT it is made with.
		return &CredentialsError{Server: x.u.cfg.Name, Code: CodeNoSubjectToken}
	}
	if _, err := x.exch.Token(ctx, c.principal, c.subject); err != nil {
		return x.u.exchangeFailure(ctx, err)
	}
	return nil
}

func (x *exchangeSource) token(ctx context.Context, principal, subject string) (string, error) {
	tok, err := x.exch.Token(ctx, principal, subject)
	if err != nil {
		return "", x.u.exchangeFailure(ctx, err)
	}
	return tok, nil
}

func (x *exchangeSource) forget(principal string) { x.exch.Forget(principal) }
func (x *exchangeSource) close()                  { x.exch.Close() }

// passthroughSource is mode passthrough: the caller's own JWT, forwarded
// only while oauth.PassthroughAllowed says its audience names the
// upstream's (credentials.audience).
type passthroughSource struct {
	u        *upstream
	audience string
}

func (p *passthroughSource) admit(_ context.Context, c caller) error {
	if c.principal == "" {
		return &CredentialsError{Server: p.u.cfg.Name, Mode: CredentialsPassthrough, Code: CodeNoSubjectToken}
	}
	_, err := p.token(context.Background(), c.principal, c.subject)
	return err
}

func (p *passthroughSource) token(_ context.Context, _, subject string) (string, error) {
	if err := oauth.PassthroughAllowed(subject, p.audience, time.Now()); err != nil {
		code := CodeNoSubjectToken
		var pe *oauth.PassthroughError
		if errors.As(err, &pe) {
			code = pe.Code
		}
		return "", &CredentialsError{Server: p.u.cfg.Name, Mode: CredentialsPassthrough, Code: code}
	}
	return subject, nil
}

func (p *passthroughSource) forget(string) {}
func (p *passthroughSource) close()        {}

// ReasonTokenStore: the token store of userOAuth upstreams cannot be
// reached (UnavailableError.Reason); what it holds is kept.
const ReasonTokenStore = "token_store"

// LoginRequiredError: the principal has no usable token for a userOAuth
// upstream (it never logged in, logged out, or the authorization server
// refused to refresh its token): it must open URL, a login link valid for
// a while on any replica sharing the token store. The message does not
// hold the link (it is for the principal only: the error's metadata).
type LoginRequiredError struct {
	Server    string
	Principal string
	URL       string
}

func (e *LoginRequiredError) Error() string {
	return fmt.Sprintf("server %q uses per-user credentials (userOAuth): principal %q must log in to it first; open the login link (metadata login_url), then call again", e.Server, e.Principal)
}

// DefaultLoginWait bounds how long a call whose caller accepted a login
// link (URL elicitation) waits for the login to complete at toolsvc's
// callback before it fails with LoginRequiredError.
const DefaultLoginWait = 2 * time.Minute

// loginPoll is how often such a call looks for the stored token.
const loginPoll = 250 * time.Millisecond

// userSource is mode userOAuth: the principal's stored login
// (oauth.UserTokens), refreshed once across replicas.
type userSource struct {
	u  *upstream
	ut *oauth.UserTokens // nil: the bridge has no token store (refused by validation)
}

func (s *userSource) admit(ctx context.Context, c caller) error {
	if c.principal == "" {
		return &CredentialsError{Server: s.u.cfg.Name, Mode: CredentialsUserOAuth, Code: CodeNoPrincipal}
	}
	_, err := s.token(ctx, c.principal, "")
	var le *LoginRequiredError
	if !errors.As(err, &le) {
		return err
	}
	return s.askLogin(ctx, le)
}

func (s *userSource) token(ctx context.Context, principal, _ string) (string, error) {
	if s.ut == nil {
		return "", s.u.b.storeUnavailable(s.u.cfg.Name)
	}
	tok, err := s.ut.Token(ctx, principal)
	switch {
	case err == nil:
		return tok, nil
	case errors.Is(err, oauth.ErrLoginRequired):
		link, lerr := s.ut.LoginURL(ctx, principal)
		if lerr != nil {
			return "", s.failure(ctx, lerr)
		}
		return "", &LoginRequiredError{Server: s.u.cfg.Name, Principal: principal, URL: link}
	}
	return "", s.failure(ctx, err)
}

// failure maps what UserTokens returns besides a login to make: the store
// unreachable (or a value it holds that does not open under the key) is
// token_store, the authorization server failing is token_endpoint.
func (s *userSource) failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	reason := ReasonTokenEndpoint
	if errors.Is(err, tokenstore.ErrUnavailable) || errors.Is(err, tokenstore.ErrCorrupt) {
		reason = ReasonTokenStore
	}
	// UserTokens's and the store's errors never hold a token.
	s.u.log.Warn("per-user credentials unavailable", "reason", reason, "error", s.u.redact(err.Error()))
	return &UnavailableError{Server: s.u.cfg.Name, Reason: reason, RetryAfter: time.Second}
}

// askLogin hands the login link to the caller as a URL-mode elicitation
// when it takes them (docs/interactive-cells.md); once it accepts, the
// call waits (DefaultLoginWait at most) for the login to reach toolsvc's
// callback and goes on. A caller that does not take URL elicitations, or
// declines, gets le.
func (s *userSource) askLogin(ctx context.Context, le *LoginRequiredError) error {
	it := interactionOf(ctx)
	if it == nil || it.Ask == nil || !it.Kinds.URL {
		return le
	}
	if it.clock != nil {
		// Waiting for a person is no upstream time (activeclock.go).
		it.clock.pause()
		defer it.clock.resume()
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	host := le.URL
	if pu, err := url.Parse(le.URL); err == nil {
		host = pu.Host
	}
	res, err := it.Ask(ctx, &mcp.ElicitParams{Mode: "url", URL: le.URL, ElicitationID: hex.EncodeToString(id),
		Message: fmt.Sprintf("Server %q acts with your own account: log in at %s to let toolsvc use it for you.", s.u.cfg.Name, host)})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return le
	}
	if er, ok := res.(*mcp.ElicitResult); !ok || er.Action != "accept" {
		return le
	}
	wait, cancel := context.WithTimeout(ctx, DefaultLoginWait)
	defer cancel()
	t := time.NewTicker(loginPoll)
	defer t.Stop()
	for {
		_, err := s.token(wait, le.Principal, "")
		var again *LoginRequiredError
		if !errors.As(err, &again) {
			if err != nil && wait.Err() != nil && ctx.Err() == nil {
				return le // the wait ended: still no login
			}
			return err
		}
		le = again
		select {
		case <-t.C:
		case <-wait.Done():
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err() // the caller went away
			}
			// The wait, or a deadline shorter than it (PrimeCaller's
			// connect + refresh bound, the caller's own), ended with no
			// login: the caller learns what is missing, with the link.
			return le
		}
	}
}

func (s *userSource) forget(string) {}
func (s *userSource) close() {
	if s.ut != nil {
		s.ut.Close()
	}
}
