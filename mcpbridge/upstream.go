package mcpbridge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is the supervision state of an upstream.
type State int

const (
	StateConnecting State = iota + 1
	StateReady
	StateDegraded
	StateDown
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateReady:
		return "ready"
	case StateDegraded:
		return "degraded"
	case StateDown:
		return "down"
	}
	return "unknown"
}

// ServerStatus is a point-in-time report on one upstream.
type ServerStatus struct {
	Name            string
	Transport       Transport
	State           State
	ToolCount       int
	ConnectCount    int64
	RefreshCount    int64
	LastRefreshTime time.Time
	// LastRefreshOK is meaningful only when LastRefreshTime is set.
	LastRefreshOK   bool
	LastError       string
	ProtocolVersion string
	Warnings        []string
}

// closeWatchdog bounds how long teardown waits for ClientSession.Close,
// which can block on a stuck notification handler (go-sdk-facts.md §0.3).
const closeWatchdog = 5 * time.Second

// upstream supervises the sessions to one MCP server: connect, list,
// publish, refresh on list_changed, and reconnect with backoff when the
// session dies.
type upstream struct {
	cfg    ServerConfig
	prefix string
	b      *Bridge
	log    *slog.Logger
	http   *http.Client // shared by the upstream's sessions; nil for stdio

	sess atomic.Pointer[session] // the session calls go to; nil when none

	mu     sync.Mutex // guards status
	status ServerStatus

	firstAttempt sync.Once
}

func newUpstream(b *Bridge, cfg ServerConfig) *upstream {
	u := &upstream{
		cfg:    cfg,
		prefix: ServerPrefix(cfg.Name),
		b:      b,
		log:    b.log.With("server", cfg.Name),
		status: ServerStatus{Name: cfg.Name, Transport: cfg.Transport, State: StateConnecting},
	}
	if cfg.Transport == TransportStreamableHTTP && cfg.NewTransport == nil {
		u.http = newHTTPClient(cfg.Headers)
	}
	return u
}

// run is the supervisor loop. It returns when the bridge closes.
func (u *upstream) run() {
	ctx := u.b.ctx
	for attempt := 0; ; attempt++ {
		u.setState(StateConnecting, "")
		s, err := u.connect(ctx)
		if err == nil {
			err = u.serve(s)
			if err == nil {
				attempt = 0 // the session was established and served
			}
		}
		u.firstAttempt.Do(u.b.upstreamAttempted)
		if ctx.Err() != nil {
			u.setState(StateDown, "")
			return
		}
		msg := ""
		if err != nil {
			msg = u.redact(err.Error())
			u.log.Warn("upstream session ended", "error", msg)
		}
		u.setState(StateDown, msg)
		u.b.catalog.setAvailable(u.cfg.Name, false)
		delay := backoff(u.cfg.BackoffBase, u.cfg.BackoffMax, attempt)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			u.setState(StateDown, "")
			return
		case <-t.C:
		}
	}
}

// backoff is full-jitter exponential backoff: uniform in [0, min(max, base*2^attempt)].
func backoff(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	if d <= 0 {
		return 0
	}
	return rand.N(d) + 1
}

// session is one live connection to the upstream.
type session struct {
	u   *upstream
	id  int64 // connect number, 1-based
	cs  *mcp.ClientSession
	cmd *exec.Cmd // stdio only

	ctx    context.Context // cancelled at teardown
	cancel context.CancelFunc

	dirty chan struct{} // capacity 1: "the tool list may have changed"

	deadOnce sync.Once
	dead     chan struct{}
	deadErr  error

	progress sync.Map // token string -> func(Progress)
	seq      atomic.Uint64

	wg sync.WaitGroup // refresher and Wait watcher
}

// markDirty is the whole of the list_changed handler: a non-blocking send.
// go-sdk runs notification handlers one at a time per session, and Close
// waits for a running one, so a handler must never block or do I/O.
func (s *session) markDirty() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

func (s *session) markDead(err error) {
	s.deadOnce.Do(func() {
		if err == nil {
			err = errors.New("session closed")
		}
		s.deadErr = err
		close(s.dead)
	})
}

func (s *session) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// Progress is one progress notification for a call.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

func (s *session) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	if f, ok := s.progress.Load(tok); ok {
		f.(func(Progress))(Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
	}
}

func (u *upstream) connect(ctx context.Context) (*session, error) {
	u.mu.Lock()
	id := u.status.ConnectCount + 1
	u.mu.Unlock()
	s := &session{u: u, id: id, dirty: make(chan struct{}, 1), dead: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(ctx)
	// One client per session: the handlers close over this session, so a
	// notification that arrives before Connect returns still finds it.
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsvc", Version: Version}, &mcp.ClientOptions{
		Capabilities:                &mcp.ClientCapabilities{},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.markDirty() },
		ProgressNotificationHandler: s.onProgress,
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
	})
	t, err := u.newTransport(s)
	if err != nil {
		s.cancel()
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, u.cfg.ConnectTimeout)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if u.cfg.ProtocolVersion != ProtocolLatest {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: u.cfg.ProtocolVersion}
	}
	cs, err := client.Connect(cctx, t, opts)
	if err != nil {
		s.killGroup()
		s.cancel()
		if ctx.Err() == nil && cctx.Err() != nil {
			return nil, fmt.Errorf("connect: timed out after %s", u.cfg.ConnectTimeout)
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	s.cs = cs
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.markDead(cs.Wait())
	}()
	u.mu.Lock()
	u.status.ConnectCount = id
	if ir := cs.InitializeResult(); ir != nil {
		u.status.ProtocolVersion = ir.ProtocolVersion
	}
	u.mu.Unlock()
	u.log.Info("upstream connected", "session", id)
	return s, nil
}

// serve lists the tools of a new session, publishes them, and keeps them
// fresh until the session dies or the bridge closes. It tears the session
// down before returning.
func (u *upstream) serve(s *session) error {
	defer u.teardown(s)
	// Calls may use the session while it lists: it is live.
	u.sess.Store(s)
	if err := s.refresh(); err != nil {
		return err
	}
	u.setState(StateReady, "")
	u.firstAttempt.Do(u.b.upstreamAttempted)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.refresher()
	}()
	select {
	case <-s.dead:
		return fmt.Errorf("session lost: %w", s.deadErr)
	case <-s.ctx.Done():
		return nil
	}
}

func (u *upstream) teardown(s *session) {
	u.sess.CompareAndSwap(s, nil)
	s.cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.cs.Close()
	}()
	t := time.NewTimer(closeWatchdog)
	select {
	case <-done:
		t.Stop()
	case <-t.C:
		// The Close goroutine is abandoned: it holds only this session and
		// ends once the killed process's pipes close.
		u.log.Warn("upstream session close timed out; killing", "after", closeWatchdog)
	}
	s.killGroup()
	s.markDead(nil)
	s.wg.Wait()
}

// refresher re-lists the session's tools after list_changed marks, after a
// trailing debounce, and periodically as a backstop for lost pushes.
func (s *session) refresher() {
	var tick <-chan time.Time
	if iv := s.u.cfg.RefreshInterval; iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	}
	var retry <-chan time.Time
	failures := 0
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.dead:
			return
		case <-s.dirty:
			if !s.debounce() {
				return
			}
		case <-tick:
		case <-retry:
		}
		retry = nil
		if err := s.refresh(); err != nil {
			if s.ctx.Err() != nil || s.isDead() {
				return
			}
			failures++
			retry = time.After(backoff(s.u.cfg.BackoffBase, s.u.cfg.BackoffMax, failures))
			continue
		}
		failures = 0
	}
}

// debounce waits until marks have been quiet for RefreshDebounce, but no
// longer than RefreshMaxDelay after the first one. It consumes the marks.
func (s *session) debounce() bool {
	quiet := time.NewTimer(s.u.cfg.RefreshDebounce)
	defer quiet.Stop()
	deadline := time.NewTimer(s.u.cfg.RefreshMaxDelay)
	defer deadline.Stop()
	for {
		select {
		case <-s.dirty:
			quiet.Reset(s.u.cfg.RefreshDebounce)
		case <-quiet.C:
			return true
		case <-deadline.C:
			return true
		case <-s.ctx.Done():
			return false
		case <-s.dead:
			return false
		}
	}
}

// refresh lists every page of tools and publishes them. The dirty mark is
// drained first, so a push that lands during the listing causes exactly one
// more pass.
func (s *session) refresh() error {
	select {
	case <-s.dirty:
	default:
	}
	u := s.u
	ctx, cancel := context.WithTimeout(s.ctx, u.cfg.RefreshTimeout)
	defer cancel()
	var tools []*mcp.Tool
	var err error
	if ir := s.cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Tools != nil {
		for t, lerr := range s.cs.Tools(ctx, nil) {
			if lerr != nil {
				err = lerr
				break
			}
			tools = append(tools, t)
		}
	}
	n := 0
	if err == nil {
		n, err = u.b.catalog.setServer(u.cfg.Name, u.prefix, tools, true)
	}
	now := time.Now()
	u.mu.Lock()
	u.status.LastRefreshTime = now
	u.status.LastRefreshOK = err == nil
	if err == nil {
		u.status.RefreshCount++
		u.status.ToolCount = n
	} else {
		if ctx.Err() != nil && s.ctx.Err() == nil {
			err = fmt.Errorf("tools/list timed out after %s", u.cfg.RefreshTimeout)
		}
		u.status.LastError = u.redact(err.Error())
	}
	u.mu.Unlock()
	if err != nil {
		if isSessionDead(err) {
			s.markDead(err)
		}
		u.log.Warn("tools/list failed", "error", u.redact(err.Error()))
		return fmt.Errorf("tools/list: %w", err)
	}
	u.log.Debug("tools listed", "tools", n)
	return nil
}

func (u *upstream) setState(st State, lastError string) {
	u.mu.Lock()
	u.status.State = st
	if lastError != "" {
		u.status.LastError = lastError
	}
	u.mu.Unlock()
}

func (u *upstream) statusSnapshot() ServerStatus {
	u.mu.Lock()
	st := u.status
	u.mu.Unlock()
	st.Warnings = u.b.catalog.Warnings(u.cfg.Name)
	return st
}

// redact removes configured secrets (URL, header and env values) from a
// message before it is logged or reported.
func (u *upstream) redact(msg string) string {
	if u.cfg.URL != "" {
		msg = strings.ReplaceAll(msg, u.cfg.URL, "<upstream-url>")
	}
	for _, v := range u.cfg.Headers {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "<redacted>")
		}
	}
	for _, v := range u.cfg.Env {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "<redacted>")
		}
	}
	return msg
}

// isSessionDead reports whether err means the session's transport is gone
// (as opposed to a protocol error on a live session).
func isSessionDead(err error) bool {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch {
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, mcp.ErrSessionMissing),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "rejected by transport") || strings.Contains(msg, "connection closed") ||
		strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset") || strings.Contains(msg, "connection refused")
}

func (u *upstream) newTransport(s *session) (mcp.Transport, error) {
	if u.cfg.NewTransport != nil {
		return u.cfg.NewTransport()
	}
	switch u.cfg.Transport {
	case TransportStdio:
		cmd := exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Dir = u.cfg.Dir
		cmd.Env = os.Environ()
		for k, v := range u.cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		// Own process group, so teardown can kill wrappers' grandchildren
		// (npx, sh -c); die with toolsvc.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Stderr = &stderrLogger{log: u.log}
		cmd.WaitDelay = 2 * time.Second
		s.cmd = cmd
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: DefaultTerminateGrace}, nil
	case TransportStreamableHTTP:
		return &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.http, MaxRetries: 1}, nil
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

// stderrLogger logs a child's stderr line by line at Debug.
type stderrLogger struct {
	log *slog.Logger
	buf []byte
}

func (w *stderrLogger) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		w.log.Debug("upstream stderr", "line", string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > bufio.MaxScanTokenSize {
		w.log.Debug("upstream stderr", "line", string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
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
