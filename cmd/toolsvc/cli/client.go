package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

	"golang.org/x/term"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/catalogwatch"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

type clientFlags struct {
	fs    *flag.FlagSet
	addr  *string
	json  *bool
	token *string
	tlsCA *string
	tls   *bool
}

func newClientFlags(name string) clientFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	return clientFlags{
		fs:    fs,
		addr:  fs.String("addr", defaultAddr(), "toolsvc gRPC address (default $TOOLSVC_ADDR, else localhost:50051)"),
		json:  fs.Bool("json", false, "print protobuf JSON"),
		token: fs.String("token", "", "bearer token sent as \"authorization: Bearer …\" (default $TOOLSVC_TOKEN)"),
		tls:   fs.Bool("tls", false, "connect with TLS (system roots, or --tls-ca)"),
		tlsCA: fs.String("tls-ca", "", "verify the server against this CA (PEM); implies --tls"),
	}
}

func defaultAddr() string {
	if a := os.Getenv("TOOLSVC_ADDR"); a != "" {
		return a
	}
	return "localhost:50051"
}

// connect opens a connection with the flags' transport security and token.
func (f clientFlags) connect() (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if *f.tls || *f.tlsCA != "" {
		conf := &tls.Config{MinVersion: tls.VersionTLS12}
		if *f.tlsCA != "" {
			pem, err := os.ReadFile(*f.tlsCA)
			if err != nil {
				return nil, fmt.Errorf("--tls-ca: %w", err)
			}
			conf.RootCAs = x509.NewCertPool()
			if !conf.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-ca %s: no PEM certificates", *f.tlsCA)
			}
		}
		creds = credentials.NewTLS(conf)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	token := *f.token
	if token == "" {
		token = os.Getenv("TOOLSVC_TOKEN") // read here, so -help never prints it
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: token, secure: *f.tls || *f.tlsCA != ""}))
	}
	return grpc.NewClient(*f.addr, opts...)
}

// bearer sends a bearer token with every call (also over plaintext, for
// loopback and sidecar setups; use --tls elsewhere).
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

func dial(f clientFlags) (toolsvcv1.ToolServiceClient, func(), error) {
	conn, err := f.connect()
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
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	var all []*toolsvcv1.Tool
	tok := ""
	// The table shows no schemas: ask for JSON text, the cheaper form.
	// --json prints the Struct form, as it always did.
	format := toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON
	if *f.json {
		format = toolsvcv1.SchemaFormat_SCHEMA_FORMAT_STRUCT
	}
	for {
		resp, err := c.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1000, PageToken: tok, SchemaFormat: format})
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
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\n", termSafe(t.GetName()), termSafe(t.GetServer()), t.GetAvailable(), termSafe(desc))
	}
	return w.Flush()
}

func runCall(ctx context.Context, args []string) error {
	f := newClientFlags("call")
	noInput := f.fs.Bool("no-input", false, "never ask: offer no input_capabilities, so the server's policy answers a tool that asks (the default without a terminal on stdin)")
	asTask := f.fs.Bool("task", false, "run the call as a task when the upstream and the tool can (README \"Tasks\"): print the task's handle, then follow it to its result")
	ttl := f.fs.Duration("ttl", 0, "with --task: the task lifetime to ask for (a hint the upstream may lower or ignore)")
	detach := f.fs.Bool("detach", false, "with --task: print the handle and return; follow it later with toolsvc task HANDLE --watch")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.fs.NArg() < 1 || f.fs.NArg() > 2 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc call [--addr ADDR] [--json] [--no-input] [--task [--ttl D] [--detach]] NAME [ARGS_JSON]")}
	}
	if !*asTask && (*ttl != 0 || *detach) {
		return &exitError{code: 2, err: errors.New("--ttl and --detach go with --task")}
	}
	if *ttl < 0 {
		return &exitError{code: 2, err: errors.New("--ttl must be positive")}
	}
	if *asTask {
		req := &toolsvcv1.CallToolRequest{Name: f.fs.Arg(0), ArgumentsJson: f.fs.Arg(1), Task: taskOptions(*ttl)}
		var ask *asker
		if !*noInput && term.IsTerminal(int(os.Stdin.Fd())) {
			req.InputCapabilities = terminalInput
			ask = newAsker(os.Stdin, os.Stderr)
		}
		return runCallTask(ctx, f, req, *detach, ask)
	}
	req := &toolsvcv1.CallToolStreamRequest{Name: f.fs.Arg(0)}
	if f.fs.NArg() == 2 {
		req.ArgumentsJson = f.fs.Arg(1)
	}
	// On a terminal the person at the keyboard answers a tool that asks
	// (ask.go); otherwise nothing is offered and the server's policy
	// answers, as for any caller that offers nothing.
	var ask *asker
	if !*noInput && term.IsTerminal(int(os.Stdin.Fd())) {
		req.InputCapabilities = terminalInput
		ask = newAsker(os.Stdin, os.Stderr)
	}
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	prog := newProgressPrinter(os.Stderr, *f.json)
	var resp *toolsvcv1.CallToolResponse
	for {
		if resp, err = callRound(ctx, c, req, prog); err != nil {
			return err
		}
		ir := resp.GetInputRequired()
		if ir == nil {
			break
		}
		if ask == nil {
			return errors.New("the server asked for input, though none was offered")
		}
		answers, err := ask.answer(ctx, ir)
		if err != nil {
			cancelRounds(ctx, c, req, ir, prog)
			return err
		}
		retry := proto.CloneOf(req)
		retry.InputResponses, retry.RequestState = answers, ir.GetRequestState()
		req = retry
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

// cancelRounds answers cancel to the round ir asks, and to any round the
// tool asks next (a few at most), so the tool hears at once that nobody
// will answer rather than wait for the state's expiry.
func cancelRounds(ctx context.Context, c toolsvcv1.ToolServiceClient, req *toolsvcv1.CallToolStreamRequest, ir *toolsvcv1.InputRequired, prog *progressPrinter) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for range 5 {
		retry := proto.CloneOf(req)
		retry.InputResponses, retry.RequestState = cancelAll(ir), ir.GetRequestState()
		resp, err := callRound(cctx, c, retry, prog)
		if ir = resp.GetInputRequired(); err != nil || ir == nil {
			return
		}
	}
}

// callRound is one CallToolStream: progress as it comes, then the result
// or the input_required that ends the round.
func callRound(ctx context.Context, c toolsvcv1.ToolServiceClient, req *toolsvcv1.CallToolStreamRequest, prog *progressPrinter) (*toolsvcv1.CallToolResponse, error) {
	stream, err := c.CallToolStream(ctx, req)
	if err != nil {
		return nil, callError(err)
	}
	defer prog.done()
	for {
		msg, err := stream.Recv()
		if err != nil {
			if err == io.EOF {
				return nil, errors.New("the stream ended without a result")
			}
			return nil, callError(err)
		}
		switch ev := msg.GetEvent().(type) {
		case *toolsvcv1.CallToolStreamResponse_Progress:
			prog.show(ev.Progress)
		case *toolsvcv1.CallToolStreamResponse_Result:
			return ev.Result, nil
		}
	}
}

// callError renders a failed call's status: code, message, the ErrorInfo
// reason, field violations and the retry hint.
func callError(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", st.Code(), st.Message())
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			fmt.Fprintf(&b, "\n  reason: %s", d.GetReason())
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				if line := fmt.Sprintf("%s: %s", v.GetField(), v.GetDescription()); line != st.Message() {
					fmt.Fprintf(&b, "\n  %s", line)
				}
			}
		case *errdetails.RetryInfo:
			fmt.Fprintf(&b, "\n  retry after %s", d.GetRetryDelay().AsDuration())
		}
	}
	return errors.New(b.String())
}

// progressPrinter shows a call's progress on w: a bar redrawn in place
// when w is a terminal, one line per message otherwise, JSON lines with
// --json.
type progressPrinter struct {
	w        io.Writer
	json     bool
	terminal bool
	drawn    bool
}

func newProgressPrinter(f *os.File, jsonLines bool) *progressPrinter {
	p := &progressPrinter{w: f, json: jsonLines}
	if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		p.terminal = true
	}
	return p
}

func (p *progressPrinter) show(pr *toolsvcv1.CallToolProgress) {
	switch {
	case p.json:
		b, _ := jsonOut.Marshal(pr)
		fmt.Fprintln(p.w, string(b))
	case p.terminal:
		const width = 30
		line := fmt.Sprintf("%g", pr.GetProgress())
		if pr.Total != nil && pr.GetTotal() > 0 {
			frac := min(max(pr.GetProgress()/pr.GetTotal(), 0), 1)
			n := int(frac * width)
			line = fmt.Sprintf("[%s%s] %3.0f%% %g/%g", strings.Repeat("#", n), strings.Repeat(" ", width-n), frac*100, pr.GetProgress(), pr.GetTotal())
		}
		if m := pr.GetMessage(); m != "" {
			line += " " + termSafe(truncate(m, 60))
		}
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.drawn = true
	default:
		line := fmt.Sprintf("progress %g", pr.GetProgress())
		if pr.Total != nil {
			line += fmt.Sprintf("/%g", pr.GetTotal())
		}
		if m := pr.GetMessage(); m != "" {
			line += " " + termSafe(m)
		}
		fmt.Fprintln(p.w, line)
	}
}

// done clears the bar.
func (p *progressPrinter) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}

// printResult prints text content as is and every other kind as a short
// bracketed description (--json prints everything), then structured
// content as JSON when there is no other content.
func printResult(w io.Writer, resp *toolsvcv1.CallToolResponse) {
	for _, item := range resp.GetContent() {
		switch c := item.GetContent().(type) {
		case *toolsvcv1.Content_Text:
			fmt.Fprintln(w, termText(c.Text.GetText()))
		case *toolsvcv1.Content_Image:
			fmt.Fprintf(w, "[image %s, %s]\n", termSafe(orUnknown(c.Image.GetMimeType())), byteSize(len(c.Image.GetData())))
		case *toolsvcv1.Content_Audio:
			fmt.Fprintf(w, "[audio %s, %s]\n", termSafe(orUnknown(c.Audio.GetMimeType())), byteSize(len(c.Audio.GetData())))
		case *toolsvcv1.Content_ResourceLink:
			l := c.ResourceLink
			desc := fmt.Sprintf("[resource link %s", l.GetUri())
			if l.GetName() != "" {
				desc += fmt.Sprintf(" %q", l.GetName())
			}
			if l.GetMimeType() != "" {
				desc += " " + l.GetMimeType()
			}
			if l.Size != nil {
				desc += ", " + byteSize(int(l.GetSize()))
			}
			fmt.Fprintln(w, termSafe(desc)+"]")
		case *toolsvcv1.Content_Resource:
			r := c.Resource.GetResource()
			desc := fmt.Sprintf("[resource %s", r.GetUri())
			if r.GetMimeType() != "" {
				desc += " " + r.GetMimeType()
			}
			switch r.GetContents().(type) {
			case *toolsvcv1.ResourceContents_Blob:
				desc += ", " + byteSize(len(r.GetBlob()))
			default:
				desc += fmt.Sprintf(", %d characters of text", len([]rune(r.GetText())))
			}
			fmt.Fprintln(w, termSafe(desc)+"]")
		default:
			b, _ := jsonOut.Marshal(item)
			fmt.Fprintln(w, string(b))
		}
	}
	if sc := resp.GetStructuredContent(); sc != nil && len(resp.GetContent()) == 0 {
		b, _ := json.Marshal(sc.AsMap())
		fmt.Fprintln(w, string(b))
	}
}

func orUnknown(mime string) string {
	if mime == "" {
		return "(no MIME type)"
	}
	return mime
}

func byteSize(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
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
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	opts := catalogwatch.Options{
		ExcludeUnavailable: *excludeUnavailable,
		// Lines show no schemas: JSON text is the cheaper form; --json
		// prints the Struct form, as it always did.
		SchemaFormat: toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON,
		OnEvent: func(ev catalogwatch.Event) {
			if *f.json {
				printJSON(ev.Raw)
			} else {
				fmt.Println(formatWatchEvent(ev))
			}
		},
		OnRetry: func(err error, wait time.Duration) {
			fmt.Fprintf(os.Stderr, "watch: stream ended (%s: %s); resuming in %s\n",
				status.Code(err), termSafe(status.Convert(err).Message()), wait.Round(time.Millisecond))
		},
	}
	if *f.json {
		opts.SchemaFormat = toolsvcv1.SchemaFormat_SCHEMA_FORMAT_STRUCT
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
		names = append(names, p+termSafe(t.GetName()))
	}
	for _, n := range ev.Removed {
		names = append(names, "-"+termSafe(n))
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
	c, closeConn, err := dial(f)
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
	fmt.Fprintln(w, "NAME\tTRANSPORT\tSTATE\tTOOLS\tCONNECTS\tBREAKER\tLAST REFRESH\tLAST ERROR")
	for _, s := range resp.GetServers() {
		refresh := "-"
		if s.GetLastRefreshTime() != nil {
			refresh = strings.TrimPrefix(s.GetLastRefreshOutcome().String(), "REFRESH_OUTCOME_") + " " +
				s.GetLastRefreshTime().AsTime().Local().Format("15:04:05")
		}
		breaker := strings.ToLower(strings.TrimPrefix(s.GetBreakerState().String(), "BREAKER_STATE_"))
		if s.GetBreakerRetryTime() != nil {
			breaker += " until " + s.GetBreakerRetryTime().AsTime().Local().Format("15:04:05")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", termSafe(s.GetName()),
			strings.ToLower(strings.TrimPrefix(s.GetTransport().String(), "TRANSPORT_")),
			strings.ToLower(strings.TrimPrefix(s.GetState().String(), "SERVER_STATE_")),
			s.GetToolCount(), s.GetConnectCount(), breaker, refresh, termSafe(s.GetLastError()))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if ds := resp.GetDiscoverySources(); len(ds) > 0 {
		fmt.Println()
		w = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "DISCOVERY SOURCE\tSTATE\tSINCE\tSYNCED\tOBJECTS\tLAST ERROR")
		for _, d := range ds {
			since := "-"
			if d.GetStateTime() != nil {
				since = d.GetStateTime().AsTime().Local().Format("15:04:05")
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%d\t%s\n", termSafe(d.GetName()),
				strings.ToLower(strings.TrimPrefix(d.GetState().String(), "DISCOVERY_SOURCE_STATE_")), since,
				d.GetSynced(), d.GetObjectCount(), termSafe(d.GetLastError()))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if cs := resp.GetConfig(); cs != nil && !cs.GetLastReloadOk() {
		fmt.Printf("\nconfig reload FAILED at %s; the previous configuration keeps running:\n%s\n",
			cs.GetLastReloadTime().AsTime().Local().Format("15:04:05"), termText(cs.GetLastReloadError()))
	}
	return nil
}
