package authtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the in-memory op.Storage (and op.TokenExchangeStorage) of a
// Server. One mutex guards everything: this is a test fixture, and its
// throughput is bounded by the RSA signatures, not the lock.
type storage struct {
	cfg     Config
	key     *rsa.PrivateKey
	keyID   string
	clients map[string]*client

	mu            sync.Mutex
	authRequests  map[string]*authRequest // by id
	codes         map[string]string       // code → auth request id
	accessTokens  map[string]*accessToken // by id (the JWT's jti)
	refreshTokens map[string]*refreshToken
	stats         Stats
}

type accessToken struct {
	id        string
	clientID  string
	subject   string
	audience  []string
	scopes    []string
	refreshID string
	expires   time.Time
}

type refreshToken struct {
	token    string
	clientID string
	subject  string
	audience []string
	scopes   []string
	authTime time.Time
	amr      []string
	accessID string
	expires  time.Time
}

func newStorage(cfg Config) (*storage, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &storage{
		cfg: cfg, key: key, keyID: rand.Text()[:12], clients: map[string]*client{},
		authRequests: map[string]*authRequest{}, codes: map[string]string{},
		accessTokens: map[string]*accessToken{}, refreshTokens: map[string]*refreshToken{},
		stats: Stats{Refreshes: map[string]int{}, Exchanges: map[string]int{}, ExchangesRefused: map[string]int{}},
	}
	for _, c := range cfg.Clients {
		s.clients[c.ID] = &client{ClientConfig: c, cfg: &s.cfg}
	}
	return s, nil
}

// notFound is the storage's "no such thing" error; op treats an error
// implementing IsNotFound as a client error, not a server fault.
type notFound string

func (e notFound) Error() string { return string(e) + " not found" }
func (notFound) IsNotFound()     {}

// --- op.AuthStorage ---

func (s *storage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	if len(r.Prompt) == 1 && r.Prompt[0] == oidc.PromptNone {
		return nil, oidc.ErrLoginRequired()
	}
	if r.CodeChallenge == "" || r.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		// OAuth 2.1 and MCP: PKCE with S256 for every client.
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge with method S256 is required")
	}
	ar := &authRequest{
		id: rand.Text(), created: time.Now(), clientID: r.ClientID, redirectURI: r.RedirectURI, state: r.State,
		nonce: r.Nonce, scopes: r.Scopes, responseType: r.ResponseType, responseMode: r.ResponseMode, subject: userID,
	}
	if r.CodeChallenge != "" {
		ar.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	if c := s.clients[r.ClientID]; c != nil {
		ar.audience = c.audience()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authRequests[ar.id] = ar
	return ar, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ar, ok := s.authRequests[id]; ok {
		return ar, nil
	}
	return nil, notFound("auth request")
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, notFound("code")
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.authRequests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

// completeLogin marks the auth request id as authenticated by username.
func (s *storage) completeLogin(id, username string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ar, ok := s.authRequests[id]
	if !ok {
		return notFound("auth request")
	}
	ar.subject, ar.done, ar.authTime = username, true, time.Now()
	return nil
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.newAccessTokenLocked(clientOf(req), req.GetSubject(), req.GetAudience(), req.GetScopes(), "")
	return at.id, at.expires, nil
}

func (s *storage) CreateAccessAndRefreshTokens(_ context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if current == "" {
		rt := &refreshToken{token: rand.Text(), clientID: clientOf(req), subject: req.GetSubject(),
			audience: req.GetAudience(), scopes: req.GetScopes(), expires: time.Now().Add(s.cfg.RefreshTTL)}
		if r, ok := req.(interface{ GetAuthTime() time.Time }); ok {
			rt.authTime = r.GetAuthTime()
		}
		at := s.newAccessTokenLocked(rt.clientID, rt.subject, rt.audience, rt.scopes, rt.token)
		rt.accessID = at.id
		s.refreshTokens[rt.token] = rt
		return at.id, rt.token, at.expires, nil
	}
	// Rotation (RFC 6819 §5.2.2.3): the old refresh token and the access
	// token issued with it die; a second use of the old one fails.
	rt, ok := s.refreshTokens[current]
	if !ok {
		return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("refresh token unknown or already used")
	}
	delete(s.refreshTokens, current)
	delete(s.accessTokens, rt.accessID)
	if time.Now().After(rt.expires) {
		return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("refresh token expired")
	}
	s.stats.Refreshes[rt.subject]++
	rt.token, rt.expires = rand.Text(), time.Now().Add(s.cfg.RefreshTTL)
	at := s.newAccessTokenLocked(rt.clientID, rt.subject, rt.audience, rt.scopes, rt.token)
	rt.accessID = at.id
	s.refreshTokens[rt.token] = rt
	return at.id, rt.token, at.expires, nil
}

func (s *storage) newAccessTokenLocked(clientID, subject string, audience, scopes []string, refresh string) *accessToken {
	at := &accessToken{id: rand.Text(), clientID: clientID, subject: subject, audience: audience, scopes: scopes,
		refreshID: refresh, expires: time.Now().Add(s.cfg.AccessTTL)}
	s.accessTokens[at.id] = at
	s.stats.AccessTokens++
	return at
}

func (s *storage) TokenRequestByRefreshToken(_ context.Context, token string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refreshTokens[token]
	if !ok || time.Now().After(rt.expires) {
		return nil, oidc.ErrInvalidGrant().WithDescription("refresh token unknown, used or expired")
	}
	return &refreshRequest{rt: *rt}, nil
}

func (s *storage) TerminateSession(_ context.Context, userID, clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, at := range s.accessTokens {
		if at.subject == userID && at.clientID == clientID {
			delete(s.accessTokens, id)
		}
	}
	for tok, rt := range s.refreshTokens {
		if rt.subject == userID && rt.clientID == clientID {
			delete(s.refreshTokens, tok)
		}
	}
	return nil
}

func (s *storage) GetRefreshTokenInfo(_ context.Context, _ string, token string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refreshTokens[token]
	if !ok {
		return "", "", op.ErrInvalidRefreshToken
	}
	return rt.subject, rt.token, nil
}

// RevokeToken (RFC 7009): an access token's id, or a refresh token, which
// also kills the access token issued with it. An unknown token is no
// error (the RFC: the client cannot do anything about it).
func (s *storage) RevokeToken(_ context.Context, tokenOrID, _ string, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.accessTokens[tokenOrID]; ok {
		if at.clientID != clientID {
			return oidc.ErrInvalidClient().WithDescription("token was not issued to this client")
		}
		delete(s.accessTokens, tokenOrID)
		s.stats.Revocations++
		return nil
	}
	if rt, ok := s.refreshTokens[tokenOrID]; ok {
		if rt.clientID != clientID {
			return oidc.ErrInvalidClient().WithDescription("token was not issued to this client")
		}
		delete(s.refreshTokens, tokenOrID)
		delete(s.accessTokens, rt.accessID)
		s.stats.Revocations++
	}
	return nil
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return signingKey{s}, nil }

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) { return []op.Key{publicKey{s}}, nil }

// --- op.OPStorage ---

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	if c, ok := s.clients[id]; ok {
		return c, nil
	}
	return nil, notFound("client")
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	c, ok := s.clients[id]
	if !ok || c.Secret == "" || c.Secret != secret {
		return errors.New("client unknown or secret wrong")
	}
	return nil
}

// ClientCredentials implements op.ClientCredentialsStorage: a client with
// a secret authenticates as itself.
func (s *storage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(ctx, id, secret); err != nil {
		return nil, err
	}
	return s.clients[id], nil
}

// ClientCredentialsTokenRequest implements op.ClientCredentialsStorage:
// the token's subject is the client, its audience the client's.
func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, notFound("client")
	}
	return &clientCredentialsRequest{clientID: id, audience: c.audience(), scopes: scopes}, nil
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

func (s *storage) SetUserinfoFromRequest(_ context.Context, ui *oidc.UserInfo, r op.IDTokenRequest, _ []string) error {
	ui.Subject, ui.PreferredUsername = r.GetSubject(), r.GetSubject()
	return nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, ui *oidc.UserInfo, _, subject, _ string) error {
	ui.Subject, ui.PreferredUsername = subject, subject
	return nil
}

func (s *storage) SetIntrospectionFromToken(_ context.Context, ir *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	s.mu.Lock()
	at, ok := s.accessTokens[tokenID]
	s.mu.Unlock()
	if !ok || time.Now().After(at.expires) {
		return nil // inactive
	}
	ir.Active, ir.Subject, ir.ClientID, ir.Scope = true, subject, at.clientID, at.scopes
	ir.Audience, ir.Expiration = at.audience, oidc.FromTime(at.expires)
	_ = clientID
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, notFound("client key")
}

func (s *storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}

func (s *storage) Health(context.Context) error { return nil }

// --- op.TokenExchangeStorage (RFC 8693) ---

// ValidateTokenExchangeRequest decides an exchange: the subject token must
// be an access token this server issued (op verified its signature, issuer
// and expiry before calling this), its subject must not be refused
// (Config.RefuseExchange), and an audience must be named and allowed
// (Config.ExchangeAudiences, when set). The issued token is an access
// token (no refresh token) unless another type is asked for.
func (s *storage) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	if req.GetRequestedTokenType() == "" {
		req.SetRequestedTokenType(oidc.AccessTokenType)
	}
	if req.GetExchangeSubjectTokenType() != oidc.AccessTokenType {
		return oidc.ErrInvalidRequest().WithDescription("subject_token_type must be an access token")
	}
	if req.GetRequestedTokenType() != oidc.AccessTokenType {
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are issued by exchange")
	}
	sub := req.GetExchangeSubject()
	if slices.Contains(s.cfg.RefuseExchange, sub) {
		s.mu.Lock()
		s.stats.ExchangesRefused[sub]++
		s.mu.Unlock()
		return oidc.ErrAccessDenied().WithDescription("this subject may not be delegated")
	}
	aud := req.GetAudience()
	if len(aud) == 0 {
		return oidc.ErrInvalidTarget().WithDescription("audience is required")
	}
	if len(s.cfg.ExchangeAudiences) > 0 {
		for _, a := range aud {
			if !slices.Contains(s.cfg.ExchangeAudiences, a) {
				return oidc.ErrInvalidTarget().WithDescription("audience not allowed")
			}
		}
	}
	for _, r := range req.GetResourses() {
		if len(s.cfg.ExchangeAudiences) > 0 && !slices.Contains(s.cfg.ExchangeAudiences, r) {
			return oidc.ErrInvalidTarget().WithDescription("resource not allowed")
		}
	}
	return nil
}

func (s *storage) CreateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Exchanges[req.GetExchangeSubject()]++
	return nil
}

// GetPrivateClaimsFromTokenExchangeRequest adds the acting party (RFC 8693
// §4.1 "act": the client that exchanged) so an upstream can tell a
// delegated token from one its user got directly.
func (s *storage) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	claims := map[string]any{"act": map[string]any{"sub": req.GetClientID()}}
	if res := req.GetResourses(); len(res) > 0 {
		claims["resource"] = res
	}
	return claims, nil
}

func (s *storage) SetUserinfoFromTokenExchangeRequest(_ context.Context, ui *oidc.UserInfo, req op.TokenExchangeRequest) error {
	ui.Subject = req.GetSubject()
	return nil
}

func (s *storage) snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Refreshes, st.Exchanges, st.ExchangesRefused = clone(st.Refreshes), clone(st.Exchanges), clone(st.ExchangesRefused)
	st.LiveRefreshTokens = len(s.refreshTokens)
	return st
}

func clone(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// clientOf is the client a token request is for.
func clientOf(req op.TokenRequest) string {
	if r, ok := req.(interface{ GetClientID() string }); ok {
		return r.GetClientID()
	}
	return ""
}

type signingKey struct{ s *storage }

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.s.key }
func (k signingKey) ID() string                                  { return k.s.keyID }

type publicKey struct{ s *storage }

func (k publicKey) ID() string                         { return k.s.keyID }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.s.key.PublicKey }
