package oauth

import (
	"errors"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ErrNotForUpstream: a caller's token does not name the upstream in its
// audience, so passthrough does not forward it (PERMISSION_DENIED at the
// edge): a token meant for toolsvc alone is never replayed to a third
// party.
var ErrNotForUpstream = errors.New("oauth: the caller's token is not meant for this upstream")

// Why PassthroughAllowed refused a token (PassthroughError.Code): stable
// codes, the edge's metadata "oauth_error".
const (
	PassthroughNoToken          = "no_subject_token"
	PassthroughNotJWT           = "not_a_jwt"
	PassthroughExpired          = "token_expired"
	PassthroughAudienceMismatch = "audience_mismatch"
)

// PassthroughError is PassthroughAllowed's refusal: Code says why. It is
// ErrNotForUpstream (errors.Is) and never contains the token.
type PassthroughError struct {
	Code     string
	Audience string
}

func (e *PassthroughError) Error() string {
	return ErrNotForUpstream.Error() + ": " + PassthroughReason(e.Code)
}

// Is makes a PassthroughError ErrNotForUpstream.
func (e *PassthroughError) Is(target error) bool { return target == ErrNotForUpstream }

// PassthroughReason is the explanation of a PassthroughError code.
func PassthroughReason(code string) string {
	switch code {
	case PassthroughNoToken:
		return "the caller presented no token"
	case PassthroughNotJWT:
		return "it is not a JWT"
	case PassthroughExpired:
		return "it is expired or has no expiry"
	case PassthroughAudienceMismatch:
		return "its audience (aud) does not name this upstream (credentials.audience)"
	}
	return code
}

// PassthroughAllowed reports whether the caller's bearer token may be
// forwarded to an upstream in credentials mode passthrough: it must be a
// JWT, unexpired, whose aud contains audience. The signature is not
// checked here (toolsvc's caller authentication verified it, and the
// upstream verifies it again); this check only decides where the token
// may go. A refusal is a *PassthroughError; it never contains the token.
func PassthroughAllowed(token, audience string, now time.Time) error {
	if token == "" {
		return &PassthroughError{Code: PassthroughNoToken, Audience: audience}
	}
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		return &PassthroughError{Code: PassthroughNotJWT, Audience: audience}
	}
	if claims.ExpiresAt == nil || !now.Before(claims.ExpiresAt.Time) {
		return &PassthroughError{Code: PassthroughExpired, Audience: audience}
	}
	if !slices.Contains([]string(claims.Audience), audience) {
		return &PassthroughError{Code: PassthroughAudienceMismatch, Audience: audience}
	}
	return nil
}
