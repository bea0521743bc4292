package mcpbridge

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Credential modes (CredentialsConfig.Mode): whose credentials a call to
// the upstream carries (docs/credentials.md).
const (
	// CredentialsShared: every caller reaches the upstream with the same
	// credentials (headers, or the server's oauth settings). The default,
	// and the behaviour before credential modes existed.
	CredentialsShared = "shared"
	// CredentialsTokenExchange: the caller's inbound JWT is the subject
	// token of an RFC 8693 exchange at TokenURL for a token with the
	// upstream as audience and resource, cached per principal.
	CredentialsTokenExchange = "tokenExchange"
	// CredentialsUserOAuth: each principal logs in once (authorization code
	// with PKCE, through a link toolsvc hands out); toolsvc stores, refreshes
	// and revokes the principal's token.
	CredentialsUserOAuth = "userOAuth"
	// CredentialsPassthrough: the caller's own bearer token is forwarded,
	// only when it names the upstream (Audience) in its aud claim.
	CredentialsPassthrough = "passthrough"
)

// Subject token types a token exchange may present (RFC 8693 §3).
const (
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
	TokenTypeIDToken     = "urn:ietf:params:oauth:token-type:id_token"
)

// Defaults for the per-principal session bounds.
const (
	DefaultMaxUserSessions  = 1000
	DefaultUserSessionIdle  = 10 * time.Minute
	DefaultTokenExpiryGuard = 30 * time.Second
)

// CredentialsConfig is an upstream's "credentials" object: the mode, and
// the settings of that mode. A field another mode uses is a problem, so a
// misplaced setting is not silently ignored.
type CredentialsConfig struct {
	// Mode is one of the Credentials* constants; "" is CredentialsShared.
	Mode string

	// Issuer is the authorization server (tokenExchange, userOAuth): its
	// endpoints come from its metadata (RFC 8414, else OpenID discovery)
	// unless TokenURL (and, for userOAuth, AuthorizationURL) are set.
	Issuer           string
	TokenURL         string
	AuthorizationURL string // userOAuth
	// ClientID and ClientSecret authenticate toolsvc at the token endpoint
	// (tokenExchange, userOAuth).
	ClientID     string
	ClientSecret string
	Scopes       []string
	// Audience is, for tokenExchange, the audience asked for (default: the
	// server's URL); for passthrough, the audience a caller's token must
	// carry to be forwarded (required: the operator's opt-in).
	Audience string
	// Resource is the RFC 8707 resource asked for (tokenExchange,
	// userOAuth; default: the server's URL).
	Resource string
	// SubjectTokenType is the type the caller's token is presented as
	// (tokenExchange; default TokenTypeAccessToken).
	SubjectTokenType string
	// RequireSameSubject (userOAuth): a login counts only if its OpenID
	// id_token names the principal the login link was made for.
	RequireSameSubject bool

	// MaxSessions bounds the per-principal sessions of the upstream (0:
	// DefaultMaxUserSessions); SessionIdle closes one unused that long (0:
	// DefaultUserSessionIdle). Per-user modes only.
	MaxSessions int
	SessionIdle time.Duration
	// PrivateTools (per-user modes): the upstream's tools differ per
	// principal, so each principal's session lists its own and only that
	// principal's catalog view shows them (docs/credentials.md,
	// "Per-principal listings"), as a 2026-07-28 upstream's
	// cacheScope "private" on tools/list does.
	PrivateTools bool
}

// mode is c's mode with the default applied; a nil c is shared.
func (c *CredentialsConfig) mode() string {
	if c == nil || c.Mode == "" {
		return CredentialsShared
	}
	return c.Mode
}

// PerPrincipal reports whether the upstream's credentials depend on the
// caller, so its sessions are per (principal, server).
func (c *CredentialsConfig) PerPrincipal() bool { return c.mode() != CredentialsShared }

// credentialsProblems reports the problems of the server's credentials
// object as fields "credentials.<field>".
func (sc *ServerConfig) credentialsProblems(p *fieldProblems) {
	c := sc.Credentials
	if c == nil {
		return
	}
	mode := c.mode()
	// uses lists the fields each mode reads; any other set field is a problem.
	uses := map[string][]string{
		CredentialsShared:        nil,
		CredentialsTokenExchange: {"issuer", "tokenUrl", "clientId", "clientSecret", "scopes", "audience", "resource", "subjectTokenType", "maxSessions", "sessionIdle", "privateTools"},
		CredentialsUserOAuth: {"issuer", "tokenUrl", "authorizationUrl", "clientId", "clientSecret", "scopes", "resource",
			"requireSameSubject", "maxSessions", "sessionIdle", "privateTools"},
		CredentialsPassthrough: {"audience", "maxSessions", "sessionIdle", "privateTools"},
	}
	used, known := uses[mode]
	if !known {
		p.add("credentials.mode", "want %q, %q, %q or %q, got %q", CredentialsShared, CredentialsTokenExchange,
			CredentialsUserOAuth, CredentialsPassthrough, c.Mode)
		return
	}
	set := map[string]bool{
		"issuer": c.Issuer != "", "tokenUrl": c.TokenURL != "", "authorizationUrl": c.AuthorizationURL != "",
		"clientId": c.ClientID != "", "clientSecret": c.ClientSecret != "", "scopes": len(c.Scopes) > 0,
		"audience": c.Audience != "", "resource": c.Resource != "", "subjectTokenType": c.SubjectTokenType != "",
		"requireSameSubject": c.RequireSameSubject, "maxSessions": c.MaxSessions != 0, "sessionIdle": c.SessionIdle != 0,
		"privateTools": c.PrivateTools,
	}
	for _, f := range []string{"issuer", "tokenUrl", "authorizationUrl", "clientId", "clientSecret", "scopes", "audience",
		"resource", "subjectTokenType", "requireSameSubject", "maxSessions", "sessionIdle", "privateTools"} {
		if set[f] && !slices.Contains(used, f) {
			p.add("credentials."+f, "not used by mode %q", mode)
		}
	}
	if mode == CredentialsShared {
		return
	}
	if sc.Transport != TransportStreamableHTTP && sc.NewTransport == nil {
		p.add("credentials.mode", "%q is only for streamable HTTP servers: a per-user credential is a bearer token", mode)
	}
	if sc.OAuth != nil {
		p.add("credentials.mode", "%q cannot be combined with oauth (the server's own credentials)", mode)
	}
	for h := range sc.Headers {
		if strings.EqualFold(h, "Authorization") {
			p.add("credentials.mode", "%q cannot be combined with an Authorization header", mode)
		}
	}
	for _, u := range []struct{ field, v string }{
		{"credentials.issuer", c.Issuer}, {"credentials.tokenUrl", c.TokenURL}, {"credentials.authorizationUrl", c.AuthorizationURL},
	} {
		if u.v != "" && !httpURL(u.v) {
			p.add(u.field, "want an absolute http:// or https:// URL")
		}
	}
	// A resource indicator is any absolute URI without a fragment (RFC 8707
	// section 2: urn:, https:, …); it is only sent, never fetched.
	if c.Resource != "" && !resourceURI(c.Resource) {
		p.add("credentials.resource", "want an absolute URI without a fragment (RFC 8707), such as https://api.example/ or urn:example:api")
	}
	if c.MaxSessions < 0 {
		p.add("credentials.maxSessions", "must not be negative, got %d", c.MaxSessions)
	}
	if c.SessionIdle < 0 {
		p.add("credentials.sessionIdle", "must not be negative, got %s", c.SessionIdle)
	}
	switch mode {
	case CredentialsTokenExchange:
		if c.Issuer == "" && c.TokenURL == "" {
			p.add("credentials.tokenUrl", "required (or issuer) for mode %q", mode)
		}
		if c.ClientID == "" {
			p.add("credentials.clientId", "required for mode %q", mode)
		}
		switch c.SubjectTokenType {
		case "", TokenTypeAccessToken, TokenTypeJWT, TokenTypeIDToken:
		default:
			p.add("credentials.subjectTokenType", "want %q, %q or %q, got %q", TokenTypeAccessToken, TokenTypeJWT, TokenTypeIDToken, c.SubjectTokenType)
		}
	case CredentialsUserOAuth:
		if c.ClientID == "" {
			p.add("credentials.clientId", "required for mode %q", mode)
		}
		if c.AuthorizationURL != "" && c.TokenURL == "" {
			p.add("credentials.tokenUrl", "required with authorizationUrl")
		}
		if c.RequireSameSubject && c.Issuer == "" {
			p.add("credentials.issuer", "required with requireSameSubject (its keys verify the id_token)")
		}
	case CredentialsPassthrough:
		if c.Audience == "" {
			p.add("credentials.audience", "required for mode %q: only a caller token naming this audience is forwarded", mode)
		}
	}
}

// resourceURI reports an absolute URI (a scheme) without a fragment and
// without control characters or spaces (url.Parse refuses those).
func resourceURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && (u.Opaque != "" || u.Host != "" || u.Path != "") && u.Fragment == "" && !strings.Contains(s, "#") && !strings.ContainsAny(s, " \t")
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// servedModes are the per-principal modes the bridge serves. A config may
// name others (Problems checks their shape), but New and Reconfigure
// refuse them: an upstream must never be reached with the shared
// credentials when its operator asked for per-user ones.
var servedModes = map[string]bool{CredentialsTokenExchange: true, CredentialsUserOAuth: true, CredentialsPassthrough: true}

// unservedModeProblems reports each server whose credential mode the
// bridge does not serve, and each userOAuth server without the token
// store and callback it needs (logins: Config.Logins).
func unservedModeProblems(servers []ServerConfig, logins *LoginConfig) []*FieldError {
	var probs []*FieldError
	for i := range servers {
		c := servers[i].Credentials
		switch {
		case c.PerPrincipal() && !servedModes[c.mode()]:
			probs = append(probs, &FieldError{Server: servers[i].Name, Field: "credentials.mode",
				Err: fmt.Errorf("%q is not served by this build", c.mode())})
		case c.mode() == CredentialsUserOAuth && (logins == nil || logins.Store == nil && logins.StoreError == ""):
			probs = append(probs, &FieldError{Server: servers[i].Name, Field: "credentials.mode",
				Err: fmt.Errorf("%q needs a token store: set the top-level tokenStore", c.mode())})
		case c.mode() == CredentialsUserOAuth && logins.RedirectURL == "":
			probs = append(probs, &FieldError{Server: servers[i].Name, Field: "credentials.mode",
				Err: fmt.Errorf("%q needs toolsvc's login callback URL (serve --public-url)", c.mode())})
		}
	}
	return probs
}
