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

// serverList is a repeatable --server flag.
type serverList []string

func (s *serverList) String() string     { return strings.Join(*s, ",") }
func (s *serverList) Set(v string) error { *s = append(*s, v); return nil }

// runSearch is `toolsvc search QUERY [--limit N] [--server S]`: the
// query's words and the flags in any order.
func runSearch(ctx context.Context, args []string) error {
	f := newClientFlags("search")
	limit := f.fs.Int("limit", 10, "maximum number of results (at most 100)")
	var servers serverList
	f.fs.Var(&servers, "server", "only tools of this server (repeatable)")
	words, err := parseInterleaved(f.fs, args)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if len(words) == 0 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc search [--addr ADDR] [--json] [--limit N] [--server S]... QUERY")}
	}
	c, closeConn, err := dial(f)
	if err != nil {
		return err
	}
	defer closeConn()
	format := toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON
	if *f.json {
		format = toolsvcv1.SchemaFormat_SCHEMA_FORMAT_STRUCT
	}
	resp, err := c.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: strings.Join(words, " "), Limit: int32(*limit),
		Servers: servers, SchemaFormat: format})
	if err != nil {
		return err
	}
	if *f.json {
		printJSON(resp)
		return nil
	}
	if len(resp.GetResults()) == 0 {
		fmt.Fprintln(os.Stderr, "no tool matches")
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SCORE\tNAME\tSERVER\tDESCRIPTION")
	for _, r := range resp.GetResults() {
		t := r.GetTool()
		desc := strings.ReplaceAll(t.GetDescription(), "\n", " ")
		if len(desc) > 70 {
			desc = desc[:67] + "..."
		}
		fmt.Fprintf(w, "%.2f\t%s\t%s\t%s\n", r.GetScore(), termSafe(t.GetName()), termSafe(t.GetServer()), termSafe(desc))
	}
	return w.Flush()
}
