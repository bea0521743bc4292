// Package mcpgrpcup reaches upstreams that serve the MCP gRPC binding
// (model_context_protocol.Mcp) as a go-sdk mcp.Transport, so the bridge
// (which imports no gRPC) drives them through its one request path like any
// other session: the composition root registers Factory for
// mcpbridge.TransportGRPC (docs/mcp-grpc.md "Upstreams that speak it").
//
// A connection answers the session's initialize itself (the binding has
// none) from what the upstream serves, turns each JSON-RPC request the
// session writes into the matching unary RPC, and each response back into
// the result go-sdk awaits: go-sdk's own value for a call, a read, a prompt
// or a completion (result.go), the JSON go-sdk decodes for the rest.
// Notifications to the upstream are
// dropped (the binding has none); a call's RPC runs under the call's own
// context, so a caller who gives up cancels it.
package mcpgrpcup

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Factory is the mcpbridge.TransportFactory of TransportGRPC.
func Factory(sc mcpbridge.ServerConfig, maxMessage int) (mcp.Transport, error) {
	target, tlsOn, err := parseTarget(sc.URL)
	if err != nil {
		return nil, err
	}
	md := metadata.MD{}
	for k, v := range sc.Headers {
		md.Append(strings.ToLower(k), v)
	}
	t := &Transport{Target: target, TLS: tlsOn, Metadata: md, MaxMessage: maxMessage, auth: &authState{}}
	if sc.TLS != nil {
		if t.TLSConfig, err = clientTLS(sc.TLS); err != nil {
			return nil, err
		}
	}
	if sc.OAuth != nil {
		u, _ := url.Parse(sc.URL)
		creds := newOAuthCreds(sc, mcpbridge.IsLoopbackHost(u.Hostname()))
		t.PerRPC, t.auth.oauth = creds, creds.h
	}
	return t, nil
}

// parseTarget splits grpc://host:port (plaintext) or grpcs://host:port
// (TLS, the system's roots) into grpc-go's target and whether TLS is on.
func parseTarget(raw string) (string, bool, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", false, fmt.Errorf("url: want grpc://host:port or grpcs://host:port")
	}
	switch u.Scheme {
	case "grpc":
		return u.Host, false, nil
	case "grpcs":
		return u.Host, true, nil
	}
	return "", false, fmt.Errorf("url: want the grpc or grpcs scheme, got %q", u.Scheme)
}

var _ mcpbridge.AuthReporter = (*Transport)(nil)

// Transport is one upstream's gRPC binding as an mcp.Transport: each
// Connect dials a new channel (a session of the bridge is one channel, so
// a reconnect after a lost upstream starts afresh).
type Transport struct {
	Target    string      // grpc-go's target, host:port
	TLS       bool        // TLS with the system's roots, or TLSConfig when set
	TLSConfig *tls.Config // a private CA, a client certificate (tls.go)
	// PerRPC, when set, adds each RPC's credentials (an oauth object's
	// token, oauth.go).
	PerRPC     credentials.PerRPCCredentials
	Metadata   metadata.MD // sent with every RPC (the configured headers); never logged
	MaxMessage int         // the bridge's bound on one received message

	auth *authState // refusals of its credentials (auth.go); nil: not reported
}

// AuthRejected implements mcpbridge.AuthReporter: why the upstream's
// latest connect probe or list refused toolsvc's credentials, or "".
func (t *Transport) AuthRejected() string {
	if t.auth == nil {
		return ""
	}
	return t.auth.AuthRejected()
}

// Connect dials the upstream, waits (within ctx) until the channel is
// ready, and asks which lists the upstream serves, so that a dead or
// refusing upstream fails the connect (the bridge's backoff and breaker
// count it) rather than the first call.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	creds := insecure.NewCredentials()
	if t.TLS {
		tc := t.TLSConfig
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		creds = credentials.NewTLS(tc)
	}
	// No idleness: grpc-go would take an unused channel out of Ready after
	// 30 minutes, which watch takes for a lost upstream.
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithIdleTimeout(0),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(max(t.MaxMessage, 1)))}
	if t.PerRPC != nil {
		opts = append(opts, grpc.WithPerRPCCredentials(t.PerRPC))
	}
	cc, err := grpc.NewClient(t.Target, opts...)
	if err != nil {
		return nil, fmt.Errorf("grpc upstream: %w", err)
	}
	c := &conn{cc: cc, client: pb.NewMcpClient(cc), health: healthpb.NewHealthClient(cc), md: t.Metadata, auth: t.auth, in: make(chan jsonrpc.Message, 16),
		done: make(chan struct{})}
	if err := c.waitReady(ctx); err != nil {
		cc.Close()
		return nil, err
	}
	if err := c.probe(ctx); err != nil {
		cc.Close()
		return nil, err
	}
	go c.watch()
	return c, nil
}

// conn is one session's channel.
type conn struct {
	cc     *grpc.ClientConn
	client pb.McpClient
	health healthpb.HealthClient // ping (a round trip)
	md     metadata.MD
	caps   mcp.ServerCapabilities
	auth   *authState // nil for a hand-built Transport

	in chan jsonrpc.Message // responses for Read
	// direct hands a response to go-sdk's waiting call (BindResponses);
	// nil: Read only. Set before the first Write.
	direct    func(*jsonrpc.Response) bool
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

func (c *conn) SessionID() string { return "" }

var _ mcp.DirectConnection = (*conn)(nil)

// BindResponses implements mcp.DirectConnection (a toolsvc patch of
// go-sdk): every response is made on the goroutine that wrote its request,
// which is the caller's, so deliver retires the call there and the caller
// goes on without go-sdk's reader goroutine in between (two hand-offs a
// call). The binding sends nothing but responses, so there is no order
// with other messages to keep.
func (c *conn) BindResponses(deliver func(*jsonrpc.Response) bool) { c.direct = deliver }

// waitReady connects the channel and waits until it is ready, or ctx ends,
// or it fails (a refused dial is a failure at once: the bridge's backoff
// decides when to try again, not grpc-go's).
func (c *conn) waitReady(ctx context.Context) error {
	c.cc.Connect()
	for {
		s := c.cc.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			return fmt.Errorf("grpc upstream %s: cannot connect%s", c.cc.Target(), connectCause(ctx, c.client))
		}
		if !c.cc.WaitForStateChange(ctx, s) {
			return fmt.Errorf("grpc upstream %s: not ready: %w", c.cc.Target(), ctx.Err())
		}
	}
}

// watch ends the session once the channel leaves Ready (the upstream went
// away: grpc-go's channel goes idle or into transient failure), so the
// bridge sees the session lost and reconnects with its own backoff.
func (c *conn) watch() {
	for c.cc.WaitForStateChange(context.Background(), connectivity.Ready) {
		select {
		case <-c.done:
			return
		default:
		}
		c.Close()
		return
	}
}

// probe asks for each list once: a list the upstream does not serve
// (UNIMPLEMENTED) is a capability it does not have. Tools are always
// declared; a refusal of ListTools fails the connect.
func (c *conn) probe(ctx context.Context) error {
	ctx = c.outgoing(ctx)
	_, err := c.client.ListTools(ctx, &pb.ListToolsRequest{})
	c.observeAuth(err)
	if err != nil {
		return fmt.Errorf("grpc upstream: ListTools: %w", err)
	}
	c.caps.Tools = &mcp.ToolCapabilities{ListChanged: false}
	if _, err := c.client.ListResources(ctx, &pb.ListResourcesRequest{}); status.Code(err) != codes.Unimplemented {
		c.caps.Resources = &mcp.ResourceCapabilities{}
	}
	if _, err := c.client.ListPrompts(ctx, &pb.ListPromptsRequest{}); status.Code(err) != codes.Unimplemented {
		c.caps.Prompts = &mcp.PromptCapabilities{}
	}
	if c.caps.Resources != nil || c.caps.Prompts != nil {
		c.caps.Completions = &mcp.CompletionCapabilities{}
	}
	return nil
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.closeErr = c.cc.Close() // fails the RPCs in flight (CANCELED)
	})
	return nil
}

// Write takes a request or notification from the session. A request runs
// as one RPC on the writing goroutine, under the caller's context (go-sdk
// registers the call before writing it and writes concurrently, so a write
// may last as long as its call); its response retires the call right there
// (deliver). A goroutine per request measured no faster and is one more
// hand-off.
//
// Cancellation needs nothing of its own: go-sdk writes a call under the
// caller's context and sends notifications/cancelled only once that
// context is done, after Write has returned (Connection.Call writes
// before it awaits), so the context has cancelled the RPC already. The
// notification is dropped like every other (a per-call cancel func and a
// map of them by request id cost 6 allocations a call and never fired
// first).
func (c *conn) Write(ctx context.Context, m jsonrpc.Message) error {
	select {
	case <-c.done:
		return io.EOF
	default:
	}
	req, ok := m.(*jsonrpc.Request)
	if !ok {
		return nil // a response to a server request: the binding sends none
	}
	if !req.ID.IsValid() {
		return nil // a notification: the binding has none
	}
	switch req.Method {
	case "initialize":
		return c.reply(req.ID, c.initialize(req.Params))
	case "ping":
		if err := c.ping(ctx); err != nil {
			if callersDeadline(ctx, err) {
				return ctx.Err() // no answer within the prober's timeout: as a call the caller gave up
			}
			// No answer, and the channel failed (watch ends the session):
			// a JSON-RPC error here would read as the upstream's answer.
			return fmt.Errorf("grpc upstream: ping: %w", err)
		}
		return c.deliver(response(req.ID, struct{}{}, nil))
	}
	h, ok := handlers[req.Method]
	if !ok {
		return c.deliver(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("%s is not in the MCP gRPC binding", req.Method)}})
	}
	res, err := h(c.outgoing(ctx), c.client, req.Params)
	if strings.HasSuffix(req.Method, "/list") {
		c.observeAuth(err)
	}
	if ctx.Err() != nil {
		// The caller gave up: go-sdk retires the call with this error;
		// a response would name a call it no longer knows.
		return ctx.Err()
	}
	if v, ok := res.(mcp.Result); ok && err == nil {
		// go-sdk's own value (result.go): neither encoded nor decoded.
		return c.deliver(mcp.DecodedResponse(req.ID, v))
	}
	return c.deliver(response(req.ID, res, err))
}

// ping is a round trip to the upstream process: grpc.health.v1's Check
// (service "", the server as a whole). The binding has no ping, and the
// channel's state says nothing of a process that is frozen (SIGSTOP) or
// wedged with its connection open: only an answer does. Any answer proves
// it alive, UNIMPLEMENTED from an upstream that serves no health service
// and a refusal of the credentials included (the connect probe and the
// lists judge those), and NOT_SERVING too (the prober checks liveness, as
// MCP's ping does). An RPC that ended without an answer is the error:
// its context's end (the prober's timeout) or the channel's failure.
func (c *conn) ping(ctx context.Context) error {
	_, err := c.health.Check(c.outgoing(ctx), &healthpb.HealthCheckRequest{})
	switch status.Code(err) {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable:
		return err
	}
	return nil
}

// deadlineSkew is how far ahead of ctx's own timer an RPC may end with
// DEADLINE_EXCEEDED: grpc-go ends it by its own timer and by the server's
// grpc-timeout (computed when the request left), either of which can
// fire a moment before ctx reports its end.
const deadlineSkew = 100 * time.Millisecond

// callersDeadline reports whether err, an RPC's failure, is the end of
// ctx: ctx is done, or the RPC ended DEADLINE_EXCEEDED within
// deadlineSkew of ctx's deadline, in which case it waits for ctx to say
// so. go-sdk takes a Write that fails while its context is not done for
// a broken connection and closes the session: a prober's ping that timed
// out a moment early ended a healthy session (TestPingIsARoundTrip, 5
// runs in 20).
func callersDeadline(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	if !ok || status.Code(err) != codes.DeadlineExceeded || time.Until(d) > deadlineSkew {
		return false
	}
	<-ctx.Done()
	return true
}

// observeAuth records a probe's or list's answer for the bridge's
// authentication classification (auth.go).
func (c *conn) observeAuth(err error) {
	if c.auth != nil {
		c.auth.observe(err)
	}
}

// outgoing is ctx with the configured headers as the RPC's metadata;
// without headers ctx itself (NewOutgoingContext allocates on every call).
func (c *conn) outgoing(ctx context.Context) context.Context {
	if len(c.md) == 0 {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, c.md)
}

func (c *conn) reply(id jsonrpc.ID, f func() (any, error)) error {
	v, err := f()
	return c.deliver(response(id, v, err))
}

// deliver hands a response to its waiting call (BindResponses), or
// queues it for Read while go-sdk's connection is shutting down (or drops
// it once the session ends).
func (c *conn) deliver(r *jsonrpc.Response) error {
	if c.direct != nil && c.direct(r) {
		return nil
	}
	select {
	case c.in <- r:
		return nil
	case <-c.done:
		return io.EOF
	}
}

// initialize answers the session's initialize: the protocol version the
// session asked for (the binding carries its messages in every era's
// shape the bridge reads) and the capabilities probe found.
func (c *conn) initialize(params json.RawMessage) func() (any, error) {
	return func() (any, error) {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = mcpbridge.DefaultProtocolVersion
		}
		return &mcp.InitializeResult{ProtocolVersion: p.ProtocolVersion, Capabilities: &c.caps,
			ServerInfo: &mcp.Implementation{Name: "mcp-grpc:" + c.cc.Target(), Version: "0.2.0"}}, nil
	}
}

// response is the JSON-RPC response of an RPC's outcome.
func response(id jsonrpc.ID, v any, err error) *jsonrpc.Response {
	if err != nil {
		return &jsonrpc.Response{ID: id, Error: wireError(err)}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "grpc upstream: " + err.Error()}}
	}
	return &jsonrpc.Response{ID: id, Result: raw}
}

// wireError is a failed RPC as the JSON-RPC error a 2025-era upstream
// would have sent: the request's own fault is invalid params, a method
// the upstream does not serve is method-not-found, anything else is an
// internal error with the status's code and message.
func wireError(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	st, ok := status.FromError(err)
	if !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	// grpc-go refuses a received message over MaxCallRecvMsgSize before
	// decoding it, with this code and text (it has no sentinel error): the
	// bridge's message limit, reported as on every other transport.
	if st.Code() == codes.ResourceExhausted && strings.HasPrefix(st.Message(), "grpc: received message larger than max") {
		return mcpbridge.MessageTooLarge()
	}
	code := int64(jsonrpc.CodeInternalError)
	switch st.Code() {
	case codes.InvalidArgument, codes.NotFound, codes.OutOfRange:
		code = jsonrpc.CodeInvalidParams
	case codes.Unimplemented:
		code = jsonrpc.CodeMethodNotFound
	}
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf("grpc upstream: %s: %s", st.Code(), clip(st.Message()))}
}

// maxStatusText bounds the upstream's status message carried into an
// error: a status can be as large as a message, and an error's text ends
// up in statuses, logs and callers' errors.
const maxStatusText = 1024

// clip cuts s to maxStatusText bytes of valid UTF-8.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\ufffd")
	if len(s) <= maxStatusText {
		return s
	}
	cut := maxStatusText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
