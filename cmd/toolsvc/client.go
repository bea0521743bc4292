package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/catalogwatch"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

type clientFlags struct {
	fs   *flag.FlagSet
	addr *string
	json *bool
}

func newClientFlags(name string) clientFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	return clientFlags{
		fs:   fs,
		addr: fs.String("addr", "localhost:50051", "toolsvc gRPC address"),
		json: fs.Bool("json", false, "print protobuf JSON"),
	}
}

func dial(addr string) (toolsvcv1.ToolServiceClient, func(), error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return toolsvcv1.NewToolServiceClient(conn), func() { conn.Close() }, nil
}

var jsonOut = protojson.MarshalOptions{Multiline: false, EmitUnpopulated: false}

func printJSON(m proto.Message) {
	b, _ := jsonOut.Marshal(m)
	fmt.Println(string(b))
}

func runTools(ctx context.Context, args []string) error {
	f := newClientFlags("tools")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	c, closeConn, err := dial(*f.addr)
	if err != nil {
		return err
	}
	defer closeConn()
	var all []*toolsvcv1.Tool
	tok := ""
	for {
		resp, err := c.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1000, PageToken: tok})
		if err != nil {
			return err
		}
		all = append(all, resp.GetTools()...)
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
	}
	if *f.json {
		printJSON(&toolsvcv1.ListToolsResponse{Tools: all})
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSERVER\tAVAILABLE\tDESCRIPTION")
	for _, t := range all {
		desc := strings.ReplaceAll(t.GetDescription(), "\n", " ")
		if len(desc) > 70 {
			desc = desc[:67] + "..."
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\n", t.GetName(), t.GetServer(), t.GetAvailable(), desc)
	}
	return w.Flush()
}

func runCall(ctx context.Context, args []string) error {
	f := newClientFlags("call")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.fs.NArg() < 1 || f.fs.NArg() > 2 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc call [--addr ADDR] [--json] NAME [ARGS_JSON]")}
	}
	req := &toolsvcv1.CallToolRequest{Name: f.fs.Arg(0)}
	if f.fs.NArg() == 2 {
		req.ArgumentsJson = f.fs.Arg(1)
	}
	c, closeConn, err := dial(*f.addr)
	if err != nil {
		return err
	}
	defer closeConn()
	resp, err := c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if *f.json {
		printJSON(resp)
	} else {
		printResult(os.Stdout, resp)
	}
	if resp.GetIsError() {
		return &exitError{code: 3, err: errors.New("the tool reported an error")}
	}
	return nil
}

// printResult prints text content as is, other content as one JSON line
// each, and structured content as JSON when there is no other content.
func printResult(w io.Writer, resp *toolsvcv1.CallToolResponse) {
	for _, c := range resp.GetContent() {
		if t := c.GetText(); t != nil {
			fmt.Fprintln(w, t.GetText())
			continue
		}
		b, _ := jsonOut.Marshal(c)
		fmt.Fprintln(w, string(b))
	}
	if sc := resp.GetStructuredContent(); sc != nil && len(resp.GetContent()) == 0 {
		b, _ := json.Marshal(sc.AsMap())
		fmt.Fprintln(w, string(b))
	}
}

func runWatch(ctx context.Context, args []string) error {
	f := newClientFlags("watch")
	resume := f.fs.String("resume", "", "resume from this revision (print only what changed since)")
	servers := f.fs.String("servers", "", "comma-separated server names: watch only their tools")
	excludeUnavailable := f.fs.Bool("exclude-unavailable", false, "leave out tools whose upstream is not ready")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.fs.NArg() != 0 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc watch [--addr ADDR] [--json] [--resume REV] [--servers A,B] [--exclude-unavailable]")}
	}
	c, closeConn, err := dial(*f.addr)
	if err != nil {
		return err
	}
	defer closeConn()
	opts := catalogwatch.Options{
		ExcludeUnavailable: *excludeUnavailable,
		OnEvent: func(ev catalogwatch.Event) {
			if *f.json {
				printJSON(ev.Raw)
			} else {
				fmt.Println(formatWatchEvent(ev))
			}
		},
		OnRetry: func(err error, wait time.Duration) {
			fmt.Fprintf(os.Stderr, "watch: stream ended (%s: %s); resuming in %s\n",
				status.Code(err), status.Convert(err).Message(), wait.Round(time.Millisecond))
		},
	}
	if *servers != "" {
		opts.Servers = strings.Split(*servers, ",")
	}
	if *resume != "" {
		// The CLI prints events and keeps no catalog of its own, so an
		// empty initial catalog is enough to resume from.
		opts.ResumeToken, opts.Initial = *resume, []*toolsvcv1.Tool{}
	}
	err = catalogwatch.New(c, opts).Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// formatWatchEvent is one human-readable line: time, revision, kind, names
// (+ upserted, ! upserted but unavailable, - removed), at most
// maxWatchNames of them.
func formatWatchEvent(ev catalogwatch.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %-8s", time.Now().Format("15:04:05.000"), ev.Revision, ev.Kind)
	var names []string
	for _, t := range append(slices.Clip(ev.Tools), ev.Upserted...) {
		p := ""
		switch {
		case !t.GetAvailable():
			p = "!"
		case ev.Kind == catalogwatch.Changes:
			p = "+"
		}
		names = append(names, p+t.GetName())
	}
	for _, n := range ev.Removed {
		names = append(names, "-"+n)
	}
	if ev.Kind == catalogwatch.Snapshot || ev.Kind == catalogwatch.Reset {
		fmt.Fprintf(&b, " %d tools:", len(ev.Tools))
	}
	for i, n := range names {
		if i == maxWatchNames {
			fmt.Fprintf(&b, " … (%d more)", len(names)-i)
			break
		}
		b.WriteString(" " + n)
	}
	return b.String()
}

const maxWatchNames = 50

func runServers(ctx context.Context, args []string) error {
	f := newClientFlags("servers")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	c, closeConn, err := dial(*f.addr)
	if err != nil {
		return err
	}
	defer closeConn()
	resp, err := c.ListServers(ctx, &toolsvcv1.ListServersRequest{})
	if err != nil {
		return err
	}
	if *f.json {
		printJSON(resp)
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tTRANSPORT\tSTATE\tTOOLS\tCONNECTS\tLAST REFRESH\tLAST ERROR")
	for _, s := range resp.GetServers() {
		refresh := "-"
		if s.GetLastRefreshTime() != nil {
			refresh = strings.TrimPrefix(s.GetLastRefreshOutcome().String(), "REFRESH_OUTCOME_") + " " +
				s.GetLastRefreshTime().AsTime().Local().Format("15:04:05")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.GetName(),
			strings.ToLower(strings.TrimPrefix(s.GetTransport().String(), "TRANSPORT_")),
			strings.ToLower(strings.TrimPrefix(s.GetState().String(), "SERVER_STATE_")),
			s.GetToolCount(), s.GetConnectCount(), refresh, s.GetLastError())
	}
	return w.Flush()
}
