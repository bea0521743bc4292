// Binary go demonstrates a toolsvc client in Go: list the catalog, watch it,
// call a tool, call one with progress streaming, and resume the watch from the
// last revision seen.
//
//	go run ./examples/go ADDR TOOL [ARGS_JSON [STREAM_TOOL STREAM_ARGS_JSON [WAIT_S]]]
//
// Without STREAM_TOOL the streaming call calls TOOL with ARGS_JSON again.
// The resumed watch stops at the first change, or at "synced" (nothing
// changed yet) unless WAIT_S (default 0) asks to watch that many seconds
// more for one.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolsvc/toolsvc/catalogwatch"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

func main() {
	if len(os.Args) < 3 {
		log.Fatal("usage: go ADDR TOOL [ARGS_JSON [STREAM_TOOL STREAM_ARGS_JSON [WAIT_S]]]")
	}
	args := "{}"
	if len(os.Args) > 3 {
		args = os.Args[3]
	}
	streamTool, streamArgs := os.Args[2], args // without a streaming tool, the same call streamed
	if len(os.Args) > 4 {
		streamTool, streamArgs = os.Args[4], "{}"
	}
	if len(os.Args) > 5 {
		streamArgs = os.Args[5]
	}
	var wait time.Duration
	if len(os.Args) > 6 {
		secs, err := strconv.ParseFloat(os.Args[6], 64)
		if err != nil {
			log.Fatalf("WAIT_S: %v", err)
		}
		wait = time.Duration(secs * float64(time.Second))
	}
	if err := run(os.Args[1], os.Args[2], args, streamTool, streamArgs, wait); err != nil {
		log.Fatal(err)
	}
}

func run(addr, tool, args, streamTool, streamArgs string, wait time.Duration) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	c := toolsvcv1.NewToolServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+wait)
	defer cancel()
	if err := list(ctx, c); err != nil {
		return err
	}
	revision, held, err := firstSnapshot(ctx, c)
	if err != nil {
		return err
	}
	if err := call(ctx, c, tool, args); err != nil {
		return err
	}
	if err := streamCall(ctx, c, streamTool, streamArgs); err != nil {
		return err
	}
	if err := resume(ctx, c, revision, held, wait); err != nil {
		return err
	}
	return resourcesAndPrompts(ctx, c)
}

// list pages through the catalog until next_page_token is empty.
func list(ctx context.Context, c toolsvcv1.ToolServiceClient) error {
	for token := ""; ; {
		page, err := c.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageToken: token})
		if err != nil {
			return err
		}
		for _, t := range page.GetTools() {
			fmt.Println("tool", t.GetName())
		}
		if token = page.GetNextPageToken(); token == "" {
			return nil
		}
	}
}

// firstSnapshot watches with the project's resuming client (package
// catalogwatch): it keeps a local catalog and resumes by itself when a
// stream ends. It takes the first snapshot, then stops, as if the process
// went away, and returns what it held.
func firstSnapshot(ctx context.Context, c toolsvcv1.ToolServiceClient) (string, []*toolsvcv1.Tool, error) {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	first := catalogwatch.New(c, catalogwatch.Options{OnEvent: func(catalogwatch.Event) { stop() }})
	if err := first.Run(wctx); err != nil && wctx.Err() == nil {
		return "", nil, err
	}
	revision, held := first.Revision(), first.Tools()
	fmt.Println("snapshot", revision, len(held), "tools")
	return revision, held, nil
}

// call calls a tool. A tool's own failure is IsError, not an RPC error.
func call(ctx context.Context, c toolsvcv1.ToolServiceClient, tool, args string) error {
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: args})
	if err != nil {
		return err
	}
	fmt.Println("call", tool, outcome(res), resultText(res))
	return nil
}

// streamCall calls a tool with progress streaming: progress as it comes,
// the result last.
func streamCall(ctx context.Context, c toolsvcv1.ToolServiceClient, tool, args string) error {
	stream, err := c.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: tool, ArgumentsJson: args})
	if err != nil {
		return err
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if p := msg.GetProgress(); p != nil {
			fmt.Printf("progress %g/%g %s\n", p.GetProgress(), p.GetTotal(), p.GetMessage())
			continue
		}
		fmt.Println("stream result", outcome(msg.GetResult()), resultText(msg.GetResult()))
	}
}

func outcome(r *toolsvcv1.CallToolResponse) string {
	if r.GetIsError() {
		return "is_error"
	}
	return "ok"
}

func resultText(r *toolsvcv1.CallToolResponse) string {
	var text strings.Builder
	for _, content := range r.GetContent() {
		text.WriteString(content.GetText().GetText())
	}
	return text.String()
}

// resume watches from the last revision with the catalog held: only what
// changed since arrives. It returns at the first change, or at synced (or
// a reset snapshot: the catalog held is then current) unless wait asks to
// watch that much longer for a change.
func resume(ctx context.Context, c toolsvcv1.ToolServiceClient, revision string, held []*toolsvcv1.Tool, wait time.Duration) error {
	fmt.Println("resumed from", revision)
	rctx, done := context.WithCancel(ctx)
	defer done()
	var timer *time.Timer // OnEvent runs on Run's goroutine: no lock needed
	changed := false
	resumed := catalogwatch.New(c, catalogwatch.Options{ResumeToken: revision, Initial: held,
		OnEvent: func(ev catalogwatch.Event) {
			switch ev.Kind {
			case catalogwatch.Changes:
				var names []string
				for _, t := range ev.Upserted {
					names = append(names, "+"+t.GetName())
				}
				for _, n := range ev.Removed {
					names = append(names, "-"+n)
				}
				fmt.Println("changes", ev.Revision, strings.Join(names, " "))
				changed = true
				done()
			case catalogwatch.Progress:
				fmt.Println(ev.Kind, ev.Revision)
			default: // synced, or a snapshot/reset that replaced the local catalog
				fmt.Println(ev.Kind, ev.Revision)
				if wait <= 0 {
					done()
				} else if timer == nil {
					timer = time.AfterFunc(wait, done)
				}
			}
		}})
	err := resumed.Run(rctx)
	if timer != nil {
		timer.Stop()
	}
	if err != nil && rctx.Err() == nil {
		return err
	}
	if ctx.Err() != nil {
		return errors.New("watch ended before the catalog was current")
	}
	if !changed && wait > 0 {
		fmt.Printf("no change within %v\n", wait)
	}
	return nil
}

// resourcesAndPrompts reads the first resource listed (server + uri; a
// resource_link from a tool result reads the same way, with the called
// tool's server) and gets the first prompt listed (required arguments set
// to "world").
func resourcesAndPrompts(ctx context.Context, c toolsvcv1.ToolServiceClient) error {
	res, err := c.ListResources(ctx, &toolsvcv1.ListResourcesRequest{})
	if err != nil {
		return err
	}
	for _, r := range res.GetResources() {
		fmt.Println("resource", r.GetServer(), r.GetUri())
	}
	if rs := res.GetResources(); len(rs) > 0 {
		read, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: rs[0].GetServer(), Uri: rs[0].GetUri()})
		if err != nil {
			return err
		}
		for _, rc := range read.GetContents() {
			body, _, _ := strings.Cut(rc.GetText(), "\n")
			if rc.GetBlob() != nil {
				body = fmt.Sprintf("%d bytes", len(rc.GetBlob()))
			}
			fmt.Println("read", rc.GetUri(), body)
		}
	}
	ps, err := c.ListPrompts(ctx, &toolsvcv1.ListPromptsRequest{})
	if err != nil {
		return err
	}
	for _, p := range ps.GetPrompts() {
		fmt.Println("prompt", p.GetName())
	}
	if len(ps.GetPrompts()) > 0 {
		p := ps.GetPrompts()[0]
		args := map[string]string{}
		for _, a := range p.GetArguments() {
			if a.GetRequired() {
				args[a.GetName()] = "world"
			}
		}
		got, err := c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: p.GetName(), Arguments: args})
		if err != nil {
			return err
		}
		for _, m := range got.GetMessages() {
			fmt.Println("got prompt", p.GetName(), m.GetRole()+":", m.GetContent().GetText().GetText())
		}
	}
	return nil
}
