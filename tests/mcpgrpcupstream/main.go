// Command mcpgrpcupstream is an upstream for the end-to-end tests that
// serves the MCP gRPC binding (model_context_protocol.Mcp) and nothing
// else: tools echo, add, echo_args (its arguments as it received them, as
// JSON text) and add_tool (which adds a tool named by its argument to the
// list, seen by whoever lists after it), a resource and a
// template, a prompt with completions. Its lists carry -ttl.
//
// Tools that ask their caller through the binding's input requests
// (RESULT_TYPE_INPUT_REQUIRED), continued by a retry with input_responses
// and the request_state they set: ask_name (a form elicitation of a name:
// "hello NAME", or "declined" / "cancelled" as the caller answered),
// ask_sample (a sampling request: "model said: TEXT"), and two that ask
// badly: bad_ask (an input request of no kind) and big_ask (a form whose
// message is 2 MiB). Likewise the prompt ask_prompt ("Greet NAME") and
// the resource ask://greeting ("hello NAME"), NAME the action when the
// caller did not accept. With -token it
// refuses calls without "authorization: Bearer <token>" (UNAUTHENTICATED),
// with -deny it refuses every call (PERMISSION_DENIED); each refusal
// prints "refused METHOD". With -tls-cert it
// serves TLS, and with -client-ca it requires a client certificate (mTLS).
// With -auth-issuer every RPC needs a JWT access token that issuer signed;
// it prints "new bearer token" each time the token differs from the last.
//
// It prints "listening on ADDR" once it serves.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	oidcclient "github.com/zitadel/oidc/v3/pkg/client"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	ttl := flag.Duration("ttl", 0, "ttl of every list (0: none)")
	token := flag.String("token", "", "bearer token every RPC must carry (empty: none)")
	certFile := flag.String("tls-cert", "", "serve TLS with this certificate (PEM; with -tls-key)")
	keyFile := flag.String("tls-key", "", "the key of -tls-cert (PEM)")
	issuer := flag.String("auth-issuer", "", "require a JWT access token this issuer signed as the bearer (verified against its JWKS)")
	clientCA := flag.String("client-ca", "", "require a client certificate signed by this CA (PEM; with -tls-cert)")
	deny := flag.Bool("deny", false, "refuse every RPC with PERMISSION_DENIED")
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := &server{ttl: *ttl, token: *token, deny: *deny}
	if *issuer != "" {
		if s.verify, err = jwtVerifier(*issuer); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(s.auth)}
	if *certFile != "" {
		tc, err := serverTLS(*certFile, *keyFile, *clientCA)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	gs := grpc.NewServer(opts...)
	pb.RegisterMcpServer(gs, s)
	fmt.Printf("listening on %s\n", lis.Addr())
	if err := gs.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// serverTLS is the TLS of -tls-cert, requiring and verifying a client
// certificate from clientCA when set.
func serverTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pem, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", clientCA)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// jwtVerifier checks access tokens against issuer's JWKS (found by
// discovery), as tests/testserver's -auth-issuer does for HTTP.
func jwtVerifier(issuer string) (func(context.Context, string) error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	disc, err := oidcclient.Discover(ctx, issuer, http.DefaultClient)
	if err != nil {
		return nil, fmt.Errorf("discovery at %s: %w", issuer, err)
	}
	v := op.NewAccessTokenVerifier(issuer, rp.NewRemoteKeySet(http.DefaultClient, disc.JwksURI))
	return func(ctx context.Context, tok string) error {
		_, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, tok, v)
		return err
	}, nil
}

type server struct {
	pb.UnimplementedMcpServer
	ttl    time.Duration
	token  string
	deny   bool
	verify func(ctx context.Context, token string) error // -auth-issuer

	mu        sync.Mutex
	added     []string
	lastToken string
}

func (s *server) auth(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if s.deny {
		fmt.Println("refused", info.FullMethod) // the tests count the attempts
		return nil, status.Error(codes.PermissionDenied, "this client may not use the service")
	}
	if s.token != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		if !slices.Contains(md.Get("authorization"), "Bearer "+s.token) {
			fmt.Println("refused", info.FullMethod)
			return nil, status.Error(codes.Unauthenticated, "a bearer token is required")
		}
	}
	if s.verify != nil {
		md, _ := metadata.FromIncomingContext(ctx)
		var tok string
		if v := md.Get("authorization"); len(v) == 1 {
			tok, _ = strings.CutPrefix(v[0], "Bearer ")
		}
		if tok == "" {
			return nil, status.Error(codes.Unauthenticated, "a bearer token is required")
		}
		if err := s.verify(ctx, tok); err != nil {
			return nil, status.Errorf(codes.Unauthenticated, "the bearer token is not valid: %v", err)
		}
		s.mu.Lock()
		if tok != s.lastToken {
			s.lastToken = tok
			fmt.Println("new bearer token") // the tests count the tokens seen
		}
		s.mu.Unlock()
	}
	return h(ctx, req)
}

func (s *server) ttlpb() *durationpb.Duration {
	if s.ttl <= 0 {
		return nil
	}
	return durationpb.New(s.ttl)
}

func schema(props map[string]any, required ...string) *structpb.Struct {
	req := make([]any, len(required))
	for i, r := range required {
		req[i] = r
	}
	st, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": props, "required": req})
	return st
}

func (s *server) ListTools(context.Context, *pb.ListToolsRequest) (*pb.ListToolsResponse, error) {
	tools := []*pb.Tool{
		{Name: "echo", Description: "says text back", InputSchema: schema(map[string]any{"text": map[string]any{"type": "string"}}, "text")},
		{Name: "add", Description: "adds a and b", InputSchema: schema(map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}, "a", "b"),
			Annotations: &pb.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "ask_name", Description: "asks the caller for a name", InputSchema: schema(map[string]any{})},
		{Name: "ask_sample", Description: "asks the caller's model", InputSchema: schema(map[string]any{})},
		{Name: "bad_ask", Description: "asks with an input request of no kind", InputSchema: schema(map[string]any{})},
		{Name: "big_ask", Description: "asks with a 2 MiB input request", InputSchema: schema(map[string]any{})},
		{Name: "add_tool", Description: "adds a tool named name", InputSchema: schema(map[string]any{"name": map[string]any{"type": "string"}}, "name")},
		{Name: "echo_args", Description: "says its arguments back as JSON", InputSchema: schema(map[string]any{})},
	}
	s.mu.Lock()
	for _, n := range s.added {
		tools = append(tools, &pb.Tool{Name: n, Description: "added", InputSchema: schema(map[string]any{})})
	}
	s.mu.Unlock()
	return &pb.ListToolsResponse{Tools: tools, Ttl: s.ttlpb()}, nil
}

func text(t string) []*pb.CallToolResponse_Content {
	return []*pb.CallToolResponse_Content{{Text: &pb.TextContent{Text: t}}}
}

func (s *server) CallTool(_ context.Context, req *pb.CallToolRequest) (*pb.CallToolResponse, error) {
	r := req.GetRequest()
	args := r.GetArguments().AsMap()
	switch r.GetName() {
	case "echo":
		t, _ := args["text"].(string)
		return &pb.CallToolResponse{Content: text(t)}, nil
	case "add":
		a, _ := args["a"].(float64)
		b, _ := args["b"].(float64)
		sum, _ := structpb.NewStruct(map[string]any{"sum": a + b})
		return &pb.CallToolResponse{Content: text(fmt.Sprint(a + b)), StructuredContent: sum}, nil
	case "ask_name", "ask_sample", "bad_ask", "big_ask":
		return ask(r.GetName(), req.GetCommon())
	case "echo_args":
		// The Struct it received, as encoding/json writes its values
		// (sorted keys, every number a float64, -0 kept).
		out, err := json.Marshal(args)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "echo_args: %v", err)
		}
		return &pb.CallToolResponse{Content: text(string(out))}, nil
	case "add_tool":
		n, _ := args["name"].(string)
		s.mu.Lock()
		s.added = append(s.added, n)
		s.mu.Unlock()
		return &pb.CallToolResponse{Content: text("added " + n)}, nil
	}
	s.mu.Lock()
	added := slices.Contains(s.added, r.GetName())
	s.mu.Unlock()
	if added {
		return &pb.CallToolResponse{Content: text("hello from " + r.GetName())}, nil
	}
	return nil, status.Errorf(codes.NotFound, "unknown tool %q", r.GetName())
}

func (s *server) ListResources(context.Context, *pb.ListResourcesRequest) (*pb.ListResourcesResponse, error) {
	return &pb.ListResourcesResponse{Resources: []*pb.Resource{{Uri: "mem://hello", Name: "hello", MimeType: "text/plain"},
		{Uri: "ask://greeting", Name: "greeting", MimeType: "text/plain"}}, Ttl: s.ttlpb()}, nil
}

func (s *server) ListResourceTemplates(context.Context, *pb.ListResourceTemplatesRequest) (*pb.ListResourceTemplatesResponse, error) {
	return &pb.ListResourceTemplatesResponse{ResourceTemplates: []*pb.ResourceTemplate{{UriTemplate: "mem://items/{id}", Name: "item"}}, Ttl: s.ttlpb()}, nil
}

func (s *server) ReadResource(_ context.Context, req *pb.ReadResourceRequest) (*pb.ReadResourceResponse, error) {
	switch u := req.GetUri(); {
	case u == "ask://greeting":
		name, asked := askedName(req.GetCommon())
		if asked != nil {
			return &pb.ReadResourceResponse{Common: asked}, nil
		}
		return &pb.ReadResourceResponse{Resource: []*pb.ResourceContents{{Uri: u, MimeType: "text/plain", Text: "hello " + name}}}, nil
	case u == "mem://hello":
		return &pb.ReadResourceResponse{Resource: []*pb.ResourceContents{{Uri: u, MimeType: "text/plain", Text: "hello over grpc"}}}, nil
	case strings.HasPrefix(u, "mem://items/"):
		return &pb.ReadResourceResponse{Resource: []*pb.ResourceContents{{Uri: u, Text: "item " + strings.TrimPrefix(u, "mem://items/")}}}, nil
	}
	return nil, status.Errorf(codes.NotFound, "no resource %q", req.GetUri())
}

func (s *server) ListPrompts(context.Context, *pb.ListPromptsRequest) (*pb.ListPromptsResponse, error) {
	return &pb.ListPromptsResponse{Prompts: []*pb.Prompt{{Name: "greet", Description: "greets someone",
		Arguments: []*pb.Prompt_Argument{{Name: "name", Required: true}}}, {Name: "ask_prompt", Description: "asks whom to greet"}}, Ttl: s.ttlpb()}, nil
}

func (s *server) GetPrompt(_ context.Context, req *pb.GetPromptRequest) (*pb.GetPromptResponse, error) {
	if req.GetName() == "ask_prompt" {
		name, asked := askedName(req.GetCommon())
		if asked != nil {
			return &pb.GetPromptResponse{Common: asked}, nil
		}
		return &pb.GetPromptResponse{Messages: []*pb.PromptMessage{{Role: pb.Role_ROLE_USER, Text: &pb.TextContent{Text: "Greet " + name}}}}, nil
	}
	if req.GetName() != "greet" {
		return nil, status.Errorf(codes.NotFound, "no prompt %q", req.GetName())
	}
	return &pb.GetPromptResponse{Description: "a greeting", Messages: []*pb.PromptMessage{{Role: pb.Role_ROLE_USER,
		Text: &pb.TextContent{Text: "Hello, " + req.GetArguments()["name"] + "!"}}}}, nil
}

func (s *server) Complete(_ context.Context, req *pb.CompletionRequest) (*pb.CompletionResponse, error) {
	var vals []string
	for _, v := range []string{"alice", "albert", "bob"} {
		if strings.HasPrefix(v, req.GetArgument().GetValue()) {
			vals = append(vals, v)
		}
	}
	return &pb.CompletionResponse{Values: vals}, nil
}

// inputRequired is an answer that asks reqs, with state to be sent back.
func inputRequired(state string, reqs map[string]*pb.InputRequest) *pb.CallToolResponse {
	return &pb.CallToolResponse{Common: &pb.ResponseFields{ResultType: pb.ResultType_RESULT_TYPE_INPUT_REQUIRED,
		InputRequests: reqs, RequestState: &state}}
}

// ask runs the asking tools: the first call asks, the retry (its
// request_state the tool's own, its answer under the id asked) answers.
func ask(tool string, common *pb.RequestFields) (*pb.CallToolResponse, error) {
	state := "state-of-" + tool
	if common.GetRequestState() == "" {
		switch tool {
		case "ask_name":
			return inputRequired(state, map[string]*pb.InputRequest{"name": {ElicitRequest: &pb.ElicitRequest{Message: "your name?",
				RequestedSchema: map[string]*pb.PrimitiveSchemaDefinition{"name": {StringSchema: &pb.PrimitiveSchemaDefinition_StringSchema{Title: "Name"}}},
				RequiredFields:  []string{"name"}}}}), nil
		case "ask_sample":
			return inputRequired(state, map[string]*pb.InputRequest{"model": {SamplingCreateMessage: &pb.SamplingCreateMessageRequest{
				Messages:  []*pb.SamplingMessage{{Role: pb.Role_ROLE_USER, Text: &pb.TextContent{Text: "say hi"}}},
				MaxTokens: 50}}}), nil
		case "bad_ask":
			return inputRequired(state, map[string]*pb.InputRequest{"what": {}}), nil
		case "big_ask":
			return inputRequired(state, map[string]*pb.InputRequest{"big": {ElicitRequest: &pb.ElicitRequest{Message: strings.Repeat("x", 2<<20),
				RequestedSchema: map[string]*pb.PrimitiveSchemaDefinition{"name": {StringSchema: &pb.PrimitiveSchemaDefinition_StringSchema{}}}}}}), nil
		}
	}
	if common.GetRequestState() != state {
		return nil, status.Errorf(codes.InvalidArgument, "request_state %q is not %s's", common.GetRequestState(), tool)
	}
	rs := common.GetInputResponses()
	switch tool {
	case "ask_name":
		e := rs["name"].GetElicitResult()
		switch e.GetType() {
		case pb.ElicitResult_TYPE_ACCEPT:
			n, _ := e.GetContent().AsMap()["name"].(string)
			return &pb.CallToolResponse{Content: text("hello " + n)}, nil
		case pb.ElicitResult_TYPE_DECLINE:
			return &pb.CallToolResponse{Content: text("declined"), IsError: true}, nil
		case pb.ElicitResult_TYPE_CANCEL:
			return &pb.CallToolResponse{Content: text("cancelled"), IsError: true}, nil
		}
	case "ask_sample":
		if m := rs["model"].GetSamplingCreateMessageResult().GetMessage(); m.GetText() != nil {
			return &pb.CallToolResponse{Content: text("model said: " + m.GetText().GetText())}, nil
		}
	}
	return nil, status.Errorf(codes.InvalidArgument, "%s: no usable answer in input_responses (%d)", tool, len(rs))
}

// askedName is the name a prompt's or read's caller gave: without a
// request_state, the common fields that ask for it (a form elicitation
// under id "name"); with one, the name accepted or the action taken.
func askedName(common *pb.RequestFields) (string, *pb.ResponseFields) {
	if common.GetRequestState() == "" {
		return "", inputRequired("state-of-ask", map[string]*pb.InputRequest{"name": {ElicitRequest: &pb.ElicitRequest{Message: "whom?",
			RequestedSchema: map[string]*pb.PrimitiveSchemaDefinition{"name": {StringSchema: &pb.PrimitiveSchemaDefinition_StringSchema{}}},
			RequiredFields:  []string{"name"}}}}).GetCommon()
	}
	e := common.GetInputResponses()["name"].GetElicitResult()
	if e.GetType() == pb.ElicitResult_TYPE_ACCEPT {
		n, _ := e.GetContent().AsMap()["name"].(string)
		return n, nil
	}
	return strings.ToLower(strings.TrimPrefix(e.GetType().String(), "TYPE_")), nil
}
