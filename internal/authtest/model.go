package authtest

import (
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// authRequest is an authorization request between /authorize and the
// code's redemption (op.AuthRequest).
type authRequest struct {
	id           string
	created      time.Time
	clientID     string
	redirectURI  string
	state        string
	nonce        string
	scopes       []string
	audience     []string
	responseType oidc.ResponseType
	responseMode oidc.ResponseMode
	challenge    *oidc.CodeChallenge

	// Set by the login step.
	subject  string
	done     bool
	authTime time.Time
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return amr(a.done) }
func (a *authRequest) GetAudience() []string                 { return a.audience }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

func amr(done bool) []string {
	if done {
		return []string{"pwd"}
	}
	return nil
}

// refreshRequest is a refresh token presented at the token endpoint
// (op.RefreshTokenRequest); a copy, so the scopes op narrows stay its own.
type refreshRequest struct{ rt refreshToken }

func (r *refreshRequest) GetAMR() []string                 { return r.rt.amr }
func (r *refreshRequest) GetAudience() []string            { return r.rt.audience }
func (r *refreshRequest) GetAuthTime() time.Time           { return r.rt.authTime }
func (r *refreshRequest) GetClientID() string              { return r.rt.clientID }
func (r *refreshRequest) GetScopes() []string              { return r.rt.scopes }
func (r *refreshRequest) GetSubject() string               { return r.rt.subject }
func (r *refreshRequest) SetCurrentScopes(scopes []string) { r.rt.scopes = scopes }

// clientCredentialsRequest is a client asking for a token of its own (the
// client_credentials grant): the client is the subject, its audience the
// token's.
type clientCredentialsRequest struct {
	clientID         string
	audience, scopes []string
}

func (r *clientCredentialsRequest) GetAudience() []string { return r.audience }
func (r *clientCredentialsRequest) GetClientID() string   { return r.clientID }
func (r *clientCredentialsRequest) GetScopes() []string   { return r.scopes }
func (r *clientCredentialsRequest) GetSubject() string    { return r.clientID }

// client is a registered client (op.Client): a native application (any
// loopback port for its redirect URIs, RFC 8252 §7.3), JWT access tokens,
// every grant this server supports.
type client struct {
	ClientConfig
	cfg *Config
}

func (c *client) audience() []string {
	if len(c.Audience) > 0 {
		return c.Audience
	}
	return []string{c.ID}
}

func (c *client) GetID() string                       { return c.ID }
func (c *client) RedirectURIs() []string              { return c.ClientConfig.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (c *client) AuthMethod() oidc.AuthMethod {
	if c.Secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken, oidc.GrantTypeTokenExchange, oidc.GrantTypeClientCredentials}
}
func (c *client) LoginURL(id string) string            { return loginPath + "?authRequestID=" + id }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return c.cfg.AccessTTL }
func (c *client) DevMode() bool                        { return true }
func (c *client) IsScopeAllowed(string) bool           { return true }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
