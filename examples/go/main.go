// Binary go demonstrates a toolsvc client in Go: list the catalog, watch it,
// call a tool, call one with progress streaming, and resume the watch from the
// last revision seen.
//
//	go run ./examples/go ADDR TOOL [ARGS_JSON [STREAM_TOOL STREAM_ARGS_JSON]]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

func main() {
	if len(os.Args) < 3 {
		log.Fatal("usage: go ADDR TOOL [ARGS_JSON]")
	}
	args := "{}"
	if len(os.Args) > 3 {
		args = os.Args[3]
	}
	streamTool, streamArgs := os.Args[2], "{}"
	if len(os.Args) > 5 {
		streamTool, streamArgs = os.Args[4], os.Args[5]
	}
	if err := run(os.Args[1], os.Args[2], args, streamTool, streamArgs); err != nil {
		log.Fatal(err)
	}
}

func run(addr, tool, args, streamTool, streamArgs string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	c := toolsvcv1.NewToolServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// List: page until next_page_token is empty.
	for token := ""; ; {
		page, err := c.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageToken: token})
		if err != nil {
			return err
		}
		for _, t := range page.GetTools() {
			fmt.Println("tool", t.GetName())
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}

	// Watch: the first message is a snapshot; keep its revision.
	wctx, stop := context.WithCancel(ctx)
	watch, err := c.WatchCatalog(wctx, &toolsvcv1.WatchCatalogRequest{})
	if err != nil {
		stop()
		return err
	}
	first, err := watch.Recv()
	stop() // as if the connection dropped
	if err != nil {
		return err
	}
	revision := first.GetRevision()
	fmt.Println("snapshot", revision, len(first.GetSnapshot().GetTools()), "tools")

	// Call. A tool's own failure is IsError, not an RPC error.
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: args})
	if err != nil {
		return err
	}
	var text strings.Builder
	for _, content := range res.GetContent() {
		text.WriteString(content.GetText().GetText())
	}
	outcome := "ok"
	if res.GetIsError() {
		outcome = "is_error"
	}
	fmt.Println("call", tool, outcome, text.String())

	// Streaming call: progress as it comes, the result last.
	stream, err := c.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: streamTool, ArgumentsJson: streamArgs})
	if err != nil {
		return err
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if p := msg.GetProgress(); p != nil {
			fmt.Printf("progress %g/%g %s\n", p.GetProgress(), p.GetTotal(), p.GetMessage())
			continue
		}
		var text strings.Builder
		for _, content := range msg.GetResult().GetContent() {
			text.WriteString(content.GetText().GetText())
		}
		fmt.Println("stream result", map[bool]string{false: "ok", true: "is_error"}[msg.GetResult().GetIsError()], text.String())
	}

	// Resume from the last revision: only what changed since arrives.
	fmt.Println("resumed from", revision)
	watch, err = c.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{ResumeToken: revision})
	if err != nil {
		return err
	}
	for {
		ev, err := watch.Recv()
		if errors.Is(err, io.EOF) {
			return errors.New("watch ended")
		} else if err != nil {
			return err
		}
		revision = ev.GetRevision() // always keep the latest as the resume token
		switch e := ev.GetEvent().(type) {
		case *toolsvcv1.WatchCatalogResponse_Changes:
			var names []string
			for _, t := range e.Changes.GetUpserted() {
				names = append(names, "+"+t.GetName())
			}
			for _, n := range e.Changes.GetRemoved() {
				names = append(names, "-"+n)
			}
			fmt.Println("changes", revision, strings.Join(names, " "))
			return nil
		case *toolsvcv1.WatchCatalogResponse_Synced:
			fmt.Println("synced", revision)
		case *toolsvcv1.WatchCatalogResponse_Progress:
			fmt.Println("progress", revision)
		case *toolsvcv1.WatchCatalogResponse_Snapshot: // reset: replace all state
			fmt.Println("snapshot", revision, len(e.Snapshot.GetTools()), "tools")
		}
	}
}
