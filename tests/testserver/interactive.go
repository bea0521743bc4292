package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Interactive tools (-interactive): tools that ask their caller for input.
//
// ask_name and ask_all ask the 2026-07-28 way (the result is
// input_required; the retry carries the answers). On a session of an older
// protocol go-sdk's server turns the same result into server-to-client
// requests sent mid-call, so the tools ask in both eras. ask_twice asks
// the older way only: two elicitation/create requests in a row, mid-call.
// ask_roots asks for the caller's roots only. ask_form asks a form whose
// fields have defaults and says which content came back (2026-07-28 only:
// go-sdk's server fills the defaults into a mid-call answer itself).
// ask_forever asks a name again whatever the answer (2026-07-28): an
// upstream that never ends its rounds. ask_wait asks the older way
// after delay_ms, works on for then_ms, and records under id, like
// wait_cancel, whether its call was cancelled (cancel_record): the soak's
// callers that never answer. ask_flood asks count elicitations of a
// bytes-long message at once, mid-call, and records under id how each was
// answered (flood_record): an upstream that asks more than a call may
// have waiting.

var nameSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"name": map[string]any{"type": "string", "description": "Your name"}},
	"required":   []any{"name"},
}

// formSchema has fields with defaults (ask_form).
var formSchema = map[string]any{
	"type":     "object",
	"required": []any{"name"},
	"properties": map[string]any{
		"name":  map[string]any{"type": "string"},
		"color": map[string]any{"type": "string", "default": "blue"},
		"size":  map[string]any{"type": "integer", "default": 3},
	},
}

func elicitAnswer(r mcp.InputResponse) string {
	er, ok := r.(*mcp.ElicitResult)
	if !ok {
		return fmt.Sprintf("not an elicitation answer: %T", r)
	}
	if er.Action != "accept" {
		return er.Action
	}
	return fmt.Sprint(er.Content["name"])
}

func addInteractive(s *mcp.Server) {
	addAskFlood(s)
	addAskOrder(s)
	s.AddTool(&mcp.Tool{Name: "ask_name", Description: "Ask the caller's name (form elicitation) and greet them.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["name"]; ok {
				a := elicitAnswer(r)
				switch a {
				case "decline", "cancel":
					return text(a + "d"), nil
				}
				return text("hello " + a), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"name": &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema},
			}, RequestState: "asked-name"}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_url", Description: "Send the caller to a URL (URL elicitation).", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["login"]; ok {
				er, _ := r.(*mcp.ElicitResult)
				if er == nil {
					return text("bad answer"), nil
				}
				return text("url " + er.Action), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"login": &mcp.ElicitParams{Mode: "url", Message: "Log in, please", URL: "https://login.example/authorize?x=1", ElicitationID: "el-1"},
			}, RequestState: "asked-url"}, nil
		})
	// ask_url_given sends the caller to the URL and with the message its
	// arguments give (a hostile upstream's URL request).
	s.AddTool(&mcp.Tool{Name: "ask_url_given", Description: "Send the caller to the given URL with the given message (URL elicitation).",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"url": map[string]any{"type": "string"}, "message": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["visit"]; ok {
				er, _ := r.(*mcp.ElicitResult)
				if er == nil {
					return text("bad answer"), nil
				}
				return text("url " + er.Action), nil
			}
			var args struct{ URL, Message string }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"visit": &mcp.ElicitParams{Mode: "url", Message: args.Message, URL: args.URL, ElicitationID: "el-given"},
			}, RequestState: "asked-url-given"}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_all", Description: "Ask for a name, a model's reply and the roots at once.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rs := req.Params.InputResponses
			if len(rs) == 3 {
				var parts []string
				parts = append(parts, "name="+elicitAnswer(rs["name"]))
				if cr, ok := rs["model"].(*mcp.CreateMessageWithToolsResult); ok && len(cr.Content) > 0 {
					if tc, ok := cr.Content[0].(*mcp.TextContent); ok {
						parts = append(parts, "model="+tc.Text)
					}
				} else if cr, ok := rs["model"].(*mcp.CreateMessageResult); ok {
					if tc, ok := cr.Content.(*mcp.TextContent); ok {
						parts = append(parts, "model="+tc.Text)
					}
				}
				if rr, ok := rs["roots"].(*mcp.ListRootsResult); ok {
					var uris []string
					for _, r := range rr.Roots {
						uris = append(uris, r.URI)
					}
					parts = append(parts, "roots="+strings.Join(uris, ","))
				}
				return text(strings.Join(parts, " ")), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"name": &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema},
				"model": &mcp.CreateMessageParams{MaxTokens: 20, Messages: []*mcp.SamplingMessage{
					{Role: "user", Content: &mcp.TextContent{Text: "Say hi"}}}},
				"roots": &mcp.ListRootsParams{},
			}, RequestState: "asked-all"}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_model", Description: "Ask the caller's model for a reply (sampling) and return it.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["model"]; ok {
				switch cr := r.(type) {
				case *mcp.CreateMessageResult:
					if tc, ok := cr.Content.(*mcp.TextContent); ok {
						return text("model=" + tc.Text), nil
					}
				case *mcp.CreateMessageWithToolsResult:
					if len(cr.Content) > 0 {
						if tc, ok := cr.Content[0].(*mcp.TextContent); ok {
							return text("model=" + tc.Text), nil
						}
					}
				}
				return text(fmt.Sprintf("bad answer: %T", r)), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"model": &mcp.CreateMessageParams{MaxTokens: 20, Messages: []*mcp.SamplingMessage{
					{Role: "user", Content: &mcp.TextContent{Text: "Say hi"}}}},
			}, RequestState: "asked-model"}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_twice", Description: "Ask two questions in a row, mid-call (elicitation/create; protocols before 2026-07-28).", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var got []string
			for _, q := range []string{"first", "second"} {
				res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: q + "?", RequestedSchema: nameSchema})
				if err != nil {
					return nil, fmt.Errorf("elicit %s: %w", q, err)
				}
				got = append(got, elicitAnswer(res))
			}
			return text(strings.Join(got, "+")), nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_form", Description: "Ask a form whose fields have defaults; say which content came back.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["order"]; ok {
				er, isElicit := r.(*mcp.ElicitResult)
				if !isElicit || er.Action != "accept" {
					return text(elicitAnswer(r)), nil
				}
				b, _ := json.Marshal(er.Content)
				return text("form " + string(b)), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"order": &mcp.ElicitParams{Message: "Your order?", RequestedSchema: formSchema},
			}, RequestState: "asked-form"}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_forever", Description: "Ask a name, again and again, whatever the answer.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"name": &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema},
			}, RequestState: "asked-again"}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_roots", Description: "Ask for the caller's roots and list them.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["roots"]; ok {
				rr, ok := r.(*mcp.ListRootsResult)
				if !ok {
					return text("bad answer"), nil
				}
				var uris []string
				for _, root := range rr.Roots {
					uris = append(uris, root.URI)
				}
				return text("roots=" + strings.Join(uris, ",")), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}, RequestState: "asked-roots"}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_wait", Description: "Wait delay_ms, ask a name mid-call (elicitation/create), wait then_ms; record under id whether the call was cancelled (see cancel_record)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in askWaitArgs) (*mcp.CallToolResult, any, error) {
			rec := &cancelRecord{Started: time.Now().UnixNano()}
			recMu.Lock()
			records[in.ID] = rec
			recMu.Unlock()
			cancelled := func() (*mcp.CallToolResult, any, error) {
				recMu.Lock()
				rec.Cancelled = time.Now().UnixNano()
				recMu.Unlock()
				return nil, nil, ctx.Err()
			}
			select {
			case <-time.After(time.Duration(in.DelayMS) * time.Millisecond):
			case <-ctx.Done():
				return cancelled()
			}
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: nameSchema})
			// Then work on for then_ms: a call whose question expired
			// (declined) is cancelled by toolsvc in this time.
			select {
			case <-time.After(time.Duration(in.ThenMS) * time.Millisecond):
			case <-ctx.Done():
				return cancelled()
			}
			recMu.Lock()
			rec.Finished = true
			recMu.Unlock()
			if err != nil {
				return text("elicit: " + err.Error()), nil, nil
			}
			return text(elicitAnswer(res)), nil, nil
		})
}

type askFloodArgs struct {
	ID    string `json:"id"`
	Count int    `json:"count"`
	Bytes int    `json:"bytes"`
}

// floodRecord is how ask_flood's requests were answered, by action
// ("accept", "decline", "cancel"), "ended" (the call was cancelled, or
// its stream closed, before an answer came) or "error: ..." (the client
// answered with a JSON-RPC error); Done once every one was.
type floodRecord struct {
	Answers map[string]int `json:"answers"`
	Done    bool           `json:"done"`
}

var (
	floodMu      sync.Mutex
	floodRecords = map[string]*floodRecord{}
)

func addAskFlood(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "ask_flood", Description: "Ask count elicitations with a message of bytes bytes at once, mid-call (elicitation/create); record under id how they were answered (see flood_record)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in askFloodArgs) (*mcp.CallToolResult, any, error) {
			rec := &floodRecord{Answers: map[string]int{}}
			floodMu.Lock()
			floodRecords[in.ID] = rec
			floodMu.Unlock()
			msg := strings.Repeat("x", in.Bytes)
			var wg sync.WaitGroup
			for range in.Count {
				wg.Go(func() {
					res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: nameSchema})
					var how string
					var answered *jsonrpc.Error
					switch {
					case err == nil:
						how = res.Action
					case errors.As(err, &answered) && !strings.Contains(err.Error(), "rejected by transport"):
						// The client answered with an error (go-sdk wraps a
						// write that failed as a JSON-RPC error too).
						how = "error: " + err.Error()
					default:
						// Never answered: the call was cancelled first, or
						// its stream closed before the request was written.
						how = "ended"
					}
					floodMu.Lock()
					rec.Answers[how]++
					floodMu.Unlock()
				})
			}
			wg.Wait()
			floodMu.Lock()
			rec.Done = true
			out := fmt.Sprint(rec.Answers)
			floodMu.Unlock()
			return text(out), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "flood_record", Description: "How ask_flood's requests of the call with this id were answered."},
		func(_ context.Context, _ *mcp.CallToolRequest, in idArgs) (*mcp.CallToolResult, *floodRecord, error) {
			floodMu.Lock()
			defer floodMu.Unlock()
			rec, ok := floodRecords[in.ID]
			if !ok {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no call with id " + in.ID}}}, nil, nil
			}
			cp := floodRecord{Answers: maps.Clone(rec.Answers), Done: rec.Done}
			return nil, &cp, nil
		})
}

type askWaitArgs struct {
	ID      string `json:"id"`
	DelayMS int    `json:"delay_ms,omitempty"`
	ThenMS  int    `json:"then_ms,omitempty"`
}

// addInteractivePrompts adds a prompt and a resource that ask the
// caller's name the way ask_name does (the result is input_required; go-sdk
// asks mid-request on an older session): prompts/get and resources/read
// can ask as tools/call can.
func addInteractivePrompts(s *mcp.Server) {
	ask := mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Who is this for?", RequestedSchema: nameSchema}}
	s.AddPrompt(&mcp.Prompt{Name: "ask_prompt", Description: "A greeting for the caller, who is asked their name."},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			r, ok := req.Params.InputResponses["name"]
			if !ok {
				return &mcp.GetPromptResult{InputRequests: ask, RequestState: "asked-prompt"}, nil
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Greet " + elicitAnswer(r)}}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "ask://greeting", Name: "greeting", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			r, ok := req.Params.InputResponses["name"]
			if !ok && req.ProtocolVersion() < "2026-07-28" {
				// go-sdk v1.8.0 does not turn a read's input_required into
				// mid-request requests for an older session (it fails the
				// read: "read handler returned nil information"), so the
				// read asks mid-request itself.
				res, err := req.Session.Elicit(ctx, ask["name"].(*mcp.ElicitParams))
				if err != nil {
					return nil, err
				}
				r, ok = res, true
			}
			if !ok {
				return &mcp.ReadResourceResult{InputRequests: ask, RequestState: "asked-read"}, nil
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ask://greeting", MIMEType: "text/plain",
				Text: "hello " + elicitAnswer(r)}}}, nil
		})
}

// orderSchema asks one field of each kind a form renders: text, number,
// boolean and a choice (ask_order).
var orderSchema = map[string]any{
	"type":     "object",
	"required": []any{"item", "count"},
	"properties": map[string]any{
		"item":  map[string]any{"type": "string", "title": "Item", "description": "What to order"},
		"count": map[string]any{"type": "integer", "title": "How many", "minimum": 1},
		"gift":  map[string]any{"type": "boolean", "title": "Gift wrap"},
		"size":  map[string]any{"type": "string", "title": "Size", "enum": []any{"small", "large"}},
	},
}

// addAskOrder: ask_order reports progress (two steps of three) and logs a
// line (logger "order"), then asks the order form (the 2026-07-28 way, so
// mid-call on older sessions); with the answer it reports the third step
// and returns (each round 200 ms after its last progress) "ordered <count> <item> (gift=<gift>, size=<size>)". The
// console's Playground streams all of it.
func addAskOrder(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "ask_order", Description: "Report progress, log a line, ask an order form (text, number, boolean, choice) and confirm it.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			step := func(i int, msg string) {
				if tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: msg})
				}
			}
			// A notification the client handles after the round's result
			// is dropped (the call is over): let the last one settle first.
			settle := func() {
				select {
				case <-time.After(200 * time.Millisecond):
				case <-ctx.Done():
				}
			}
			if r, ok := req.Params.InputResponses["order"]; ok {
				step(3, "order received")
				settle()
				er, isElicit := r.(*mcp.ElicitResult)
				if !isElicit || er.Action != "accept" {
					return text(elicitAnswer(r)), nil
				}
				c := er.Content
				return text(fmt.Sprintf("ordered %v %v (gift=%v, size=%v)", c["count"], c["item"], c["gift"], c["size"])), nil
			}
			step(1, "checking stock")
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "order", Data: "stock checked: <b>all</b> in store"})
			step(2, "waiting for the order")
			settle()
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"order": &mcp.ElicitParams{Message: "What would you like? <i>(not markup)</i>", RequestedSchema: orderSchema},
			}, RequestState: "asked-order"}, nil
		})
}
