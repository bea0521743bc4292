package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// TestMCPFrontComplete: completion/complete on the front door goes through
// the core's completion: the front door declares the capability, a
// ref/prompt names the exposed prompt (the upstream is asked under its own
// name), a ref/resource names a template by its URI template (its server
// is the one the caller may use that lists it), and refusals are the
// core's errors naming the MCP field, in both protocol eras.
func TestMCPFrontComplete(t *testing.T) {
	t.Parallel()
	asked := make(chan *mcp.CompleteParams, 16)
	handler := func(server string) func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		return func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			asked <- req.Params
			v := server + ":" + req.Params.Ref.Name + req.Params.Ref.URI + ":" + req.Params.Argument.Value
			if d := req.Params.Context; d != nil {
				v += ":" + d.Arguments["k"]
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{v}, Total: 5, HasMore: true}}, nil
		}
	}
	noop := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	var cfgs []mcpbridge.ServerConfig
	for _, name := range []string{"a", "b"} {
		up := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{CompletionHandler: handler(name)})
		up.AddPrompt(&mcp.Prompt{Name: "trip"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		up.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "x://items/{id}", Name: "item"}, noop)
		var sessions []*mcp.ServerSession
		t.Cleanup(func() {
			for _, ss := range sessions {
				_ = ss.Close()
			}
		})
		cfgs = append(cfgs, mcpbridge.ServerConfig{Name: name, NewTransport: func() (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := up.Connect(context.Background(), st, nil)
			sessions = append(sessions, ss)
			return ct, err
		}})
	}
	b, err := mcpbridge.New(mcpbridge.Config{Servers: cfgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	<-b.Ready()
	deadline := time.Now().Add(defaultTestTimeout)
	for len(b.Resources().Current().Templates) != 2 || len(b.Resources().Current().Prompts) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the prompts and templates were never listed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := core.New(b, core.Options{Auth: core.AuthConfig{
		Authenticator: core.NewAuthenticator(map[string]string{"tok-alice-0123456789": "alice", "tok-root-01234567890": "root"}, nil, false),
		Authorizer:    core.NewAuthorizer([]core.Rule{{Principal: "alice", Allow: []string{"a__*"}}, {Principal: "root"}}, nil),
	}})
	ctx, srv := serveFront(t, c, Options{ListenAddr: "127.0.0.1:0"}, 0)

	for _, version := range []string{"2025-11-25", ""} { // "": the newest, 2026-07-28
		name := version
		if name == "" {
			name = "newest"
		}
		t.Run(name, func(t *testing.T) {
			mc := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			alice := connectFront(t, ctx, mc, srv.URL, "tok-alice-0123456789", version)
			root := connectFront(t, ctx, mc, srv.URL, "tok-root-01234567890", version)
			if ir := alice.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Completions == nil {
				t.Fatalf("the front door does not declare completions: %+v", ir)
			}

			res, err := alice.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "a__trip"},
				Argument: mcp.CompleteParamsArgument{Name: "city", Value: "Ber"}, Context: &mcp.CompleteContext{Arguments: map[string]string{"k": "v"}}})
			if err != nil || !slices.Equal(res.Completion.Values, []string{"a:trip:Ber:v"}) || res.Completion.Total != 5 || !res.Completion.HasMore {
				t.Fatalf("ref/prompt a__trip: %+v, %v", res, err)
			}
			if p := <-asked; p.Ref.Name != "trip" || p.Argument.Name != "city" {
				t.Errorf("the upstream was asked %+v", p)
			}
			res, err = alice.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "x://items/{id}"},
				Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"}})
			if err != nil || !slices.Equal(res.Completion.Values, []string{"a:x://items/{id}:4"}) {
				t.Fatalf("ref/resource for alice (a's template, b's is not hers): %+v, %v", res, err)
			}
			<-asked

			for _, tc := range []struct {
				name   string
				cs     *mcp.ClientSession
				p      *mcp.CompleteParams
				code   int64
				reason string
				field  string
			}{
				{"no argument name", alice, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "a__trip"}},
					jsonrpc.CodeInvalidParams, core.ReasonRequestInvalid, "argument.name"},
				{"no ref", alice, &mcp.CompleteParams{Argument: mcp.CompleteParamsArgument{Name: "city"}},
					jsonrpc.CodeInvalidParams, core.ReasonRequestInvalid, "ref"},
				{"unknown prompt", alice, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "a__nope"}, Argument: mcp.CompleteParamsArgument{Name: "x"}},
					jsonrpc.CodeInvalidParams, core.ReasonPromptNotFound, "ref.name"},
				{"a prompt outside the rules", alice, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "b__trip"}, Argument: mcp.CompleteParamsArgument{Name: "x"}},
					-32000, core.ReasonPermissionDenied, ""},
				{"unknown template", alice, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "x://items/1"}, Argument: mcp.CompleteParamsArgument{Name: "x"}},
					mcpCodeResourceNotFound, core.ReasonResourceNotFound, "ref.uri"},
				{"a template two servers list", root, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "x://items/{id}"}, Argument: mcp.CompleteParamsArgument{Name: "x"}},
					jsonrpc.CodeInvalidParams, core.ReasonRequestInvalid, "ref.uri"},
			} {
				_, err := tc.cs.Complete(ctx, tc.p)
				var werr *jsonrpc.Error
				if !errors.As(err, &werr) || werr.Code != tc.code {
					t.Errorf("%s: %v, want JSON-RPC error %d", tc.name, err, tc.code)
					continue
				}
				var data struct {
					Reason string   `json:"reason"`
					Fields []string `json:"fields"`
				}
				if err := json.Unmarshal(werr.Data, &data); err != nil || data.Reason != tc.reason || (tc.field != "" && !slices.Contains(data.Fields, tc.field)) {
					t.Errorf("%s: data %s, want reason %s and field %q", tc.name, werr.Data, tc.reason, tc.field)
				}
				if tc.field != "" && !strings.HasPrefix(werr.Message, tc.field+":") {
					t.Errorf("%s: message %q does not start with the field %s", tc.name, werr.Message, tc.field)
				}
			}
		})
	}
}
