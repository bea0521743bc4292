package service

import (
	"context"
	"crypto/subtle"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// Principal is an authenticated caller.
type Principal struct {
	Name   string
	Method string // "token", "jwt" or "mtls"
}

type principalKey struct{}

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

// Authenticator establishes the caller of each RPC: a static bearer token,
// a JWT, or a client certificate verified by the server's mTLS setup (the
// principal is then the certificate's subject common name).
type Authenticator struct {
	tokens map[string]string // token -> principal
	jwt    *JWTOptions
	mtls   bool
}

// NewAuthenticator returns an authenticator; tokens maps bearer tokens to
// principal names. With nothing configured every call is refused.
func NewAuthenticator(tokens map[string]string, jwtOpts *JWTOptions, mtls bool) *Authenticator {
	return &Authenticator{tokens: tokens, jwt: jwtOpts, mtls: mtls}
}

// Authenticate is a go-grpc-middleware auth.AuthFunc.
func (a *Authenticator) Authenticate(ctx context.Context) (context.Context, error) {
	if tok, err := auth.AuthFromMD(ctx, "bearer"); err == nil && tok != "" {
		for known, name := range a.tokens {
			if subtle.ConstantTimeCompare([]byte(known), []byte(tok)) == 1 {
				return context.WithValue(ctx, principalKey{}, Principal{Name: name, Method: "token"}), nil
			}
		}
		if a.jwt != nil && strings.Count(tok, ".") == 2 {
			sub, err := a.verifyJWT(tok)
			if err != nil {
				// The parser's text (kid, claims) stays out of the answer.
				return nil, plainError(codes.Unauthenticated, ReasonUnauthenticated, "invalid bearer JWT (signature, expiry, issuer or audience)", nil)
			}
			return context.WithValue(ctx, principalKey{}, Principal{Name: sub, Method: "jwt"}), nil
		}
		return nil, plainError(codes.Unauthenticated, ReasonUnauthenticated, "invalid bearer token", nil)
	}
	if a.mtls {
		if p, ok := peer.FromContext(ctx); ok {
			if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 && len(ti.State.VerifiedChains[0]) > 0 {
				cert := ti.State.VerifiedChains[0][0]
				name := cert.Subject.CommonName
				if name == "" {
					name = cert.Subject.String()
				}
				return context.WithValue(ctx, principalKey{}, Principal{Name: name, Method: "mtls"}), nil
			}
		}
	}
	return nil, plainError(codes.Unauthenticated, ReasonUnauthenticated, "credentials required: an \"authorization: Bearer …\" header or a client certificate", nil)
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
type Authorizer struct {
	rules  []Rule
	admins []string
}

// NewAuthorizer returns an authorizer over rules; admins are globs over the
// principals that may use AdminService.
func NewAuthorizer(rules []Rule, admins []string) *Authorizer {
	return &Authorizer{rules: rules, admins: admins}
}

// AdminAllowed reports whether the caller of ctx may use AdminService: with
// authentication configured, only principals matching an admins glob.
func (a *Authorizer) AdminAllowed(ctx context.Context) bool {
	if a == nil {
		return true
	}
	p, ok := PrincipalFrom(ctx)
	return ok && globMatch(a.admins, p.Name)
}

func globMatch(patterns []string, s string) bool {
	return slices.ContainsFunc(patterns, func(g string) bool { ok, _ := path.Match(g, s); return ok })
}

// Allowed reports whether the caller of ctx may see and call tool.
func (a *Authorizer) Allowed(ctx context.Context, tool string) bool {
	if a == nil || len(a.rules) == 0 {
		return true
	}
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return false
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

// filter returns a predicate for the caller of ctx, or nil when every tool
// is allowed (the fast path).
func (a *Authorizer) filter(ctx context.Context) func(tool string) bool {
	if a == nil || len(a.rules) == 0 {
		return nil
	}
	return func(tool string) bool { return a.Allowed(ctx, tool) }
}
