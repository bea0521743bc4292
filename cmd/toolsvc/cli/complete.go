package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// contextArgs is a repeatable --context NAME=VALUE flag.
type contextArgs map[string]string

func (c contextArgs) String() string { return "" }
func (c contextArgs) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want NAME=VALUE", kv)
	}
	c[k] = v
	return nil
}

const completeUsage = "usage: toolsvc complete [--addr ADDR] [--json] (--prompt NAME | --template SERVER URI_TEMPLATE) --arg NAME [--value TEXT] [--context NAME=VALUE]..."

// runComplete is `toolsvc complete`: the completions of one argument of a
// prompt (--prompt, its exposed name) or of a resource template
// (--template SERVER URI_TEMPLATE; an empty SERVER is the one server that
// lists it), one value a line; flags and the template's URI in any order.
func runComplete(ctx context.Context, args []string) error {
	f := newClientFlags("complete")
	prompt := f.fs.String("prompt", "", "the prompt's exposed name (as `toolsvc prompts` lists it)")
	server := f.fs.String("template", "", "the resource template's server (then the URI template follows; \"\": the one server that lists it)")
	arg := f.fs.String("arg", "", "the argument to complete")
	value := f.fs.String("value", "", "what has been typed of it so far")
	ctxArgs := contextArgs{}
	f.fs.Var(ctxArgs, "context", "an argument already resolved, NAME=VALUE (repeatable)")
	rest, err := parseInterleaved(f.fs, args)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	template := false
	f.fs.Visit(func(fl *flag.Flag) { template = template || fl.Name == "template" })
	req := &toolsvcv1.CompleteRequest{ArgumentName: *arg, ArgumentValue: *value, ContextArguments: ctxArgs}
	switch {
	case template && *prompt == "" && len(rest) == 1:
		req.Ref = &toolsvcv1.CompleteRequest_ResourceTemplate{ResourceTemplate: &toolsvcv1.ResourceKey{Server: *server, Uri: rest[0]}}
	case !template && *prompt != "" && len(rest) == 0:
		req.Ref = &toolsvcv1.CompleteRequest_Prompt{Prompt: *prompt}
	default:
		return &exitError{code: 2, err: errors.New(completeUsage)}
	}
	if *arg == "" {
		return &exitError{code: 2, err: errors.New(completeUsage)}
	}
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	resp, err := c.Complete(ctx, req)
	if err != nil {
		return callError(err)
	}
	if *f.json {
		printJSON(resp)
		return nil
	}
	for _, v := range resp.GetValues() {
		fmt.Println(termSafe(v))
	}
	switch {
	case len(resp.GetValues()) == 0:
		fmt.Fprintln(os.Stderr, "no completions")
	case resp.Total != nil && resp.GetHasMore():
		fmt.Fprintf(os.Stderr, "(%d of %d; more exist)\n", len(resp.GetValues()), resp.GetTotal())
	case resp.Total != nil:
		fmt.Fprintf(os.Stderr, "(%d of %d)\n", len(resp.GetValues()), resp.GetTotal())
	case resp.GetHasMore():
		fmt.Fprintln(os.Stderr, "(more exist)")
	}
	return nil
}
