package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Tasks on the command line (docs/cli.md, "Tasks from the shell"):
//
//	toolsvc call --task [--ttl D] [--detach] NAME [ARGS]   start a task (and follow it)
//	toolsvc tasks [--server S]                             the caller's tasks on this replica
//	toolsvc task HANDLE [--watch | --cancel]               one task
//
// Following a task is WatchTask, called again with the same handle (on any
// replica) whenever the stream breaks: status changes go to stderr, the
// result to stdout as `toolsvc call` prints it. A task that waits for input
// (2026-07-28 upstreams) is answered on a terminal with the prompts of
// ask.go, through UpdateTask.

// Exit codes of the task commands, beyond call's (1 an error, 3 the tool
// reported an error).
const (
	exitTaskCancelled   = 4   // the task ended cancelled
	exitTaskInterrupted = 130 // Ctrl-C while following; the task goes on
)

// Resume backoff of a broken watch: full jitter, doubling from
// taskResumeMin to taskResumeMax, back to the minimum after a stream that
// delivered something.
const (
	taskResumeMin = 100 * time.Millisecond
	taskResumeMax = 5 * time.Second
)

// handlePrefixLen is how much of a handle `toolsvc tasks` shows: "t1." and
// 12 characters of its random nonce, enough to tell a principal's tasks
// apart; `toolsvc task` takes such a prefix back.
const handlePrefixLen = 15

// runCallTask is `toolsvc call --task`: a CallTool that asks for a task.
// When the upstream ran the call normally the result is printed as `call`
// prints it (input rounds answered like call's, over the unary RPC).
func runCallTask(ctx context.Context, f clientFlags, req *toolsvcv1.CallToolRequest, detach bool, ask *asker) error {
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	var resp *toolsvcv1.CallToolResponse
	for {
		if resp, err = c.CallTool(ctx, req); err != nil {
			return callError(err)
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
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			retry := proto.CloneOf(req)
			retry.InputResponses, retry.RequestState = cancelAll(ir), ir.GetRequestState()
			_, _ = c.CallTool(cctx, retry)
			cancel()
			return err
		}
		retry := proto.CloneOf(req)
		retry.InputResponses, retry.RequestState = answers, ir.GetRequestState()
		req = retry
	}
	task := resp.GetTask()
	if task == nil {
		// The upstream or the tool cannot run tasks: the call ran as usual.
		fmt.Fprintln(os.Stderr, "toolsvc: the upstream ran the call without a task")
		return printCallResult(resp, *f.json)
	}
	if detach {
		if *f.json {
			printJSON(task)
		} else {
			fmt.Println(task.GetHandle())
		}
		fmt.Fprintf(os.Stderr, "task %s on %s (id %s): %s\n  follow it: toolsvc task %s --watch\n",
			shortHandle(task.GetHandle()), termSafe(task.GetServer()), termSafe(task.GetTaskId()),
			statusName(task.GetStatus()), task.GetHandle())
		return nil
	}
	fmt.Fprintf(os.Stderr, "task %s\n", task.GetHandle())
	fw := &taskFollower{c: c, handle: task.GetHandle(), ask: ask, out: os.Stderr, json: *f.json}
	return fw.run(ctx)
}

// printCallResult prints a call's result as `toolsvc call` does; a tool's
// own failure exits 3.
func printCallResult(resp *toolsvcv1.CallToolResponse, jsonOutput bool) error {
	if jsonOutput {
		printJSON(resp)
	} else {
		printResult(os.Stdout, resp)
	}
	if resp.GetIsError() {
		return &exitError{code: 3, err: errors.New("the tool reported an error")}
	}
	return nil
}

func runTasks(ctx context.Context, args []string) error {
	f := newClientFlags("tasks")
	server := f.fs.String("server", "", "only the tasks of this server (configured name)")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.fs.NArg() != 0 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc tasks [--addr ADDR] [--json] [--server S]")}
	}
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	resp, err := c.ListTasks(ctx, &toolsvcv1.ListTasksRequest{Server: *server})
	if err != nil {
		return callError(err)
	}
	if *f.json {
		printJSON(resp)
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "HANDLE\tTASK ID\tTOOL\tSERVER\tSTATUS\tUPDATED\tMESSAGE")
	for _, t := range resp.GetTasks() {
		updated := "-"
		if u := t.GetUpdateTime(); u != nil {
			updated = u.AsTime().Local().Format("15:04:05")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(shortHandle(t.GetHandle())), termSafe(t.GetTaskId()),
			termSafe(t.GetTool()), termSafe(t.GetServer()), statusName(t.GetStatus()), updated,
			termSafe(truncate(t.GetStatusMessage(), 60)))
	}
	return w.Flush()
}

func runTask(ctx context.Context, args []string) error {
	f := newClientFlags("task")
	watch := f.fs.Bool("watch", false, "follow the task to its end (status changes on stderr, the result on stdout); resumes by itself when a stream breaks")
	cancel := f.fs.Bool("cancel", false, "cancel the task")
	noInput := f.fs.Bool("no-input", false, "with --watch: never answer a task that waits for input (the default without a terminal on stdin)")
	usage := errors.New("usage: toolsvc task [--addr ADDR] [--json] HANDLE [--watch [--no-input] | --cancel]\n" +
		"  HANDLE: a task handle, its prefix as `toolsvc tasks` shows it, or the task id")
	// The handle and the flags in any order.
	handles, err := parseInterleaved(f.fs, args)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if len(handles) != 1 || (*watch && *cancel) {
		return &exitError{code: 2, err: usage}
	}
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	handle, err := resolveHandle(ctx, c, handles[0])
	if err != nil {
		return err
	}
	switch {
	case *watch:
		var ask *asker
		if !*noInput && term.IsTerminal(int(os.Stdin.Fd())) {
			ask = newAsker(os.Stdin, os.Stderr)
		}
		fw := &taskFollower{c: c, handle: handle, ask: ask, out: os.Stderr, json: *f.json}
		return fw.run(ctx)
	case *cancel:
		resp, err := c.CancelTask(ctx, &toolsvcv1.CancelTaskRequest{Handle: handle})
		if err != nil {
			return callError(err)
		}
		if *f.json {
			printJSON(resp)
		} else {
			printTask(os.Stdout, resp.GetTask())
		}
		return nil
	}
	resp, err := c.GetTask(ctx, &toolsvcv1.GetTaskRequest{Handle: handle})
	if err != nil {
		return callError(err)
	}
	if *f.json {
		printJSON(resp)
		return nil
	}
	printTask(os.Stdout, resp.GetTask())
	if res := resp.GetResult(); res != nil {
		fmt.Println()
		return printCallResult(res, false)
	}
	if e := resp.GetError(); e != nil {
		return taskError(e)
	}
	return nil
}

// resolveHandle is the handle arg names: arg itself when it is a whole
// handle ("t1." and more than a prefix), else the one task of ListTasks whose handle starts with arg or
// whose task id is arg (only tasks this replica knows of are listed).
func resolveHandle(ctx context.Context, c toolsvcv1.ToolServiceClient, arg string) (string, error) {
	arg = strings.TrimSuffix(strings.TrimSpace(arg), "…")
	if arg == "" || (strings.HasPrefix(arg, "t1.") && len(arg) > 40) {
		return arg, nil // a handle; the server checks it
	}
	resp, err := c.ListTasks(ctx, &toolsvcv1.ListTasksRequest{})
	if err != nil {
		return "", callError(err)
	}
	var found []string
	for _, t := range resp.GetTasks() {
		if strings.HasPrefix(t.GetHandle(), arg) || t.GetTaskId() == arg {
			found = append(found, t.GetHandle())
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no task of yours matches %q on this replica (`toolsvc tasks` lists them; a task another replica created needs its whole handle)", termSafe(arg))
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%q matches %d tasks: give more of the handle", termSafe(arg), len(found))
}

// printTask prints a task's fields, one a line.
func printTask(w io.Writer, t *toolsvcv1.Task) {
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%-10s%s\n", k+":", v)
		}
	}
	line("handle", t.GetHandle())
	line("task id", termSafe(t.GetTaskId()))
	line("tool", termSafe(t.GetTool()))
	line("server", termSafe(t.GetServer()))
	st := statusName(t.GetStatus())
	if m := t.GetStatusMessage(); m != "" {
		st += ": " + termSafe(truncate(m, 200))
	}
	line("status", st)
	line("protocol", termSafe(t.GetProtocolVersion()))
	if ts := t.GetCreateTime(); ts != nil {
		line("created", ts.AsTime().Local().Format(time.DateTime))
	}
	if ts := t.GetUpdateTime(); ts != nil {
		line("updated", ts.AsTime().Local().Format(time.DateTime))
	}
	if d := t.GetTtl(); d != nil {
		line("ttl", d.AsDuration().String())
	}
	if d := t.GetPollInterval(); d != nil {
		line("poll", d.AsDuration().String())
	}
	for _, r := range t.GetInputRequired().GetRequests() {
		line("asks", inputSummary(r))
	}
}

// inputSummary is one line about an input request.
func inputSummary(r *toolsvcv1.InputRequest) string {
	switch q := r.GetRequest().(type) {
	case *toolsvcv1.InputRequest_Elicitation:
		return "a form: " + termSafe(truncate(q.Elicitation.GetMessage(), 100))
	case *toolsvcv1.InputRequest_ElicitationUrl:
		return "to open a URL: " + termSafe(truncate(q.ElicitationUrl.GetMessage(), 100))
	case *toolsvcv1.InputRequest_Roots:
		return "roots"
	case *toolsvcv1.InputRequest_Sampling:
		return "a model's answer (sampling)"
	}
	return "input of an unknown kind"
}

func statusName(s toolsvcv1.TaskStatus) string {
	if s == toolsvcv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
		return "-"
	}
	return strings.ToLower(strings.TrimPrefix(s.String(), "TASK_STATUS_"))
}

func shortHandle(h string) string {
	if len(h) > handlePrefixLen {
		return h[:handlePrefixLen]
	}
	return h
}

func taskEnded(s toolsvcv1.TaskStatus) bool {
	switch s {
	case toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED, toolsvcv1.TaskStatus_TASK_STATUS_FAILED, toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED:
		return true
	}
	return false
}

// taskError renders a task's error as callError renders a status.
func taskError(e *toolsvcv1.TaskError) error {
	msg := fmt.Sprintf("%s: %s", codes.Code(e.GetCode()), e.GetMessage())
	if r := e.GetReason(); r != "" {
		msg += "\n  reason: " + r
	}
	return errors.New(msg)
}

// taskFollower follows one task with WatchTask to its end, resuming the
// watch when it breaks, answering input on a terminal when ask is set.
type taskFollower struct {
	c      toolsvcv1.ToolServiceClient
	handle string
	ask    *asker    // nil: never answer input
	out    io.Writer // status changes
	json   bool      // status changes as Task JSON lines; the result as JSON

	shown    bool // a status was printed
	status   toolsvcv1.TaskStatus
	message  string
	answered map[string]bool // input rounds answered (or hinted), by their request ids
}

// run follows the task and prints its outcome: the result on stdout (exit
// 3 for a tool's own failure), an error, or cancelled (exit 4).
func (fw *taskFollower) run(ctx context.Context) error {
	last, err := fw.follow(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitTaskInterrupted, err: fmt.Errorf("interrupted; the task goes on: toolsvc task %s --watch (or --cancel)", fw.handle)}
		}
		return err
	}
	switch {
	case last.GetResult() != nil:
		return printCallResult(last.GetResult(), fw.json)
	case last.GetError() != nil:
		return taskError(last.GetError())
	case last.GetTask().GetStatus() == toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED:
		return &exitError{code: exitTaskCancelled, err: errors.New("the task was cancelled")}
	}
	return fmt.Errorf("the task ended %s without a result", statusName(last.GetTask().GetStatus()))
}

// follow watches until the terminal state and returns its message.
func (fw *taskFollower) follow(ctx context.Context) (*toolsvcv1.WatchTaskResponse, error) {
	wait := taskResumeMin
	for {
		last, delivered, err := fw.stream(ctx)
		if err == nil {
			return last, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !resumable(err) {
			return nil, callError(err)
		}
		if delivered {
			wait = taskResumeMin
		}
		d := rand.N(wait) + time.Millisecond
		if ri := retryDelay(err); ri > d {
			d = ri
		}
		fmt.Fprintf(fw.out, "watch: stream ended (%s: %s); resuming in %s\n",
			status.Code(err), termSafe(status.Convert(err).Message()), d.Round(time.Millisecond))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wait = min(2*wait, taskResumeMax)
	}
}

// errStreamEnded is a watch that ended OK before the terminal state: not
// the contract, so it is resumed like a broken one.
var errStreamEnded = status.Error(codes.Unavailable, "the watch ended before the task did")

// stream is one WatchTask stream: nil error with the terminal message, or
// the error that ended it (a status error, or a failed UpdateTask rendered
// for people, which is not resumable).
func (fw *taskFollower) stream(ctx context.Context) (last *toolsvcv1.WatchTaskResponse, delivered bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := fw.c.WatchTask(ctx, &toolsvcv1.WatchTaskRequest{Handle: fw.handle})
	if err != nil {
		return nil, false, err
	}
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return nil, delivered, errStreamEnded
		}
		if err != nil {
			return nil, delivered, err
		}
		delivered = true
		fw.show(m.GetTask())
		if taskEnded(m.GetTask().GetStatus()) || m.GetResult() != nil || m.GetError() != nil {
			return m, true, nil
		}
		if m.GetTask().GetStatus() == toolsvcv1.TaskStatus_TASK_STATUS_INPUT_REQUIRED {
			if err := fw.input(ctx, m.GetTask().GetInputRequired()); err != nil {
				return nil, true, err
			}
		}
	}
}

// show prints a status change (the first state too); a state a resumed
// watch repeats prints nothing.
func (fw *taskFollower) show(t *toolsvcv1.Task) {
	if fw.shown && t.GetStatus() == fw.status && t.GetStatusMessage() == fw.message {
		return
	}
	fw.shown, fw.status, fw.message = true, t.GetStatus(), t.GetStatusMessage()
	if fw.json {
		b, _ := jsonOut.Marshal(t)
		fmt.Fprintln(fw.out, string(b))
		return
	}
	line := "status " + statusName(t.GetStatus())
	if m := t.GetStatusMessage(); m != "" {
		line += ": " + termSafe(truncate(m, 200))
	}
	fmt.Fprintln(fw.out, line)
}

// input answers one round of a task's input requests, once: on the
// terminal, or (no terminal, --no-input) by saying how to answer. The
// person giving up (stdin ended, Ctrl-C) answers cancel, so the tool hears
// at once that nobody will answer.
func (fw *taskFollower) input(ctx context.Context, ir *toolsvcv1.InputRequired) error {
	var ids []string
	for _, r := range ir.GetRequests() {
		ids = append(ids, r.GetId())
	}
	slices.Sort(ids)
	key := strings.Join(ids, "\x00")
	if fw.answered[key] {
		return nil
	}
	if fw.answered == nil {
		fw.answered = map[string]bool{}
	}
	fw.answered[key] = true
	switch {
	case len(ids) == 0:
		// The upstream said input_required but not what it asks: a
		// 2025-11-25 task asks on its tasks/result stream, which toolsvc
		// does not surface as requests.
		fmt.Fprintln(fw.out, "the task waits for input the upstream does not describe; it cannot be answered here")
		return nil
	case fw.ask == nil:
		fmt.Fprintf(fw.out, "the task waits for input; answer it on a terminal: toolsvc task %s --watch\n", fw.handle)
		return nil
	}
	answers, err := fw.ask.answer(ctx, ir)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = fw.c.UpdateTask(cctx, &toolsvcv1.UpdateTaskRequest{Handle: fw.handle, InputResponses: cancelAll(ir)})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	_, err = fw.c.UpdateTask(ctx, &toolsvcv1.UpdateTaskRequest{Handle: fw.handle, InputResponses: answers})
	if err != nil && reasonOf(err) != "TASK_NOT_WAITING" { // answered meanwhile, elsewhere
		return callError(err)
	}
	return nil
}

// resumable says whether a watch that ended with err is called again:
// a broken stream or a replica going away (UNAVAILABLE, SHUTTING_DOWN
// included), and a rate limit that says when to come back.
func resumable(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unavailable:
		return true
	case codes.ResourceExhausted:
		return retryDelay(err) > 0
	}
	return false
}

func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// taskOptions is --task/--ttl as CallToolRequest.task.
func taskOptions(ttl time.Duration) *toolsvcv1.TaskOptions {
	o := &toolsvcv1.TaskOptions{}
	if ttl > 0 {
		o.Ttl = durationpb.New(ttl)
	}
	return o
}
