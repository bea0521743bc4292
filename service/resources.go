package service

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// Resources and prompts go through the same front-door steps as tool calls
// (authenticate → authorize → per-principal rate limit → dispatch on the
// upstream's session under its concurrency limit and callTimeout → one
// error mapping → audit line): the steps are the pipeline's own functions
// (Server.authenticate, Authorizer.AllowTool, rateLimiter.acquire,
// classify), not copies.
//
// Authorization: "visible = usable", with the auth rules' globs. A prompt
// is matched by its exposed name ("<prefix>__<prompt>", like a tool); a
// server's resources (listing, templates, reads, subscriptions) by the name
// "<prefix>__@resources". So "github__*" covers github's tools, prompts and
// resources, and a deny of "github__@resources" hides only its resources.

// resourcesAuthName is the auth name of a server's resources; an unknown
// server yields a name no rule can match except "*"-style globs, and the
// lookup that follows reports SERVER_NOT_FOUND.
func (s *Server) resourcesAuthName(server string) string {
	n, err := s.bridge.ResourcesAuthName(server)
	if err != nil {
		return mcpbridge.ResourcesAuthName(mcpbridge.ServerPrefix(server))
	}
	return n
}

// A resource page token names the revision its listing started from and
// the offset in that snapshot's (sorted) list.
const resourcePageTokenVersion = "r1"

func encodeResourcePageToken(rev string, next int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(resourcePageTokenVersion + ":" + rev + ":" + strconv.Itoa(next)))
}

// resourceCursor resolves a resource listing's page token (empty: the
// current snapshot from its start) to the snapshot it names and the
// offset to continue from; f names the token's field.
func (s *Server) resourceCursor(token string, f core.Fields) (*mcpbridge.ResourceSnapshot, int, *core.Error) {
	cat := s.bridge.Resources()
	if token == "" {
		return cat.Current(), 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	parts := strings.Split(string(raw), ":")
	if err != nil || len(parts) != 3 || parts[0] != resourcePageTokenVersion || !validRevision(parts[1]) {
		return nil, 0, malformedToken(f)
	}
	off, err := strconv.Atoi(parts[2])
	if err != nil || off < 0 {
		return nil, 0, malformedToken(f)
	}
	old, ok := cat.Snapshot(parts[1])
	if !ok {
		return nil, 0, expiredToken(f, "resource", parts[1])
	}
	return old, off, nil
}

// serverFilter checks the servers field and returns a membership test
// (nil: every server).
func (s *Server) serverFilter(servers []string) (func(string) bool, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	for i, name := range servers {
		if _, err := s.bridge.Server(name); err != nil {
			field := fmt.Sprintf("servers[%d]", i)
			return nil, &core.Error{Code: core.NotFound, Reason: ReasonServerNotFound, Message: fmt.Sprintf("%s: no configured server %q", field, clipText(name)),
				Violations: []core.FieldViolation{core.Violation(field, "not a configured server")}}
		}
	}
	return func(n string) bool { return slices.Contains(servers, n) }, nil
}

// resourceVisible returns the caller's filter over servers' resources.
func (s *Server) resourceVisible(ctx context.Context, only func(string) bool) func(server string) bool {
	allowed := s.authOf(ctx).authz.filter(ctx)
	memo := map[string]bool{}
	return func(server string) bool {
		if v, ok := memo[server]; ok {
			return v
		}
		v := (only == nil || only(server)) && (allowed == nil || allowed(s.resourcesAuthName(server)))
		memo[server] = v
		return v
	}
}

// resolveRead checks a read or subscription request and admits it: the
// URI is required, the server is resolved (or inferred), the caller must
// be allowed that server's resources.
func (op *operation) resolveRead(server, uri string) (string, error) {
	op.meta["uri"], op.meta["server"] = uri, server
	if uri == "" {
		return "", core.InvalidField("uri", "required: a resource URI from ListResources, a resource_link, or one a template yields")
	}
	if server == "" {
		// Inferred among the servers whose resources the caller may see:
		// servers it may not see are neither candidates nor named.
		vis := op.s.resourceVisible(op.ctx, nil)
		var cands []string
		for _, n := range op.s.bridge.Resources().Current().ServersFor(uri) {
			if vis(n) {
				cands = append(cands, n)
			}
		}
		switch len(cands) {
		case 0:
			if err := op.s.bridge.Discovered(); err != nil {
				return "", err // closed, or the first discovery round is not finished
			}
			return "", fmt.Errorf("%w: no server you may read lists %q or has a template matching it", mcpbridge.ErrResourceNotFound, clipText(uri))
		case 1:
			server = cands[0]
		default:
			return "", &mcpbridge.AmbiguousResourceError{URI: uri, Candidates: cands}
		}
	}
	op.meta["server"] = server
	// As for tools: authorization is decided before a failed lookup (an
	// unconfigured server) is reported.
	if err := op.admit(op.s.resourcesAuthName(server), fmt.Sprintf("use the resources of server %q", clipText(server))); err != nil {
		return "", err
	}
	return op.s.bridge.ResolveResourceServer(server, uri)
}

// getPrompt renders the prompt of exposed name with args, for every
// wire: the name checked, the caller authorized (before a failed lookup
// is reported, as for tools), the upstream asked.
func (op *operation) getPrompt(name string, args map[string]string) (*mcp.GetPromptResult, error) {
	if err := checkExposedName("name", name, "prompt"); err != nil {
		return nil, err
	}
	op.meta["prompt"] = name
	if name == "" {
		return nil, core.InvalidField("name", "required: the exposed name of a listed prompt")
	}
	p, rerr := op.s.bridge.ResolvePrompt(name)
	if err := op.admit(name, fmt.Sprintf("use prompt %q", name)); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	op.meta["server"] = p.Server
	return op.s.bridge.GetPrompt(op.ctx, p, args, op.principal.Name)
}

// ReadResource implements toolsvc.v1.ToolService.
func (s *Server) ReadResource(ctx context.Context, req *toolsvcv1.ReadResourceRequest) (*toolsvcv1.ReadResourceResponse, error) {
	op, err := s.begin(ctx, opResourceRead, grpcFields)
	var out *toolsvcv1.ReadResourceResponse
	if err == nil {
		var server string
		if server, err = op.resolveRead(req.GetServer(), req.GetUri()); err == nil {
			out, err = s.readResource(op.ctx, server, req.GetUri())
		}
	}
	fail := op.fail(err)
	op.end(fail, false)
	if fail != nil {
		return nil, grpcStatus(fail).Err()
	}
	return out, nil
}

// readResource reads and converts, applying the response size limit.
func (s *Server) readResource(ctx context.Context, server, uri string) (*toolsvcv1.ReadResourceResponse, error) {
	principal, _ := PrincipalFrom(ctx)
	res, server, err := s.bridge.ReadResource(ctx, server, uri, principal.Name)
	if err != nil {
		return nil, err
	}
	out := readResultToProto(res, server)
	if e := s.checkResponse(proto.Size(out)); e != nil {
		return nil, e
	}
	return out, nil
}

// GetPrompt implements toolsvc.v1.ToolService.
func (s *Server) GetPrompt(ctx context.Context, req *toolsvcv1.GetPromptRequest) (*toolsvcv1.GetPromptResponse, error) {
	op, err := s.begin(ctx, opPromptGet, grpcFields)
	var out *toolsvcv1.GetPromptResponse
	if err == nil {
		out, err = s.getPrompt(op, req)
	}
	fail := op.fail(err)
	op.end(fail, false)
	if fail != nil {
		return nil, grpcStatus(fail).Err()
	}
	return out, nil
}

func (s *Server) getPrompt(op *operation, req *toolsvcv1.GetPromptRequest) (*toolsvcv1.GetPromptResponse, error) {
	res, err := op.getPrompt(req.GetName(), req.GetArguments())
	if err != nil {
		return nil, err
	}
	out := &toolsvcv1.GetPromptResponse{Description: res.Description, Meta: toStruct(res.Meta)}
	for _, m := range res.Messages {
		if m == nil {
			continue
		}
		pm := &toolsvcv1.PromptMessage{Role: string(m.Role)}
		if m.Content != nil {
			pm.Content = contentToProto(m.Content)
		}
		out.Messages = append(out.Messages, pm)
	}
	if e := s.checkResponse(proto.Size(out)); e != nil {
		return nil, e
	}
	return out, nil
}

// SubscribeResource implements toolsvc.v1.ToolService. The first message
// is the resource's current contents (or "unchanged" when resume_token is
// still their version); after every resources/updated from the upstream
// the resource is read again and sent if its contents changed. Updates
// that arrive while a read runs collapse into one more read. The stream
// ends with UNAVAILABLE (UPSTREAM_UNAVAILABLE, unavailable_reason
// session_lost, RetryInfo) when the upstream's session goes away, with
// SHUTTING_DOWN when this server stops, and with RESOURCE_NOT_FOUND if the
// resource disappears; the client resumes by calling again with the last
// version as resume_token.
func (s *Server) SubscribeResource(req *toolsvcv1.SubscribeResourceRequest, stream grpc.ServerStreamingServer[toolsvcv1.SubscribeResourceResponse]) error {
	op, err := s.begin(stream.Context(), opSubscription, grpcFields)
	if err == nil {
		err = s.subscribeResource(op, req, stream)
	}
	fail := op.fail(err)
	op.end(fail, false)
	if fail != nil {
		return grpcStatus(fail).Err()
	}
	return nil
}

func (s *Server) subscribeResource(op *operation, req *toolsvcv1.SubscribeResourceRequest, stream grpc.ServerStreamingServer[toolsvcv1.SubscribeResourceResponse]) error {
	uri := req.GetUri()
	server, err := op.resolveRead(req.GetServer(), uri)
	if err != nil {
		return err
	}
	// The subscription is not a call: it does not hold a rate-limit slot
	// while it streams.
	op.releaseSlot()
	ctx := op.ctx
	sub, err := s.bridge.SubscribeResource(ctx, server, uri)
	if err != nil {
		return err
	}
	defer sub.Close()
	last := req.GetResumeToken()
	send := func(first bool) error {
		out, err := s.readResource(ctx, server, uri)
		if err != nil {
			return err
		}
		v := contentsVersion(out)
		switch {
		case v == last && first:
			return stream.Send(&toolsvcv1.SubscribeResourceResponse{Version: v, Event: &toolsvcv1.SubscribeResourceResponse_Unchanged{Unchanged: &toolsvcv1.ResourceUnchanged{}}})
		case v == last:
			return nil
		}
		last = v
		return stream.Send(&toolsvcv1.SubscribeResourceResponse{Version: v, Event: &toolsvcv1.SubscribeResourceResponse_Contents{Contents: out}})
	}
	if err := send(true); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.shutdown:
			return mcpbridge.ErrClosed
		case <-sub.Done:
			return sub.Err()
		case <-sub.Updated:
			if err := send(false); err != nil {
				return err
			}
		}
	}
}

// contentsVersion is a content hash of a read result (deterministic
// encoding, so equal contents give equal versions on every replica).
func contentsVersion(r *toolsvcv1.ReadResourceResponse) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func resourceToProto(r *mcpbridge.Resource) *toolsvcv1.Resource {
	p := &toolsvcv1.Resource{Uri: r.R.URI, Server: r.Server, Name: r.R.Name, Title: r.R.Title, Description: r.R.Description,
		MimeType: r.R.MIMEType, Annotations: annotationsToProto(r.R.Annotations), Meta: toStruct(r.R.Meta)}
	if r.R.Size != 0 {
		size := r.R.Size
		p.Size = &size
	}
	return p
}

func templateToProto(t *mcpbridge.ResourceTemplate) *toolsvcv1.ResourceTemplate {
	return &toolsvcv1.ResourceTemplate{UriTemplate: t.T.URITemplate, Server: t.Server, Name: t.T.Name, Title: t.T.Title,
		Description: t.T.Description, MimeType: t.T.MIMEType, Annotations: annotationsToProto(t.T.Annotations), Meta: toStruct(t.T.Meta)}
}

func promptToProto(p *mcpbridge.Prompt) *toolsvcv1.Prompt {
	out := &toolsvcv1.Prompt{Name: p.Name, Server: p.Server, OriginalName: p.P.Name, Title: p.P.Title, Description: p.P.Description, Meta: toStruct(p.P.Meta)}
	for _, a := range p.P.Arguments {
		if a != nil {
			out.Arguments = append(out.Arguments, &toolsvcv1.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
	}
	return out
}

func readResultToProto(r *mcp.ReadResourceResult, server string) *toolsvcv1.ReadResourceResponse {
	out := &toolsvcv1.ReadResourceResponse{Server: server, Meta: toStruct(r.Meta)}
	for _, rc := range r.Contents {
		if rc == nil {
			continue
		}
		p := &toolsvcv1.ResourceContents{Uri: rc.URI, MimeType: rc.MIMEType, Meta: toStruct(rc.Meta)}
		if rc.Blob != nil {
			p.Contents = &toolsvcv1.ResourceContents_Blob{Blob: rc.Blob}
		} else {
			p.Contents = &toolsvcv1.ResourceContents_Text{Text: rc.Text}
		}
		out.Contents = append(out.Contents, p)
	}
	return out
}
