package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge/internal/origin"
)

// secretEnv matches names of environment variables that look like
// credentials; toolsvc does not hand its own such variables to stdio
// children unless a server lists them in envPassthrough.
var secretEnv = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|AUTH|COOKIE|SESSION|_KEY$|^KEY$)`)

// childEnv is toolsvc's environment without secret-looking variables (unless
// passed through), plus the server's configured env.
func childEnv(environ []string, passthrough []string, extra map[string]string) []string {
	out := make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if _, overridden := extra[name]; overridden {
			continue
		}
		if secretEnv.MatchString(name) && !slices.Contains(passthrough, name) {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

func (u *upstream) newTransport(s *session) (mcp.Transport, error) {
	if u.cfg.NewTransport != nil {
		return u.cfg.NewTransport()
	}
	switch u.cfg.Transport {
	case TransportGRPC:
		f := u.b.cfg.Transports[TransportGRPC]
		if f == nil {
			return nil, fmt.Errorf("no gRPC transport is registered in this binary")
		}
		t, err := f(u.cfg, u.maxMessage())
		if err == nil {
			u.watchAuth(t) // its refusals are held for authRetry (auth.go)
		}
		return t, err
	case TransportStdio:
		cmd := exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Dir = u.cfg.Dir
		cmd.Env = childEnv(os.Environ(), u.cfg.EnvPassthrough, u.cfg.Env)
		// Own process group, so teardown can kill wrappers' grandchildren
		// (npx, uvx, sh -c); die with toolsvc.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Stderr = newStderrLogger(u.log, u.redact)
		cmd.WaitDelay = 2 * time.Second
		s.cmd = cmd
		return &commandTransport{cmd: cmd, terminate: DefaultTerminateGrace, limit: u.maxMessage(), log: u.log, absorb: s.absorbListChanged}, nil
	case TransportSSE:
		// The endpoint event names where messages are POSTed; one naming
		// another origin is refused like a redirect there (originGuard).
		// Events are read through the message limit, as on streamable HTTP.
		hc := &http.Client{Transport: &originGuard{server: u.cfg.Name, origin: originOfURL(u.cfg.URL),
			base: &limitRoundTripper{base: u.http.Transport, limit: u.maxMessage(), log: u.log}}, CheckRedirect: u.checkRedirect}
		return &mcp.SSEClientTransport{Endpoint: u.cfg.URL, HTTPClient: hc, MaxEventSize: u.maxMessage() + frameSlack}, nil
	case TransportStreamableHTTP:
		// toolsvc's own streamable HTTP connection (streamhttp.go). The
		// session's client shares the upstream's connection pool, carries
		// its credentials (sessionAuth) and refuses redirects to another
		// origin (checkRedirect). MaxRetries 1: a dead upstream's standalone
		// SSE stream gives up in about 1.5 s (docs/interop.md); the bridge
		// reconnects itself. Every message is read through the message
		// limit (msglimit.go); the taps (tap.go) wrap the connection like
		// any other.
		hc := &http.Client{Transport: u.sessionAuth(s, u.http.Transport), CheckRedirect: u.checkRedirect}
		var az authorizer
		if u.oauth != nil {
			az = u.oauth
		}
		return &streamableTransport{endpoint: u.cfg.URL, client: hc, oauth: az, limit: u.maxMessage(),
			log: u.log, noStream: s.noStream, maxRetries: 1, hooks: streamHooks{
				push:        s.push,              // the push channel's streams (push.go)
				header:      taskHeader,          // a task's Mcp-Name (tasktap.go)
				keepSession: s.tasks.keepSession, // no DELETE while tasks live (tasktap.go)
				inputSchema: s.raw.inputSchema,   // x-mcp-header (streamhttp_headers.go)
			}}, nil
	}
	return nil, fmt.Errorf("unknown transport %v", u.cfg.Transport)
}

// commandTransport is go-sdk's CommandTransport with the child's stdout
// read through the message limiter (msglimit.go): go-sdk's own 16 MiB
// frame limit ends the session on an oversized line, where the limiter
// skips the line to its newline and answers its call with an error.
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	limit     int
	log       *slog.Logger
	absorb    func() bool // stdioTransport.absorb
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	st := limitedStdio(stdout, &childStdin{WriteCloser: stdin, cmd: t.cmd, terminate: t.terminate}, t.limit, t.log).(*stdioTransport)
	st.absorb = t.absorb
	return st.Connect(ctx)
}

// limitedStdio is the newline-delimited JSON transport over a child's
// stdout and stdin, stdout read through the line limiter (msglimit.go) and
// each line decoded once (stdioconn.go: toolsvc's own connection, not
// go-sdk's IOTransport). The connection is closed by closing stdin (the
// MCP shutdown sequence: childStdin), then stdout.
func limitedStdio(stdout io.ReadCloser, stdin io.WriteCloser, limit int, log *slog.Logger) mcp.Transport {
	return &stdioTransport{r: stdout, w: stdin, limit: limit, log: log}
}

// childStdin closes a stdio child the way the MCP specification asks
// (https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle#stdio):
// close its stdin, wait, SIGTERM, wait, SIGKILL; as go-sdk's CommandTransport.
type childStdin struct {
	io.WriteCloser
	cmd       *exec.Cmd
	terminate time.Duration
}

func (c *childStdin) Close() error {
	if err := c.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(c.terminate)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}

// killGroup SIGKILLs the stdio child's process group, if it was started.
func (s *session) killGroup() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// headerTransport adds configured headers to every request to the
// configured origin (go-sdk's streamable client has no header option).
// A request to any other origin (a legacy SSE endpoint event naming
// another host, say) goes without them: credentials belong to the origin
// the operator configured, never to one an upstream names.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	origin  string // scheme://host:port of the configured URL
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && origin.Of(r.URL) == t.origin {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

func newHTTPClient(headers map[string]string, endpoint string) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	// Long-lived streams (a session's standalone GET stream, or its
	// subscriptions/listen) hold their connection while idle, one per
	// session: with per-user sessions, thousands. They get connections of
	// their own with 1 KiB buffers instead of net/http's 4 KiB read and 4
	// KiB write buffers (an idle stream writes nothing and reads a
	// notification now and then); calls keep the default ones.
	newStreams := func() *http.Transport {
		streams := tr.Clone()
		streams.ReadBufferSize, streams.WriteBufferSize = 1<<10, 1<<10
		streams.MaxIdleConnsPerHost = 16
		return streams
	}
	// No Client.Timeout or ResponseHeaderTimeout: the streamable server sends
	// headers with its first event, so they would cut off silent long calls
	// (docs/upstream-behaviour.md §2). Every request carries a context
	// deadline instead.
	// A plain-HTTP stream gets a connection of its own without net/http's
	// two loops (ownConnStreams, streamdial.go); the others use streams',
	// made when first needed.
	own := &ownConnStreams{dial: dialer.DialContext, proxy: tr.Proxy, newFallback: newStreams}
	return &http.Client{Transport: &headerTransport{base: &streamSplit{calls: tr, streams: own}, headers: headers, origin: originOfURL(endpoint)}}
}

// streamSplit sends long-lived streams (longLivedStream, msglimit.go) over
// streams' connections and every other request over calls'.
type streamSplit struct {
	calls   *http.Transport
	streams *ownConnStreams
}

func (t *streamSplit) RoundTrip(r *http.Request) (*http.Response, error) {
	if longLivedStream(r) {
		return t.streams.RoundTrip(r)
	}
	return t.calls.RoundTrip(r)
}

// CloseIdleConnections closes both pools' idle connections.
func (t *streamSplit) CloseIdleConnections() {
	t.calls.CloseIdleConnections()
	t.streams.CloseIdleConnections()
}

// originOfURL is the origin of a configured URL ("" if it does not parse).
func originOfURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return origin.Of(u)
	}
	return ""
}

// checkRedirect is the CheckRedirect of an upstream's session clients: a
// redirect within the configured origin is followed, one to another origin
// is refused. net/http keeps Authorization on a redirect to the same host
// on another port (it compares host names only) and a round tripper's
// headers are set on every hop, so following would hand the server's
// headers and OAuth tokens to whatever host the upstream names; refusing
// rather than following without credentials also keeps the session from
// being established with a server the operator did not configure.
func (u *upstream) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= origin.MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", origin.MaxRedirects)
	}
	if to := origin.Of(req.URL); to != origin.Of(via[0].URL) {
		u.log.Warn("upstream redirected to another origin; refused (credentials are sent only to the configured origin)",
			"status", req.Response.StatusCode, "to", to)
		return &RedirectError{Server: u.cfg.Name, Status: req.Response.StatusCode, To: to}
	}
	return nil
}

// RedirectError is a redirect from the configured origin to another one,
// which toolsvc does not follow, or (Status 0) a legacy SSE endpoint event
// naming another origin.
type RedirectError struct {
	Server string
	Status int    // the redirect's HTTP status; 0 for an SSE endpoint event
	To     string // the target's origin (scheme://host:port, no path or userinfo)
}

func (e *RedirectError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("server %q: its SSE endpoint event names another origin (%s), refused: messages and credentials go only to the configured origin", e.Server, e.To)
	}
	return fmt.Sprintf("server %q: HTTP %d redirect to another origin (%s) refused: credentials are sent only to the configured origin", e.Server, e.Status, e.To)
}

// originGuard refuses requests to any origin but the configured one. The
// legacy SSE transport POSTs to whatever URL the server's endpoint event
// names; headerTransport would send such a request without the
// credentials, but the session (tool arguments and results) would still
// run with a server the operator did not configure.
type originGuard struct {
	base   http.RoundTripper
	server string
	origin string
}

func (g *originGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if to := origin.Of(r.URL); to != g.origin {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, &RedirectError{Server: g.server, To: to}
	}
	return g.base.RoundTrip(r)
}
