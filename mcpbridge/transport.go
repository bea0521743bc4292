package mcpbridge

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
		return &pushTransport{Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: DefaultTerminateGrace}, push: s.push}, nil
	case TransportSSE:
		return &mcp.SSEClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.http}, nil
	case TransportStreamableHTTP:
		// MaxRetries 1: a dead upstream's standalone SSE stream gives up in
		// about 1.5 s (docs/interop.md); the bridge reconnects itself. The
		// session's client shares the upstream's connection pool and
		// watches the push channel (push.go).
		hc := &http.Client{Transport: &rawRoundTripper{r: &s.raw, // exact schema text (rawschema.go)
			base: &pushRoundTripper{base: u.http.Transport, push: s.push}}}
		return &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: hc, MaxRetries: 1, OAuthHandler: u.oauthHandler()}, nil
	}
	return nil, fmt.Errorf("unknown transport %v", u.cfg.Transport)
}

// killGroup SIGKILLs the stdio child's process group, if it was started.
func (s *session) killGroup() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// headerTransport adds configured headers to every request (go-sdk's
// streamable client has no header option).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

func newHTTPClient(headers map[string]string) *http.Client {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	// No Client.Timeout or ResponseHeaderTimeout: the streamable server sends
	// headers with its first event, so they would cut off silent long calls
	// (go-sdk-facts.md §6). Every request carries a context deadline instead.
	return &http.Client{Transport: &headerTransport{base: tr, headers: headers}}
}
