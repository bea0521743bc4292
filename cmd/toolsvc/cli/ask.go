package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Asking on a terminal (docs/interactive.md, "The command line"): when `toolsvc call` runs
// on a terminal it offers form and URL elicitation and roots, and answers
// an input_required by asking the person at the keyboard. It never offers
// sampling: a CLI has no model to run. Roots are answered with the current
// directory as one file:// root, announced on the terminal, since that is
// the directory the person chose to run the tool from.
//
// Everything an upstream sends (messages, titles, descriptions, choices,
// URLs) is printed through termSafe/termText/termLine/showURL: it must not
// drive the terminal, and a URL is shown as a browser's address bar shows
// it (docs/security.md, "What the CLI prints").

// terminalInput is what `toolsvc call` offers on a terminal.
var terminalInput = &toolsvcv1.InputCapabilities{Elicitation: true, ElicitationUrl: true, Roots: true}

// errNoAnswer means stdin ended while a question waited: the call is
// cancelled.
var errNoAnswer = errors.New("stdin ended before the answer")

// asker asks the questions of an input_required on a terminal: prompts go
// to out, answers are read a line at a time from in.
type asker struct {
	out   io.Writer
	lines chan string // closed when in ends
	err   error       // why in ended; read after lines is closed
	cwd   func() (string, error)
}

// newAsker reads in on a goroutine of its own, so that a question can be
// given up when ctx ends (Ctrl-C). That goroutine cannot be awaited: it
// blocks in a read of the terminal until the process exits, which is soon
// after the call ends.
func newAsker(in io.Reader, out io.Writer) *asker {
	a := &asker{out: out, lines: make(chan string), cwd: os.Getwd}
	go func() {
		defer close(a.lines)
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadString('\n')
			if err != nil && line == "" {
				a.err = err // read once lines is closed
				return
			}
			a.lines <- strings.TrimRight(line, "\r\n")
		}
	}()
	return a
}

// readLine prints the prompt and reads one line.
func (a *asker) readLine(ctx context.Context, prompt string) (string, error) {
	fmt.Fprint(a.out, prompt)
	select {
	case l, ok := <-a.lines:
		if !ok {
			fmt.Fprintln(a.out)
			if errors.Is(a.err, io.EOF) {
				return "", errNoAnswer
			}
			return "", fmt.Errorf("reading the answer: %w", a.err)
		}
		return strings.TrimSpace(l), nil
	case <-ctx.Done():
		fmt.Fprintln(a.out)
		return "", ctx.Err()
	}
}

// answer asks every request of one round and returns the answers.
func (a *asker) answer(ctx context.Context, ir *toolsvcv1.InputRequired) ([]*toolsvcv1.InputResponse, error) {
	reqs := ir.GetRequests()
	if exp := ir.GetExpireTime(); exp != nil && len(reqs) > 0 {
		fmt.Fprintf(a.out, "The tool needs your input (answer by %s).\n", exp.AsTime().Local().Format("15:04:05"))
	}
	var out []*toolsvcv1.InputResponse
	for _, r := range reqs {
		resp := &toolsvcv1.InputResponse{Id: r.GetId()}
		switch q := r.GetRequest().(type) {
		case *toolsvcv1.InputRequest_Elicitation:
			e, err := a.form(ctx, q.Elicitation)
			if err != nil {
				return nil, err
			}
			resp.Response = &toolsvcv1.InputResponse_Elicitation{Elicitation: e}
		case *toolsvcv1.InputRequest_ElicitationUrl:
			e, err := a.visit(ctx, q.ElicitationUrl)
			if err != nil {
				return nil, err
			}
			resp.Response = &toolsvcv1.InputResponse_Elicitation{Elicitation: e}
		case *toolsvcv1.InputRequest_Roots:
			roots, err := a.roots()
			if err != nil {
				return nil, err
			}
			resp.Response = &toolsvcv1.InputResponse_Roots{Roots: roots}
		case *toolsvcv1.InputRequest_Sampling:
			return nil, errors.New("the tool asks to run a model (sampling), which toolsvc call does not offer")
		default:
			return nil, fmt.Errorf("the tool asks for input of a kind this toolsvc does not know (request %q)", termSafe(r.GetId()))
		}
		out = append(out, resp)
	}
	return out, nil
}

// cancelAll answers every request with cancel (URL and form alike); roots
// get an empty list.
func cancelAll(ir *toolsvcv1.InputRequired) []*toolsvcv1.InputResponse {
	var out []*toolsvcv1.InputResponse
	for _, r := range ir.GetRequests() {
		resp := &toolsvcv1.InputResponse{Id: r.GetId()}
		switch r.GetRequest().(type) {
		case *toolsvcv1.InputRequest_Roots:
			resp.Response = &toolsvcv1.InputResponse_Roots{Roots: &toolsvcv1.RootsResponse{}}
		case *toolsvcv1.InputRequest_Sampling:
			continue // never offered
		default:
			resp.Response = &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "cancel"}}
		}
		out = append(out, resp)
	}
	return out
}

// roots is the current directory as one file:// root.
func (a *asker) roots() (*toolsvcv1.RootsResponse, error) {
	dir, err := a.cwd()
	if err != nil {
		return nil, fmt.Errorf("the tool asks for roots: %w", err)
	}
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	fmt.Fprintf(a.out, "The tool asked for roots: sharing the current directory, %s\n", termSafe(u))
	return &toolsvcv1.RootsResponse{Roots: []*toolsvcv1.Root{{Uri: u, Name: filepath.Base(dir)}}}, nil
}

// action asks accept, decline or cancel; accept is the default.
func (a *asker) action(ctx context.Context, prompt string) (string, error) {
	for {
		l, err := a.readLine(ctx, prompt)
		if err != nil {
			return "", err
		}
		switch strings.ToLower(l) {
		case "", "a", "accept", "y", "yes":
			return "accept", nil
		case "d", "decline", "n", "no":
			return "decline", nil
		case "c", "cancel":
			return "cancel", nil
		}
		fmt.Fprintln(a.out, "  please answer a (accept), d (decline) or c (cancel)")
	}
}

// visit shows a URL request: the message on one line, the URL and its
// site as a browser's address bar shows them (showURL), and asks to
// confirm once the person is done there. A URL that is not http or https
// (javascript:, data:, file:) or has no valid host is shown but not
// offered: the request is declined without asking.
func (a *asker) visit(ctx context.Context, q *toolsvcv1.ElicitationURLRequest) (*toolsvcv1.ElicitationResponse, error) {
	fmt.Fprintf(a.out, "\nThe tool asks you to open a URL: %s\n", termLine(q.GetMessage()))
	u := showURL(q.GetUrl())
	fmt.Fprintf(a.out, "  site: %s\n  URL:  %s\n", u.Site, u.Text)
	if !u.Openable {
		fmt.Fprintf(a.out, "  not offered: %s; declined\n", u.Why)
		return &toolsvcv1.ElicitationResponse{Action: "decline"}, nil
	}
	act, err := a.action(ctx, "Open it in a browser and finish there, then press Enter (or d to decline, c to cancel): ")
	if err != nil {
		return nil, err
	}
	return &toolsvcv1.ElicitationResponse{Action: act}, nil
}

// fieldSchema is one property of an elicitation form (MCP restricts forms
// to flat objects of primitive properties: string, number, integer,
// boolean, single-select enums and multi-select arrays of enums).
type fieldSchema struct {
	Type        any       `json:"type"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Enum        []any     `json:"enum"`
	EnumNames   []string  `json:"enumNames"`
	OneOf       []choice  `json:"oneOf"`
	AnyOf       []choice  `json:"anyOf"`
	Default     any       `json:"default"`
	MinLength   *int      `json:"minLength"`
	MaxLength   *int      `json:"maxLength"`
	Minimum     *float64  `json:"minimum"`
	Maximum     *float64  `json:"maximum"`
	Format      string    `json:"format"`
	Items       *itemsDef `json:"items"`
	MinItems    *int      `json:"minItems"`
	MaxItems    *int      `json:"maxItems"`
}

type choice struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

type itemsDef struct {
	Type  any      `json:"type"`
	Enum  []any    `json:"enum"`
	AnyOf []choice `json:"anyOf"`
}

// typeName is the schema's type: the first that is not "null" when it
// names several.
func typeName(t any) string {
	switch v := t.(type) {
	case string:
		return v
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok && s != "null" {
				return s
			}
		}
	}
	return ""
}

// choices are the field's allowed values with their labels (nil: any).
func (f *fieldSchema) choices() []choice {
	switch {
	case len(f.OneOf) > 0:
		return f.OneOf
	case len(f.AnyOf) > 0:
		return f.AnyOf
	case len(f.Enum) > 0:
		out := make([]choice, len(f.Enum))
		for i, v := range f.Enum {
			out[i] = choice{Const: v}
			if i < len(f.EnumNames) {
				out[i].Title = f.EnumNames[i]
			}
		}
		return out
	case f.Items != nil && len(f.Items.AnyOf) > 0:
		return f.Items.AnyOf
	case f.Items != nil:
		out := make([]choice, len(f.Items.Enum))
		for i, v := range f.Items.Enum {
			out[i] = choice{Const: v}
		}
		return out
	}
	return nil
}

// form asks for a form: accept (then each field), decline or cancel.
func (a *asker) form(ctx context.Context, q *toolsvcv1.ElicitationRequest) (*toolsvcv1.ElicitationResponse, error) {
	fmt.Fprintf(a.out, "\nThe tool asks: %s\n", termText(q.GetMessage()))
	var schema struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal([]byte(q.GetRequestedSchemaJson()), &schema); err != nil {
		return nil, fmt.Errorf("the tool's form is not a JSON schema: %w", err)
	}
	names, err := objectKeys(schema.Properties)
	if err != nil {
		return nil, fmt.Errorf("the tool's form has no valid properties: %w", err)
	}
	act, err := a.action(ctx, "Fill in the form? [a]ccept, [d]ecline, [c]ancel (default a): ")
	if err != nil || act != "accept" {
		return &toolsvcv1.ElicitationResponse{Action: act}, err
	}
	var props map[string]json.RawMessage
	_ = json.Unmarshal(schema.Properties, &props)
	content := map[string]any{}
	for _, name := range names {
		var f fieldSchema
		if err := json.Unmarshal(props[name], &f); err != nil {
			return nil, fmt.Errorf("the tool's form field %q: %w", termSafe(name), err)
		}
		required := false
		for _, r := range schema.Required {
			required = required || r == name
		}
		v, set, err := a.field(ctx, name, &f, required)
		if err != nil {
			return nil, err
		}
		if set {
			content[name] = v
		}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	return &toolsvcv1.ElicitationResponse{Action: "accept", ContentJson: string(b)}, nil
}

// field asks one field until the answer is valid; set is false for an
// optional field left empty without a default.
func (a *asker) field(ctx context.Context, name string, f *fieldSchema, required bool) (v any, set bool, err error) {
	label := termSafe(name)
	if f.Title != "" && f.Title != name {
		label = termSafe(f.Title) + " (" + termSafe(name) + ")"
	}
	fmt.Fprintf(a.out, "%s", label)
	if f.Description != "" {
		fmt.Fprintf(a.out, ": %s", termSafe(f.Description))
	}
	fmt.Fprintln(a.out)
	typ := typeName(f.Type)
	cs := f.choices()
	for i, c := range cs {
		t := c.Title
		if t == "" {
			t = fmt.Sprint(c.Const)
		}
		fmt.Fprintf(a.out, "  %d) %s\n", i+1, termSafe(t))
	}
	var hint []string
	switch {
	case typ == "array" && len(cs) > 0:
		hint = append(hint, "numbers or values, comma-separated")
	case len(cs) > 0:
		hint = append(hint, "a number or a value above")
	case typ == "boolean":
		hint = append(hint, "yes/no")
	case typ != "":
		hint = append(hint, typ)
	}
	if f.Format != "" {
		hint = append(hint, termSafe(f.Format))
	}
	if required {
		hint = append(hint, "required")
	}
	if f.Default != nil {
		hint = append(hint, "default "+termSafe(jsonText(f.Default)))
	}
	prompt := "  > "
	if len(hint) > 0 {
		prompt = "  [" + strings.Join(hint, ", ") + "] > "
	}
	for {
		l, err := a.readLine(ctx, prompt)
		if err != nil {
			return nil, false, err
		}
		if l == "" {
			switch {
			case f.Default != nil:
				return f.Default, true, nil
			case !required:
				return nil, false, nil
			}
			fmt.Fprintln(a.out, "  required: please give a value")
			continue
		}
		v, err := parseField(l, typ, f, cs)
		if err != nil {
			fmt.Fprintf(a.out, "  %s\n", termSafe(err.Error()))
			continue
		}
		return v, true, nil
	}
}

// parseField checks a typed answer against the field's type and bounds
// and returns its JSON value.
func parseField(l, typ string, f *fieldSchema, cs []choice) (any, error) {
	if typ == "array" {
		var out []any
		for _, part := range strings.Split(l, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if len(cs) == 0 {
				out = append(out, part)
				continue
			}
			c, err := pick(part, cs)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		if f.MinItems != nil && len(out) < *f.MinItems {
			return nil, fmt.Errorf("choose at least %d", *f.MinItems)
		}
		if f.MaxItems != nil && len(out) > *f.MaxItems {
			return nil, fmt.Errorf("choose at most %d", *f.MaxItems)
		}
		return out, nil
	}
	if len(cs) > 0 {
		return pick(l, cs)
	}
	switch typ {
	case "boolean":
		switch strings.ToLower(l) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("answer yes or no, not %q", l)
	case "integer":
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not an integer: %q", l)
		}
		return n, checkRange(float64(n), f)
	case "number":
		x, err := strconv.ParseFloat(l, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("not a number: %q", l)
		}
		return x, checkRange(x, f)
	case "string", "":
		n := utf8.RuneCountInString(l)
		if f.MinLength != nil && n < *f.MinLength {
			return nil, fmt.Errorf("at least %d characters, please", *f.MinLength)
		}
		if f.MaxLength != nil && n > *f.MaxLength {
			return nil, fmt.Errorf("at most %d characters, please", *f.MaxLength)
		}
		return l, checkFormat(l, f.Format)
	}
	// Not a form type MCP allows: take JSON.
	var v any
	if err := json.Unmarshal([]byte(l), &v); err != nil {
		return nil, fmt.Errorf("type %s: give a JSON value", typ)
	}
	return v, nil
}

// pick is the choice a typed number (1-based) or value names.
func pick(l string, cs []choice) (any, error) {
	if i, err := strconv.Atoi(l); err == nil && i >= 1 && i <= len(cs) {
		return cs[i-1].Const, nil
	}
	for _, c := range cs {
		if fmt.Sprint(c.Const) == l || (c.Title != "" && strings.EqualFold(c.Title, l)) {
			return c.Const, nil
		}
	}
	return nil, fmt.Errorf("not one of the choices: %q", l)
}

func checkRange(x float64, f *fieldSchema) error {
	if f.Minimum != nil && x < *f.Minimum {
		return fmt.Errorf("at least %g, please", *f.Minimum)
	}
	if f.Maximum != nil && x > *f.Maximum {
		return fmt.Errorf("at most %g, please", *f.Maximum)
	}
	return nil
}

func checkFormat(s, format string) error {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return fmt.Errorf("not an email address: %q", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return fmt.Errorf("not a URI (scheme:...): %q", s)
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("not a date (YYYY-MM-DD): %q", s)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Errorf("not a date-time (RFC 3339, 2006-01-02T15:04:05Z): %q", s)
		}
	}
	return nil
}

// objectKeys are a JSON object's keys in the order they were sent.
func objectKeys(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(strings.NewReader(string(raw)))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("properties is not an object")
	}
	var keys []string
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
