package mcpbridge

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionSource is where an upstream's requests find their session: the
// session for this request. An upstream has one source, chosen once by its
// credentials (newUpstream):
//
//   - sharedSession: one session at a time for every caller, kept by the
//     supervisor (run, supervisor.go); the shared credentials of the
//     server's configuration.
//   - principalSessions: a session per principal, created on its first
//     request and closed when idle (peruser.go, usersessions.go), each
//     carrying its principal's own token; listings published for every
//     caller or per principal (privaterelist.go).
//
// The request path (request.go) and everything sent through it — calls,
// reads, prompts, completions, subscriptions, tasks, interaction — asks the
// source and never asks which kind it is. What differs per kind (who
// supervises, which token a session's HTTP requests carry, where a listing
// goes, what the status shows) is a method of the source too.
type sessionSource interface {
	// run supervises the sessions until the upstream stops: the upstream's
	// goroutine (Bridge.startLocked).
	run()

	// admit checks the credential of ctx's caller (WithCaller) before the
	// request takes a slot of the upstream's concurrency limit: a refusal,
	// or a login to make, costs no slot. nil for shared credentials.
	admit(ctx context.Context) error
	// session is the session for ctx's request, held until done is called
	// (a held per-principal session is neither evicted nor swept).
	session(ctx context.Context) (s *session, done func(), err error)
	// again is the session to send a request once more on after old
	// expired upstream (HTTP 404: it never saw the request; old is dead).
	again(ctx context.Context, old *session) (s *session, done func(), err error)
	// current is the session ctx's request would go on now, if there is a
	// live one, neither created nor held: what a request can be decided
	// by without sending it (a capability the session lacks).
	current(ctx context.Context) *session

	// nextID numbers a session about to connect.
	nextID() int64
	// authorize wraps the HTTP transport of principal's requests (a
	// session's, or one sent by a session's id: taskforeign.go) so that
	// each carries the right credential.
	authorize(principal string, base http.RoundTripper) http.RoundTripper
	// listChanged follows a list_changed that marked s dirty (markDirty):
	// it never blocks.
	listChanged(s *session)
	// publish puts a tools listing made through s where it belongs, and
	// reports whether that is the shared catalog (whose tool count the
	// status shows).
	publish(s *session, tools []*mcp.Tool, taskSupport map[string]string) (n int, shared bool, err error)
	// listsResources reports whether a listing also lists resources,
	// templates and prompts.
	listsResources() bool

	// status adds the source's part of the server's status.
	status(st *ServerStatus)
	// unprimed reports whether principal's view misses this upstream's
	// tools until a session of principal's lists them (PrimeCaller); prime
	// creates that session and lists.
	unprimed(principal string) bool
	prime(ctx context.Context) error
	// privateFor reports whether the tools are listed per principal and
	// principal has no listing (toolviews.go).
	privateFor(principal string) bool
	// credentials is the per-user credential source (nil for shared
	// credentials): logins and logouts are the bridge's (logins.go).
	credentials() credentialSource
	// loggedOut ends what principal's old credential was used by.
	loggedOut(principal string)
}

// sessionAuth wraps a session's HTTP transport with the credential of its
// requests (transport.go).
func (u *upstream) sessionAuth(s *session, base http.RoundTripper) http.RoundTripper {
	return u.source.authorize(s.principal, base)
}

// sharedSession is the source of an upstream with shared credentials: the
// supervisor's session (u.sess), which every caller's request uses.
type sharedSession struct{ u *upstream }

func (sh sharedSession) run() { sh.u.runShared() }

func (sharedSession) admit(context.Context) error { return nil }

func (sh sharedSession) session(context.Context) (*session, func(), error) {
	u := sh.u
	s := u.sess.Load()
	if s == nil || s.isDead() {
		return nil, nil, &UnavailableError{Server: u.cfg.Name, Reason: ReasonNoSession, RetryAfter: u.nextConnectIn()}
	}
	return s, func() {}, nil
}

// again waits for the supervisor's next session, within ctx.
func (sh sharedSession) again(ctx context.Context, old *session) (*session, func(), error) {
	s, err := sh.u.waitSession(ctx, old)
	if err != nil {
		return nil, nil, err
	}
	return s, func() {}, nil
}

func (sh sharedSession) current(context.Context) *session {
	if s := sh.u.sess.Load(); s != nil && !s.isDead() {
		return s
	}
	return nil
}

// nextID: the supervisor connects one session at a time.
func (sh sharedSession) nextID() int64 {
	sh.u.mu.Lock()
	defer sh.u.mu.Unlock()
	return sh.u.status.ConnectCount + 1
}

// authorize: the server's configured headers and OAuth are the client's
// already (newHTTPClient, initAuth).
func (sharedSession) authorize(_ string, base http.RoundTripper) http.RoundTripper { return base }

// listChanged: the session's own refresher follows its marks.
func (sharedSession) listChanged(*session) {}

func (sh sharedSession) publish(_ *session, tools []*mcp.Tool, taskSupport map[string]string) (int, bool, error) {
	u := sh.u
	n, err := u.b.catalog.SetServerTasks(u.cfg.Name, u.names, tools, taskSupport, true)
	return n, true, err
}

func (sharedSession) listsResources() bool          { return true }
func (sharedSession) status(*ServerStatus)          {}
func (sharedSession) unprimed(string) bool          { return false }
func (sharedSession) prime(context.Context) error   { return nil }
func (sharedSession) privateFor(string) bool        { return false }
func (sharedSession) credentials() credentialSource { return nil }
func (sharedSession) loggedOut(string)              {}
