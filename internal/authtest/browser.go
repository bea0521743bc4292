package authtest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	oidcclient "github.com/zitadel/oidc/v3/pkg/client"
	"golang.org/x/oauth2"
)

// Authorize plays the user's browser: it GETs authURL (an authorization
// request to a Server), follows the redirects to the login form, posts
// username, and follows the redirects while they stay on the
// authorization server. It returns the first URL outside it (the client's
// redirect URI with code and state, or with error) without fetching it,
// so the caller decides whether a real client endpoint receives it.
func Authorize(ctx context.Context, hc *http.Client, authURL, username string) (*url.URL, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	noFollow := *hc
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	start, err := url.Parse(authURL)
	if err != nil {
		return nil, err
	}
	next, method, form := start, http.MethodGet, url.Values(nil)
	for range 10 {
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		req, err := http.NewRequestWithContext(ctx, method, next.String(), body)
		if err != nil {
			return nil, err
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK && next.Path == loginPath && method == http.MethodGet:
			// The login form: post it (its fields are documented on the package).
			method, form = http.MethodPost, url.Values{"id": {next.Query().Get("authRequestID")}, "username": {username}}
			next = next.ResolveReference(&url.URL{Path: loginPath})
			continue
		case resp.StatusCode/100 != 3:
			return nil, fmt.Errorf("authorization at %s answered %s", next.Redacted(), resp.Status)
		}
		loc, err := next.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil, fmt.Errorf("bad redirect from %s: %w", next.Redacted(), err)
		}
		if loc.Host != start.Host {
			return loc, nil
		}
		next, method, form = loc, http.MethodGet, nil
	}
	return nil, fmt.Errorf("authorization at %s: too many redirects", start.Redacted())
}

// Login runs the code flow with PKCE against the authorization server at
// issuer (this package's, in this process or another: the endpoints come
// from discovery) for client c, whose first redirect URI need not be
// served, as username, and redeems the code: the way tests get a user's
// tokens.
func Login(ctx context.Context, issuer string, c ClientConfig, username string, scopes ...string) (*oauth2.Token, error) {
	if len(c.RedirectURIs) == 0 {
		return nil, fmt.Errorf("client %s has no redirect URI", c.ID)
	}
	disc, err := oidcclient.Discover(ctx, issuer, http.DefaultClient)
	if err != nil {
		return nil, err
	}
	cfg := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: c.RedirectURIs[0],
		Scopes:   append([]string{"openid"}, scopes...),
		Endpoint: oauth2.Endpoint{AuthURL: disc.AuthorizationEndpoint, TokenURL: disc.TokenEndpoint, AuthStyle: oauth2.AuthStyleInHeader}}
	if c.Secret == "" {
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	}
	verifier := oauth2.GenerateVerifier()
	state := "st-" + username
	loc, err := Authorize(ctx, nil, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), username)
	if err != nil {
		return nil, err
	}
	q := loc.Query()
	if q.Get("state") != state || q.Get("code") == "" {
		return nil, fmt.Errorf("authorization redirected without a code (error %q)", q.Get("error"))
	}
	return cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
}

// Login is the package's Login against s.
func (s *Server) Login(ctx context.Context, c ClientConfig, username string, scopes ...string) (*oauth2.Token, error) {
	return Login(ctx, s.url, c, username, scopes...)
}
