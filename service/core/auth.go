package core

import (
	"context"
	"crypto/subtle"
	"crypto/x509"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Principal is an authenticated caller.
type Principal struct {
	Name   string
	Method string // "token", "jwt" or "mtls"
}

type principalKey struct{}

type subjectTokenKey struct{}

// WithSubjectToken is ctx carrying the JWT its principal was authenticated
// by (set only for Principal.Method "jwt"): upstreams with per-user
// credentials exchange it (mcpbridge.CallOptions.SubjectToken). It is never
// logged or echoed.
func WithSubjectToken(ctx context.Context, jwt string) context.Context {
	return context.WithValue(ctx, subjectTokenKey{}, jwt)
}

// PrimeCatalog lets the caller of ctx list the tools of per-user
// upstreams no caller has listed yet (through its own session,
// mcpbridge.Bridge.PrimeCaller; its JWT, when one authenticated it, for
// tokenExchange and passthrough, its principal alone for a userOAuth
// login): a front door calls it before it lists the catalog. Cheap once
// every per-user upstream has listed.
func (s *Core) PrimeCatalog(ctx context.Context) {
	if p, ok := PrincipalFrom(ctx); ok {
		subject := ""
		if p.Method == "jwt" {
			subject = SubjectTokenFrom(ctx)
		}
		_ = s.bridge.PrimeCaller(ctx, p.Name, subject) // a login to make is the call's business
	}
}

// Tools is the tool catalog as the caller of ctx sees it
// (mcpbridge.Bridge.Tools): the shared catalog with the principal's
// per-principal listings merged in (docs/credentials.md, "Per-principal
// listings"). Per-principal sessions, and so listings, are by principal
// name whatever authenticated it (a userOAuth login is the principal's,
// not a JWT's).
func (s *Core) Tools(ctx context.Context) mcpbridge.ToolView {
	return s.bridge.Tools(ToolsPrincipal(ctx))
}

// ToolsPrincipal is the principal whose view of the tool catalog the
// caller of ctx gets (Tools): its name ("" unauthenticated).
func ToolsPrincipal(ctx context.Context) string {
	p, _ := PrincipalFrom(ctx)
	return p.Name
}

// SubjectTokenFrom is the caller's JWT, "" if it was not authenticated by
// one.
func SubjectTokenFrom(ctx context.Context) string {
	s, _ := ctx.Value(subjectTokenKey{}).(string)
	return s
}

// PrincipalFrom returns the caller authenticated for ctx, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// JWTOptions validate bearer JWTs against a JWKS; the principal is `sub`.
type JWTOptions struct {
	Keyfunc  keyfunc.Keyfunc
	Issuer   string // required issuer, if set
	Audience string // required audience, if set
}

// MaxBearerLen is the longest bearer credential (static token or JWT)
// Authenticate looks at: 8 KiB. Longer ones are refused before any parsing,
// so a caller cannot make toolsvc base64-decode and JSON-parse megabytes of
// header (grpc-go accepts header lists up to 16 MiB). Identity-provider
// tokens stay far below it (a token with a few dozen group claims is 2 to
// 4 KiB), and 8 KiB is the header-line limit of common proxies (nginx's
// large_client_header_buffers), so a longer token could not pass one anyway.
const MaxBearerLen = 8 << 10

// Authenticator establishes the caller of each RPC: a static bearer token,
// a JWT, or a client certificate verified by the server's mTLS setup (the
// principal is then the certificate's subject common name).
//
// Principals of every method share one namespace (rules and admins match
// names, whatever authenticated them), so a JWT whose subject is the name of
// a static-token principal is refused: an identity provider's user "ops"
// must not receive the rights configured for the token principal "ops".
type Authenticator struct {
	tokens     map[string]string // token -> principal
	tokenNames map[string]bool   // the principals of tokens
	jwt        *JWTOptions
	mtls       bool
}

// NewAuthenticator returns an authenticator; tokens maps bearer tokens to
// principal names. With nothing configured every call is refused.
func NewAuthenticator(tokens map[string]string, jwtOpts *JWTOptions, mtls bool) *Authenticator {
	names := map[string]bool{}
	for _, name := range tokens {
		names[name] = true
	}
	return &Authenticator{tokens: tokens, tokenNames: names, jwt: jwtOpts, mtls: mtls}
}

// Credentials are what a caller presented, whatever its wire: the bearer
// credential of its "Authorization: Bearer …" (gRPC metadata or HTTP
// header), and the client certificate chains its TLS handshake verified.
type Credentials struct {
	Bearer         string
	VerifiedChains [][]*x509.Certificate
	// Peer is the connection's remote address (nil: unknown). Without an
	// auth section it decides who may run an admin action: callers on this
	// machine only (admin.go).
	Peer net.Addr
}

// BearerOf is the credential of an Authorization value of the Bearer
// scheme (case-insensitive, RFC 6750), or "" for any other value.
func BearerOf(authorization string) string {
	scheme, tok, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return tok // as sent: "Bearer t " is not the token "t"
}

type credentialsKey struct{}

// WithCredentials is ctx carrying the credentials a wire received (the
// MCP front door's HTTP requests); authentication reads them there
// before it looks for gRPC metadata.
func WithCredentials(ctx context.Context, c Credentials) context.Context {
	return context.WithValue(ctx, credentialsKey{}, c)
}

// credentialsFrom is the credentials the wire put in ctx (none: the
// zero Credentials).
func credentialsFrom(ctx context.Context) Credentials {
	c, _ := ctx.Value(credentialsKey{}).(Credentials)
	return c
}

// WithPrincipal is ctx carrying p as the authenticated caller of its
// request (an interceptor that authenticated it, a wire that carries the
// principal with each request).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// Check establishes the principal of c: a static token, a JWT, or a
// verified client certificate (with mTLS on).
func (a *Authenticator) Check(c Credentials) (Principal, *Error) {
	if tok := c.Bearer; tok != "" {
		if len(tok) > MaxBearerLen {
			return Principal{}, unauthenticated(fmt.Sprintf("bearer token longer than %d bytes", MaxBearerLen))
		}
		for known, name := range a.tokens {
			if subtle.ConstantTimeCompare([]byte(known), []byte(tok)) == 1 {
				return Principal{Name: name, Method: "token"}, nil
			}
		}
		if a.jwt != nil && strings.Count(tok, ".") == 2 {
			sub, err := a.verifyJWT(tok)
			if err != nil {
				// The parser's text (kid, claims) stays out of the answer.
				return Principal{}, unauthenticated("invalid bearer JWT (signature, expiry, issuer or audience)")
			}
			if a.tokenNames[sub] {
				return Principal{}, unauthenticated("bearer JWT refused: its subject is the name of a static-token principal (the two must not be confused)")
			}
			return Principal{Name: sub, Method: "jwt"}, nil
		}
		return Principal{}, unauthenticated("invalid bearer token")
	}
	if a.mtls && len(c.VerifiedChains) > 0 && len(c.VerifiedChains[0]) > 0 {
		cert := c.VerifiedChains[0][0]
		name := cert.Subject.CommonName
		if name == "" {
			name = cert.Subject.String()
		}
		return Principal{Name: name, Method: "mtls"}, nil
	}
	return Principal{}, unauthenticated("credentials required: an \"authorization: Bearer …\" header or a client certificate")
}

func unauthenticated(msg string) *Error {
	return NewError(Unauthenticated, ReasonUnauthenticated, msg, nil)
}

func (a *Authenticator) verifyJWT(tok string) (string, error) {
	opts := []jwt.ParserOption{jwt.WithExpirationRequired(), jwt.WithValidMethods([]string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"})}
	if a.jwt.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(a.jwt.Issuer))
	}
	if a.jwt.Audience != "" {
		opts = append(opts, jwt.WithAudience(a.jwt.Audience))
	}
	t, err := jwt.Parse(tok, a.jwt.Keyfunc.Keyfunc, opts...)
	if err != nil {
		return "", err
	}
	sub, err := t.Claims.GetSubject()
	if err != nil || sub == "" {
		return "", fmt.Errorf("no subject")
	}
	return sub, nil
}

// Rule grants a principal (glob) the tools matching Allow (globs over exposed
// names; empty means all) except those matching Deny.
type Rule struct {
	Principal string
	Allow     []string
	Deny      []string
}

// Authorizer applies per-principal rules to tool names, identically for
// ListTools, WatchCatalog and CallTool. With no rules every authenticated
// caller may use every tool; with rules, a caller no rule names may use none.
//
// An Authorizer in Options also means authentication is configured: every
// RPC of the service then needs a principal (Core.Authenticate), whatever
// interceptors the embedding installs.
//
// The decisions are AllowTool and AllowAdmin, over an authenticated
// Principal; everything that shows or runs a tool asks AllowTool.
type Authorizer struct {
	rules  []Rule
	admins []string
}

// NewAuthorizer returns an authorizer over rules; admins are globs over the
// principals that may use AdminService.
func NewAuthorizer(rules []Rule, admins []string) *Authorizer {
	return &Authorizer{rules: rules, admins: admins}
}

// AllowAdmin reports whether p may use AdminService and see operator
// details: with authentication configured, only principals matching an
// admins glob. A nil Authorizer (no auth configured) allows everyone.
func (a *Authorizer) AllowAdmin(p Principal) bool {
	if a == nil {
		return true
	}
	return p.Name != "" && globMatch(a.admins, p.Name)
}

func globMatch(patterns []string, s string) bool {
	return slices.ContainsFunc(patterns, func(g string) bool { ok, _ := path.Match(g, s); return ok })
}

// HasRules reports whether principals' views can differ (a nil
// Authorizer, or one without rules, allows everyone every name).
func (a *Authorizer) HasRules() bool { return a != nil && len(a.rules) > 0 }

// AllowTool reports whether p may see and call the tool with that exposed
// name. A nil Authorizer, or one without rules, allows every tool.
func (a *Authorizer) AllowTool(p Principal, tool string) bool {
	if a == nil || len(a.rules) == 0 {
		return true
	}
	allowed := false
	for _, r := range a.rules {
		if ok, _ := path.Match(r.Principal, p.Name); !ok {
			continue
		}
		if globMatch(r.Deny, tool) {
			return false
		}
		if len(r.Allow) == 0 || globMatch(r.Allow, tool) {
			allowed = true
		}
	}
	return allowed
}

// Filter returns a predicate for the caller of ctx, or nil when every tool
// is allowed (the fast path).
func (a *Authorizer) Filter(ctx context.Context) func(tool string) bool {
	if a == nil || len(a.rules) == 0 {
		return nil
	}
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return func(string) bool { return false }
	}
	return func(tool string) bool { return a.AllowTool(p, tool) }
}

// authenticate establishes the caller of an RPC, inside the service so that
// no embedding can skip it: the principal an interceptor already
// authenticated (NewGRPCServer's chain), else the result of
// Options.Authenticator. When authentication is configured (an
// Authenticator or an Authorizer in Options) and neither yields a
// principal, the RPC is refused with UNAUTHENTICATED: it fails closed. The
// returned context carries the principal. With no auth configured every
// caller is the anonymous principal.
//
// The returned context also carries the auth state the request is decided
// under (authstate.go): the one the interceptor pinned, else the current.
func (s *Core) Authenticate(ctx context.Context) (context.Context, Principal, *Error) {
	st := AuthStateFrom(ctx)
	if st == nil {
		st = s.CurrentAuth()
		ctx = WithAuthState(ctx, st)
	}
	if p, ok := PrincipalFrom(ctx); ok {
		return ctx, p, nil
	}
	if a := st.authn; a != nil {
		p, e := a.Check(credentialsFrom(ctx))
		if e != nil {
			return ctx, Principal{}, e
		}
		if p.Name == "" {
			return ctx, Principal{}, unauthenticated("credentials required")
		}
		if p.Method == "jwt" {
			ctx = WithSubjectToken(ctx, credentialsFrom(ctx).Bearer)
		}
		return WithPrincipal(ctx, p), p, nil
	}
	if st.authz != nil {
		s.log.Error("refusing a request: authorization is configured but nothing authenticated the request (set core.Options.Auth.Authenticator or install an authenticating interceptor)")
		return ctx, Principal{}, unauthenticated("credentials required: this server has authorization rules but could not authenticate the request")
	}
	return ctx, Principal{}, nil
}
