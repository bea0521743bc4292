package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// runResources lists every resource, then every resource template.
func runResources(ctx context.Context, args []string) error {
	f := newClientFlags("resources")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	var res []*toolsvcv1.Resource
	for tok := ""; ; {
		resp, err := c.ListResources(ctx, &toolsvcv1.ListResourcesRequest{PageSize: 1000, PageToken: tok})
		if err != nil {
			return err
		}
		res = append(res, resp.GetResources()...)
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
	}
	var tmpls []*toolsvcv1.ResourceTemplate
	for tok := ""; ; {
		resp, err := c.ListResourceTemplates(ctx, &toolsvcv1.ListResourceTemplatesRequest{PageSize: 1000, PageToken: tok})
		if err != nil {
			return err
		}
		tmpls = append(tmpls, resp.GetResourceTemplates()...)
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
	}
	if *f.json {
		printJSON(&toolsvcv1.ListResourcesResponse{Resources: res})
		printJSON(&toolsvcv1.ListResourceTemplatesResponse{ResourceTemplates: tmpls})
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "URI\tSERVER\tMIME TYPE\tNAME")
	for _, r := range res {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", termSafe(r.GetUri()), termSafe(r.GetServer()), termSafe(r.GetMimeType()), termSafe(r.GetName()))
	}
	for _, t := range tmpls {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s (template)\n", termSafe(t.GetUriTemplate()), termSafe(t.GetServer()), termSafe(t.GetMimeType()), termSafe(t.GetName()))
	}
	return w.Flush()
}

// runRead reads a resource: text is printed, binary contents are written
// to stdout as raw bytes (redirect them to a file).
func runRead(ctx context.Context, args []string) error {
	f := newClientFlags("read")
	server := f.fs.String("server", "", "the upstream server (may be omitted when only one offers the URI)")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.fs.NArg() != 1 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc read [--addr ADDR] [--json] [--server NAME] URI")}
	}
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	resp, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: *server, Uri: f.fs.Arg(0)})
	if err != nil {
		return callError(err)
	}
	if *f.json {
		printJSON(resp)
		return nil
	}
	for _, rc := range resp.GetContents() {
		switch rc.GetContents().(type) {
		case *toolsvcv1.ResourceContents_Blob:
			if _, err := os.Stdout.Write(rc.GetBlob()); err != nil {
				return err
			}
		default:
			fmt.Println(termText(rc.GetText()))
		}
	}
	return nil
}

// runPrompts lists every prompt with its arguments (required ones marked
// with "*").
func runPrompts(ctx context.Context, args []string) error {
	f := newClientFlags("prompts")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	var all []*toolsvcv1.Prompt
	for tok := ""; ; {
		resp, err := c.ListPrompts(ctx, &toolsvcv1.ListPromptsRequest{PageSize: 1000, PageToken: tok})
		if err != nil {
			return err
		}
		all = append(all, resp.GetPrompts()...)
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
	}
	if *f.json {
		printJSON(&toolsvcv1.ListPromptsResponse{Prompts: all})
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSERVER\tARGUMENTS\tDESCRIPTION")
	for _, p := range all {
		var as []string
		for _, a := range p.GetArguments() {
			n := termSafe(a.GetName())
			if a.GetRequired() {
				n += "*"
			}
			as = append(as, n)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", termSafe(p.GetName()), termSafe(p.GetServer()), strings.Join(as, ","), termSafe(truncate(strings.ReplaceAll(p.GetDescription(), "\n", " "), 70)))
	}
	return w.Flush()
}

// runPrompt renders a prompt: toolsvc prompt NAME [ARG=VALUE ...].
func runPrompt(ctx context.Context, args []string) error {
	f := newClientFlags("prompt")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.fs.NArg() < 1 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc prompt [--addr ADDR] [--json] NAME [ARG=VALUE ...]")}
	}
	req := &toolsvcv1.GetPromptRequest{Name: f.fs.Arg(0), Arguments: map[string]string{}}
	for _, kv := range f.fs.Args()[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return &exitError{code: 2, err: fmt.Errorf("prompt argument %q: want ARG=VALUE", kv)}
		}
		req.Arguments[k] = v
	}
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	resp, err := c.GetPrompt(ctx, req)
	if err != nil {
		return callError(err)
	}
	if *f.json {
		printJSON(resp)
		return nil
	}
	for _, m := range resp.GetMessages() {
		fmt.Printf("%s: ", termSafe(m.GetRole()))
		printResult(os.Stdout, &toolsvcv1.CallToolResponse{Content: []*toolsvcv1.Content{m.GetContent()}})
	}
	return nil
}
