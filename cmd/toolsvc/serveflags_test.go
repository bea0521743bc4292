package main

import (
	"errors"
	"strings"
	"testing"
)

// TestServeFlagsParkedBounds: the bounds on parked requests must be
// positive, and a principal's share of a replica-wide pool must not
// exceed the pool (no principal takes it alone).
func TestServeFlagsParkedBounds(t *testing.T) {
	if _, err := parseServeFlags(nil); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, args := range [][]string{
		{"--max-parked-per-call", "0"},
		{"--max-input-request-bytes", "-1"},
		{"--max-parked-bytes", "0"},
		{"--max-waiting-per-principal", "2000"},
		{"--max-waiting", "8"},
		{"--max-parked-bytes-per-principal", "300000000"},
	} {
		_, err := parseServeFlags(args)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(ee.err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("serve %v: %v, want a usage error naming the flag", args, err)
		}
	}
}
