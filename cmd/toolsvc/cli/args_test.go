package cli

import (
	"errors"
	"flag"
	"io"
	"slices"
	"testing"
)

// TestParseInterleaved: flags and positional arguments in any order; an
// argument beginning with "-" that names no flag is positional (a task id
// or handle in base64url may begin with "-"; CI once drew a Python SDK
// task id "-sbg6…", refused as an undefined flag); "--" ends the flags.
func TestParseInterleaved(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		positional []string
		cancel     bool
		addr       string
		limit      int
		err        bool
	}{
		{args: []string{"-sbg6s6qQ", "--cancel"}, positional: []string{"-sbg6s6qQ"}, cancel: true},
		{args: []string{"--cancel", "-sbg6s6qQ"}, positional: []string{"-sbg6s6qQ"}, cancel: true},
		{args: []string{"--addr", "-x", "h"}, positional: []string{"h"}, addr: "-x"},
		{args: []string{"h", "--addr=a:1", "-limit", "3"}, positional: []string{"h"}, addr: "a:1", limit: 3},
		{args: []string{"-1", "degrees", "--limit=5"}, positional: []string{"-1", "degrees"}, limit: 5},
		{args: []string{"--", "--cancel", "-h"}, positional: []string{"--cancel", "-h"}},
		{args: []string{"-", "---x", "-=v"}, positional: []string{"-", "---x", "-=v"}},
		{args: []string{"--cancel=true", "x"}, positional: []string{"x"}, cancel: true},
		{args: []string{"--limit", "many"}, err: true},
		{args: []string{"h", "--addr"}, err: true}, // the value is missing
		{args: []string{"-h"}, err: true},          // flag.ErrHelp, as before
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cancel := fs.Bool("cancel", false, "")
		addr := fs.String("addr", "", "")
		limit := fs.Int("limit", 0, "")
		got, err := parseInterleaved(fs, tc.args)
		if tc.err {
			if err == nil {
				t.Errorf("%q: no error, positional %q", tc.args, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.positional) || *cancel != tc.cancel || *addr != tc.addr || *limit != tc.limit {
			t.Errorf("%q: positional %q cancel %v addr %q limit %d, %v; want %q %v %q %d", tc.args, got, *cancel, *addr, *limit, err,
				tc.positional, tc.cancel, tc.addr, tc.limit)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterleaved(fs, []string{"-help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-help: %v, want flag.ErrHelp", err)
	}
}
