package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/grpcedge"
)

// Resources and prompts go through the same front-door steps as tool calls
// (authenticate → authorize → per-principal rate limit → dispatch on the
// upstream's session under its concurrency limit and callTimeout → one
// error mapping → audit line): the steps are the core's operation engine
// (Core.Begin authenticates; then Authorizer.AllowTool, the rate limiter,
// core.Classify), not copies.
//
// Authorization: "visible = usable", with the auth rules' globs. A prompt
// is matched by its exposed name ("<prefix>__<prompt>", like a tool); a
// server's resources (listing, templates, reads, subscriptions) by the name
// "<prefix>__@resources". So "github__*" covers github's tools, prompts and
// resources, and a deny of "github__@resources" hides only its resources.

// ReadResource implements toolsvc.v1.ToolService.
func (s *Server) ReadResource(ctx context.Context, req *toolsvcv1.ReadResourceRequest) (*toolsvcv1.ReadResourceResponse, error) {
	op, err := s.core.Begin(rpcContext(ctx), core.OpResourceRead, grpcFields)
	var out *toolsvcv1.ReadResourceResponse
	if err == nil {
		var server string
		var in *core.InputOptions
		if in, err = readInput(req); err == nil {
			if server, err = op.ResolveRead(req.GetServer(), req.GetUri()); err == nil {
				out, err = s.readResource(op, server, req.GetUri(), in)
			}
		}
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return nil, grpcStatus(fail).Err()
	}
	return out, nil
}

// readInput is a request's interactive fields (see inputOptions), with a
// nil *core.Error as a nil error.
func readInput(req inputRequest) (*core.InputOptions, error) {
	in, bad := inputOptions(req)
	if bad != nil {
		return nil, bad
	}
	return in, nil
}

// readResource reads and converts, applying the response size limit.
func (s *Server) readResource(op *core.Operation, server, uri string, in *core.InputOptions) (*toolsvcv1.ReadResourceResponse, error) {
	res, server, err := op.ReadResource(server, uri, in)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() || len(res.InputRequests) > 0 {
		return &toolsvcv1.ReadResourceResponse{Server: server, InputRequired: s.inputRequiredToProto(res.InputRequests, res.RequestState)}, nil
	}
	out := readResultToProto(res, server)
	if e := s.core.CheckResponse(proto.Size(out)); e != nil {
		return nil, e
	}
	return out, nil
}

// GetPrompt implements toolsvc.v1.ToolService.
func (s *Server) GetPrompt(ctx context.Context, req *toolsvcv1.GetPromptRequest) (*toolsvcv1.GetPromptResponse, error) {
	op, err := s.core.Begin(rpcContext(ctx), core.OpPromptGet, grpcFields)
	var out *toolsvcv1.GetPromptResponse
	if err == nil {
		out, err = s.getPrompt(op, req)
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return nil, grpcStatus(fail).Err()
	}
	return out, nil
}

func (s *Server) getPrompt(op *core.Operation, req *toolsvcv1.GetPromptRequest) (*toolsvcv1.GetPromptResponse, error) {
	in, err := readInput(req)
	if err != nil {
		return nil, err
	}
	res, err := op.GetPrompt(req.GetName(), req.GetArguments(), in)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() || len(res.InputRequests) > 0 {
		return &toolsvcv1.GetPromptResponse{InputRequired: s.inputRequiredToProto(res.InputRequests, res.RequestState)}, nil
	}
	out := &toolsvcv1.GetPromptResponse{Description: res.Description, Meta: grpcedge.Struct(res.Meta)}
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
	if e := s.core.CheckResponse(proto.Size(out)); e != nil {
		return nil, e
	}
	return out, nil
}

// SubscribeResource implements toolsvc.v1.ToolService. The first message
// is the resource's current contents (or "unchanged" when resume_token is
// still their version); after every resources/updated from the upstream
// the resource is read again and sent if its contents changed. Updates
// that arrive while a read runs collapse into one more read. The stream
// shares the core's subscription hub with every other subscriber of the
// URI, on either wire, and keeps its lifecycle (core/subscriptions.go):
// when the upstream's session goes away the hub subscribes again once it
// is back, and the stream re-reads and sends the contents if they changed
// meanwhile. It ends with the hub's error when subscribing again cannot
// succeed (the server removed, subscriptions no longer supported), with
// SHUTTING_DOWN when this server stops, and with RESOURCE_NOT_FOUND if the
// resource disappears; the client resumes by calling again with the last
// version as resume_token.
func (s *Server) SubscribeResource(req *toolsvcv1.SubscribeResourceRequest, stream grpc.ServerStreamingServer[toolsvcv1.SubscribeResourceResponse]) error {
	op, err := s.core.Begin(rpcContext(stream.Context()), core.OpSubscription, grpcFields)
	if err == nil {
		err = s.subscribeResource(op, req, stream)
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return grpcStatus(fail).Err()
	}
	return nil
}

func (s *Server) subscribeResource(op *core.Operation, req *toolsvcv1.SubscribeResourceRequest, stream grpc.ServerStreamingServer[toolsvcv1.SubscribeResourceResponse]) error {
	uri := req.GetUri()
	server, err := op.ResolveRead(req.GetServer(), uri)
	if err != nil {
		return err
	}
	// The subscription is not a call: it does not hold a rate-limit slot
	// while it streams.
	op.ReleaseSlot()
	ctx := op.Context()
	sub, err := s.core.SubscribeResource(ctx, server, uri)
	if err != nil {
		return err
	}
	defer sub.Close()
	last := req.GetResumeToken()
	send := func(first bool) error {
		out, err := s.readResource(op, server, uri, nil)
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
			return core.ErrClosed
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

func resourceToProto(r *core.Resource) *toolsvcv1.Resource {
	p := &toolsvcv1.Resource{Uri: r.R.URI, Server: r.Server, Name: r.R.Name, Title: r.R.Title, Description: r.R.Description,
		MimeType: r.R.MIMEType, Annotations: annotationsToProto(r.R.Annotations), Meta: grpcedge.Struct(r.R.Meta)}
	if r.R.Size != 0 {
		size := r.R.Size
		p.Size = &size
	}
	return p
}

func templateToProto(t *core.ResourceTemplate) *toolsvcv1.ResourceTemplate {
	return &toolsvcv1.ResourceTemplate{UriTemplate: t.T.URITemplate, Server: t.Server, Name: t.T.Name, Title: t.T.Title,
		Description: t.T.Description, MimeType: t.T.MIMEType, Annotations: annotationsToProto(t.T.Annotations), Meta: grpcedge.Struct(t.T.Meta)}
}

func promptToProto(p *core.Prompt) *toolsvcv1.Prompt {
	out := &toolsvcv1.Prompt{Name: p.Name, Server: p.Server, OriginalName: p.P.Name, Title: p.P.Title, Description: p.P.Description, Meta: grpcedge.Struct(p.P.Meta)}
	for _, a := range p.P.Arguments {
		if a != nil {
			out.Arguments = append(out.Arguments, &toolsvcv1.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
	}
	return out
}

func readResultToProto(r *mcp.ReadResourceResult, server string) *toolsvcv1.ReadResourceResponse {
	out := &toolsvcv1.ReadResourceResponse{Server: server, Meta: grpcedge.Struct(r.Meta)}
	for _, rc := range r.Contents {
		if rc == nil {
			continue
		}
		p := &toolsvcv1.ResourceContents{Uri: rc.URI, MimeType: rc.MIMEType, Meta: grpcedge.Struct(rc.Meta)}
		if rc.Blob != nil {
			p.Contents = &toolsvcv1.ResourceContents_Blob{Blob: rc.Blob}
		} else {
			p.Contents = &toolsvcv1.ResourceContents_Text{Text: rc.Text}
		}
		out.Contents = append(out.Contents, p)
	}
	return out
}
