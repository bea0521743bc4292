// Package mcpgrpc serves the MCP gRPC binding, model_context_protocol.Mcp
// (the published mcp-grpc-transport-proto, generated into
// gen/model_context_protocol), over the merged catalog: one more wire of the
// core, beside ToolService on the same gRPC server and behind the same
// interceptor chain (authentication from the same credentials, recovery,
// metrics, logging). Every RPC is an operation of the core (service/core):
// authorization, rate limits, argument validation, audit and metrics are the
// core's; this package only translates, and maps the core's error once
// (grpcedge.Status: a gRPC status with ErrorInfo carrying the documented
// reasons).
//
// What the binding adds to a plain translation (docs/mcp-grpc.md):
//   - the routing headers (gRPC metadata mcp_tool, mcp_prompt,
//     mcp_resource), checked against the body: a mismatch is
//     INVALID_ARGUMENT naming the header;
//   - the protocol version, read from the request's metadata
//     (io.modelcontextprotocol/protocolVersion, as in a 2026-07-28
//     request's _meta) and answered in the response's;
//   - ttl and cache scope on lists and reads, per 2026-07-28;
//   - multi-round trips: a call, prompt or read that needs input answers
//     result_type INPUT_REQUIRED with input_requests and toolsvc's signed
//     state in request_state; the retry sends input_responses and that
//     state, for both upstream eras (relayed and parked), as on the other
//     wires.
//
// It imports the core and the generated code, never mcpbridge (the layering
// test): the catalog's values are used through the core's accessors.
package mcpgrpc

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/grpcedge"
)

// ServiceName is the gRPC service this package serves, for health.
const ServiceName = "model_context_protocol.Mcp"

// The routing headers: gRPC metadata a client of the binding adds so that
// proxies and authorization can route without reading the body (the
// service's comments in mcp.proto).
const (
	HeaderTool     = "mcp_tool"
	HeaderPrompt   = "mcp_prompt"
	HeaderResource = "mcp_resource"
)

// The request and response metadata keys this wire reads and writes: the
// 2026-07-28 _meta keys, in RequestFields.metadata and
// ResponseFields.metadata (the binding's _meta).
const (
	MetaProtocolVersion    = mcp.MetaKeyProtocolVersion    // "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = mcp.MetaKeyClientCapabilities // "io.modelcontextprotocol/clientCapabilities"
)

// ProtocolVersion is the MCP protocol version this wire speaks: the
// binding's messages are 2026-07-28's (result_type, input_requests,
// request_state, ttl and cache scope).
const ProtocolVersion = "2026-07-28"

// fields are this wire's names for the fields the core's errors concern.
var fields = core.Fields{ArgumentsJSON: "request.arguments", RequestState: "common.request_state", InputResponses: "common.input_responses", CompleteRef: "resource_reference",
	CompletePrompt: "prompt_reference.name", CompleteTemplate: "resource_reference.uri", CompleteArgument: "argument.name"}

// Server implements pb.McpServer over a core.
type Server struct {
	pb.UnimplementedMcpServer
	core *core.Core
	log  *slog.Logger
	// answered is every response's metadata: the protocol version
	// (shared and never modified: the encoder only reads it).
	answered *structpb.Struct

	// The tools of the last shared snapshot listed, by catalog entry, in
	// the binding's form (shared and never modified, like answered).
	toolsMu      sync.Mutex
	toolsSnap    any
	toolsByEntry map[any]*pb.Tool
}

// New is the Mcp service over c.
func New(c *core.Core, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	md, _ := structpb.NewStruct(map[string]any{MetaProtocolVersion: ProtocolVersion})
	return &Server{core: c, log: log, answered: md}
}

// Register registers s on gs.
func (s *Server) Register(gs grpc.ServiceRegistrar) { pb.RegisterMcpServer(gs, s) }

// request is what every request of the binding shares.
type request interface {
	proto.Message
	GetCommon() *pb.RequestFields
}

// begin checks what every request shares, before the core sees it: the
// protocol version it names, and the routing header against the body's
// name (header "" or want "": nothing to check).
func begin(ctx context.Context, req request, header, want string) *core.Error {
	if e := checkVersion(req.GetCommon()); e != nil {
		return e
	}
	if header == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get(header) {
		if v != want {
			return core.InvalidField(header, "the routing header names "+quote(v)+" but the request names "+quote(want)+": send the same name in both")
		}
	}
	return nil
}

func quote(s string) string { return `"` + core.Clip(s) + `"` }

// checkVersion accepts a request that names no protocol version (the
// binding's own, 2026-07-28) or names 2026-07-28.
func checkVersion(c *pb.RequestFields) *core.Error {
	v, ok := c.GetMetadata().GetFields()[MetaProtocolVersion]
	if !ok {
		return nil
	}
	if sv, isString := v.GetKind().(*structpb.Value_StringValue); isString && sv.StringValue == ProtocolVersion {
		return nil
	}
	return core.InvalidField(`common.metadata["`+MetaProtocolVersion+`"]`,
		"unsupported protocol version: model_context_protocol.Mcp is served in "+ProtocolVersion+" only")
}

// grpcErr is the error the handler returns for e: its gRPC form, once.
func grpcErr(e *core.Error) error { return grpcedge.Status(e).Err() }

// response is the ResponseFields of a complete result.
func (s *Server) response() *pb.ResponseFields {
	return &pb.ResponseFields{Metadata: s.answered, ResultType: pb.ResultType_RESULT_TYPE_COMPLETE}
}

// inputRequired is the ResponseFields of an input_required result.
func (s *Server) inputRequired(reqs mcp.InputRequestMap, state string) *pb.ResponseFields {
	out := &pb.ResponseFields{Metadata: s.answered, ResultType: pb.ResultType_RESULT_TYPE_INPUT_REQUIRED,
		InputRequests: make(map[string]*pb.InputRequest, len(reqs)), RequestState: &state}
	for id, r := range reqs {
		out.InputRequests[id] = inputRequestToProto(r)
	}
	return out
}

// listTTL is the ttl of every list: zero, stale at once. The catalog
// changes when an upstream's does, and this binding has no notification:
// a client that caches watches ToolService.WatchCatalog on the same
// channel (docs/mcp-grpc.md).
var listTTL = durationpb.New(0)

// cacheScope is a listing's 2026-07-28 cache scope: private when what the
// caller sees depends on who it is (auth configured: authentication and
// per-principal rules; or a per-principal view of the catalog), since a
// cache shared across principals would skip the check that made it; public
// only when every caller sees the same.
func cacheScope(perPrincipal bool) pb.CacheScope {
	if perPrincipal {
		return pb.CacheScope_CACHE_SCOPE_PRIVATE
	}
	return pb.CacheScope_CACHE_SCOPE_PUBLIC
}

// authenticate is core.Authenticate for a handler of this wire.
func (s *Server) authenticate(ctx context.Context) (context.Context, error) {
	ctx, _, e := s.core.Authenticate(grpcedge.RPCContext(ctx))
	if e != nil {
		return ctx, grpcErr(e)
	}
	return ctx, nil
}

// ListTools implements pb.McpServer: every tool the caller may see, in
// one response (the binding has no paging), bounded by the response limit.
func (s *Server) ListTools(ctx context.Context, req *pb.ListToolsRequest) (*pb.ListToolsResponse, error) {
	if e := begin(ctx, req, "", ""); e != nil {
		return nil, grpcErr(e)
	}
	ctx, err := s.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	s.core.PrimeCatalog(ctx) // per-user upstreams list through their first caller's session
	snap, _, e := s.core.ToolCursor(ctx, "", fields)
	if e != nil {
		return nil, grpcErr(e)
	}
	st := s.core.AuthOf(ctx)
	allowed := st.Filter(ctx)
	out := &pb.ListToolsResponse{Common: s.response(), Ttl: listTTL,
		CacheScope: cacheScope(st.Configured() || snap.Base() != nil), Tools: make([]*pb.Tool, 0, len(snap.Tools))}
	// The binding's form of each catalog entry, converted once: entries
	// are immutable, so an unchanged tool keeps its message across
	// revisions, and a list costs a map lookup per tool, not a schema
	// converted to a Struct. Only the shared snapshot is kept; a
	// principal's view reuses its shared entries.
	s.toolsMu.Lock()
	byEntry := s.toolsByEntry
	if s.toolsSnap != any(snap) {
		byEntry = make(map[any]*pb.Tool, len(snap.Tools))
		for _, t := range snap.Tools {
			m := s.toolsByEntry[t]
			if m == nil {
				m = toolToProto(t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations, t.Meta)
			}
			byEntry[t] = m
		}
		if snap.Base() == nil {
			s.toolsSnap, s.toolsByEntry = snap, byEntry
		}
	}
	s.toolsMu.Unlock()
	for _, t := range snap.Tools {
		if allowed == nil || allowed(t.Name) {
			out.Tools = append(out.Tools, byEntry[t])
		}
	}
	return checked(s, out)
}

// checked is out if it fits the response limit, else RESPONSE_TOO_LARGE:
// a list is whole or refused, never cut short.
func checked[M proto.Message](s *Server, out M) (M, error) {
	if e := s.core.CheckResponse(proto.Size(out)); e != nil {
		var zero M
		return zero, grpcErr(e)
	}
	return out, nil
}

// listAll is the caller's whole list of one kind of the resource
// snapshot, with its cache scope.
func listAll[T any](s *Server, ctx context.Context, req request, kind core.ListKind[T]) ([]T, pb.CacheScope, error) {
	if e := begin(ctx, req, "", ""); e != nil {
		return nil, 0, grpcErr(e)
	}
	ctx, err := s.authenticate(ctx)
	if err != nil {
		return nil, 0, err
	}
	items, _, _, e := core.ListPage(s.core, ctx, kind, nil, "", fields, 1<<30, 0, core.Same, nil)
	if e != nil {
		return nil, 0, grpcErr(e)
	}
	return items, cacheScope(s.core.AuthOf(ctx).Configured()), nil
}

// ListResources implements pb.McpServer.
func (s *Server) ListResources(ctx context.Context, req *pb.ListResourcesRequest) (*pb.ListResourcesResponse, error) {
	items, scope, err := listAll(s, ctx, req, core.Resources)
	if err != nil {
		return nil, err
	}
	out := &pb.ListResourcesResponse{Common: s.response(), Ttl: listTTL, CacheScope: scope, Resources: make([]*pb.Resource, 0, len(items))}
	for _, r := range items {
		out.Resources = append(out.Resources, resourceToProto(r.R))
	}
	return checked(s, out)
}

// ListResourceTemplates implements pb.McpServer.
func (s *Server) ListResourceTemplates(ctx context.Context, req *pb.ListResourceTemplatesRequest) (*pb.ListResourceTemplatesResponse, error) {
	items, scope, err := listAll(s, ctx, req, core.Templates)
	if err != nil {
		return nil, err
	}
	out := &pb.ListResourceTemplatesResponse{Common: s.response(), Ttl: listTTL, CacheScope: scope,
		ResourceTemplates: make([]*pb.ResourceTemplate, 0, len(items))}
	for _, t := range items {
		out.ResourceTemplates = append(out.ResourceTemplates, templateToProto(t.T))
	}
	return checked(s, out)
}

// ListPrompts implements pb.McpServer.
func (s *Server) ListPrompts(ctx context.Context, req *pb.ListPromptsRequest) (*pb.ListPromptsResponse, error) {
	items, scope, err := listAll(s, ctx, req, core.Prompts)
	if err != nil {
		return nil, err
	}
	out := &pb.ListPromptsResponse{Common: s.response(), Ttl: listTTL, CacheScope: scope, Prompts: make([]*pb.Prompt, 0, len(items))}
	for _, p := range items {
		out.Prompts = append(out.Prompts, promptToProto(p.Name, p.P))
	}
	return checked(s, out)
}

// CallTool implements pb.McpServer: one round of a tool call through the
// core's pipeline. The request's `request` (name and arguments) is
// required on every round: a retry with input_responses and request_state
// repeats it, as a 2026-07-28 retry repeats its params.
func (s *Server) CallTool(ctx context.Context, req *pb.CallToolRequest) (*pb.CallToolResponse, error) {
	r := req.GetRequest()
	in := core.CallInput{Name: r.GetName(), Size: proto.Size(req), Fields: fields}
	if a := r.GetArguments(); a != nil {
		in.Arguments = a.AsMap()
	}
	var bad *core.Error
	if r == nil {
		bad = core.InvalidField("request", "required on every round: the tool's name and arguments")
	} else if bad = begin(ctx, req, HeaderTool, r.GetName()); bad == nil {
		in.Input, bad = inputOptions(req.GetCommon())
	}
	c, err := s.core.BeginCall(grpcedge.RPCContext(ctx), in)
	if bad != nil && !unauthenticated(err) {
		// A request this wire refuses is refused as such, not for what the
		// core found further on (its arguments, its name); BeginCall ran
		// for the caller's identity, and the refusal's audit line.
		err = bad
	}
	var out *pb.CallToolResponse
	size := 0
	if err == nil {
		var res *mcp.CallToolResult
		if res, err = c.Dispatch(c.Context(), nil); err == nil {
			if core.NeedsInput(res) {
				out = &pb.CallToolResponse{Common: s.inputRequired(res.InputRequests, res.RequestState)}
			} else {
				out = callResultToProto(res, s.response())
			}
			size = proto.Size(out)
			err = c.CheckResult(size)
		}
	}
	fail := c.Fail(err)
	if fail != nil {
		c.End(fail, false, 0)
		return nil, grpcErr(fail)
	}
	c.End(nil, out.GetIsError(), size)
	return out, nil
}

// unauthenticated reports whether err is the core's UNAUTHENTICATED: a
// caller without a valid credential learns nothing else.
func unauthenticated(err error) bool {
	var e *core.Error
	return errors.As(err, &e) && e.Code == core.Unauthenticated
}

// GetPrompt implements pb.McpServer.
func (s *Server) GetPrompt(ctx context.Context, req *pb.GetPromptRequest) (*pb.GetPromptResponse, error) {
	op, err := s.core.Begin(grpcedge.RPCContext(ctx), core.OpPromptGet, fields)
	var out *pb.GetPromptResponse
	if err == nil {
		out, err = s.getPrompt(ctx, op, req)
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return nil, grpcErr(fail)
	}
	return out, nil
}

func (s *Server) getPrompt(ctx context.Context, op *core.Operation, req *pb.GetPromptRequest) (*pb.GetPromptResponse, error) {
	if e := begin(ctx, req, HeaderPrompt, req.GetName()); e != nil {
		return nil, e
	}
	in, e := inputOptions(req.GetCommon())
	if e != nil {
		return nil, e
	}
	res, err := op.GetPrompt(req.GetName(), req.GetArguments(), in)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() || len(res.InputRequests) > 0 {
		return &pb.GetPromptResponse{Common: s.inputRequired(res.InputRequests, res.RequestState)}, nil
	}
	out := &pb.GetPromptResponse{Common: s.response(), Description: res.Description}
	for _, m := range res.Messages {
		if m != nil {
			out.Messages = append(out.Messages, promptMessageToProto(m))
		}
	}
	if e := s.core.CheckResponse(proto.Size(out)); e != nil {
		return nil, e
	}
	return out, nil
}

// ReadResource implements pb.McpServer. The binding names no server: the
// server is the one, among those whose resources the caller may use, that
// lists the URI or has a template matching it.
func (s *Server) ReadResource(ctx context.Context, req *pb.ReadResourceRequest) (*pb.ReadResourceResponse, error) {
	op, err := s.core.Begin(grpcedge.RPCContext(ctx), core.OpResourceRead, fields)
	var out *pb.ReadResourceResponse
	if err == nil {
		out, err = s.readResource(ctx, op, req)
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return nil, grpcErr(fail)
	}
	return out, nil
}

func (s *Server) readResource(ctx context.Context, op *core.Operation, req *pb.ReadResourceRequest) (*pb.ReadResourceResponse, error) {
	if e := begin(ctx, req, HeaderResource, req.GetUri()); e != nil {
		return nil, e
	}
	in, e := inputOptions(req.GetCommon())
	if e != nil {
		return nil, e
	}
	server, err := op.ResolveRead("", req.GetUri())
	if err != nil {
		return nil, err
	}
	res, _, err := op.ReadResource(server, req.GetUri(), in)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() || len(res.InputRequests) > 0 {
		return &pb.ReadResourceResponse{Common: s.inputRequired(res.InputRequests, res.RequestState)}, nil
	}
	// The upstream's ttl (0, stale at once, when it sent none); private:
	// every read is authorized for its principal.
	out := &pb.ReadResourceResponse{Common: s.response(), Ttl: durationpb.New(msDuration(res.TTLMs)),
		CacheScope: pb.CacheScope_CACHE_SCOPE_PRIVATE}
	for _, c := range res.Contents {
		if c != nil {
			out.Resource = append(out.Resource, contentsToProto(c))
		}
	}
	if e := s.core.CheckResponse(proto.Size(out)); e != nil {
		return nil, e
	}
	return out, nil
}

// Complete implements pb.McpServer: the core's completion of a prompt's
// argument (prompt_reference) or a resource template's (resource_reference:
// its URI template as listed). The routing header mcp_resource names the
// prompt or the URI template.
func (s *Server) Complete(ctx context.Context, req *pb.CompletionRequest) (*pb.CompletionResponse, error) {
	in := core.CompleteInput{Argument: req.GetArgument().GetName(), Value: req.GetArgument().GetValue(),
		Context: req.GetContext().GetArguments()}
	var named string
	switch {
	case req.GetPromptReference() != nil && req.GetResourceReference() != nil:
		return nil, grpcErr(core.InvalidField("prompt_reference", "set one of prompt_reference and resource_reference, not both"))
	case req.GetPromptReference() != nil:
		in.Kind, in.Prompt, named = core.CompletePrompt, req.GetPromptReference().GetName(), req.GetPromptReference().GetName()
	case req.GetResourceReference() != nil:
		in.Kind, in.Template, named = core.CompleteTemplate, req.GetResourceReference().GetUri(), req.GetResourceReference().GetUri()
	}
	header := HeaderResource
	if in.Kind == core.CompleteNone {
		header = ""
	}
	if e := begin(ctx, req, header, named); e != nil {
		return nil, grpcErr(e)
	}
	var out *pb.CompletionResponse
	_, e := s.core.Complete(grpcedge.RPCContext(ctx), in, fields, func(r *mcp.CompleteResult) int {
		out = &pb.CompletionResponse{Common: s.response(), Values: r.Completion.Values, HasMore: r.Completion.HasMore}
		if t := r.Completion.Total; t > 0 {
			total := int64(t)
			out.TotalMatches = &total
		}
		return proto.Size(out)
	})
	if e != nil {
		return nil, grpcErr(e)
	}
	return out, nil
}
