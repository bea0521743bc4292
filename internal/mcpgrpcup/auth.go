package mcpgrpcup

import (
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
)

// authState is what the upstream's latest connect probe or list answered
// about toolsvc's credentials, reported to the bridge as the transport's
// mcpbridge.AuthReporter: a refused token request, UNAUTHENTICATED or
// PERMISSION_DENIED is an authentication problem the bridge holds for
// authRetry (as an HTTP upstream's 401/403), not a crash retried with
// the crash backoff. Only the probe and the lists count: they refuse for
// the credentials alone, where a call refused PERMISSION_DENIED may be the
// upstream's rule for one tool, which says nothing of the session.
type authState struct {
	oauth *oauth.Handler         // the transport's handler, or nil
	why   atomic.Pointer[string] // nil after an answer that was not a refusal
}

// observe records the outcome of a probe or list RPC. Another failure
// (the upstream unreachable, an internal error) leaves the record as it
// was, as authWatch keeps a 401 across a 5xx.
func (a *authState) observe(err error) {
	var why string
	switch status.Code(err) {
	case codes.OK:
		if a.why.Load() != nil {
			a.why.Store(nil)
		}
		return
	case codes.Unauthenticated:
		why = "the upstream answered UNAUTHENTICATED"
	case codes.PermissionDenied:
		why = "the upstream answered PERMISSION_DENIED"
	default:
		return
	}
	// grpc-go fails the RPC UNAUTHENTICATED with the token request's error
	// (oauthCreds) before sending it: the handler's failure is the cause.
	if a.oauth != nil {
		if f := a.oauth.Failure(); f != "" {
			why = f
		}
	}
	a.why.Store(&why)
}

// AuthRejected implements mcpbridge.AuthReporter.
func (a *authState) AuthRejected() string {
	if w := a.why.Load(); w != nil {
		return *w
	}
	return ""
}
