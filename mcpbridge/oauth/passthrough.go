package oauth

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ErrNotForUpstream: a caller's token does not name the upstream in its
// audience, so passthrough does not forward it (PERMISSION_DENIED at the
// edge): a token meant for toolsvc alone is never replayed to a third
// party.
var ErrNotForUpstream = errors.New("oauth: the caller's token is not meant for this upstream")

// PassthroughAllowed reports whether the caller's bearer token may be
// forwarded to an upstream in credentials mode passthrough: it must be a
// JWT, unexpired, whose aud contains audience. The signature is not
// checked here (toolsvc's caller authentication verified it, and the
// upstream verifies it again); this check only decides where the token
// may go. The error never contains the token.
func PassthroughAllowed(token, audience string, now time.Time) error {
	if token == "" {
		return fmt.Errorf("%w: the caller presented no token", ErrNotForUpstream)
	}
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		return fmt.Errorf("%w: not a JWT", ErrNotForUpstream)
	}
	if claims.ExpiresAt == nil || !now.Before(claims.ExpiresAt.Time) {
		return fmt.Errorf("%w: expired or without an expiry", ErrNotForUpstream)
	}
	if !slices.Contains([]string(claims.Audience), audience) {
		return fmt.Errorf("%w: its audience does not include %q", ErrNotForUpstream, audience)
	}
	return nil
}
