package server

import (
	"errors"
	"strings"
	"testing"
)

// TestServeFlagsParkedBounds: the bounds on parked requests must be
// positive, and a principal's share of a replica-wide pool must not
// exceed the pool (no principal takes it alone).
func TestServeFlagsParkedBounds(t *testing.T) {
	if c, err := parseFlags(nil); err != nil || validate(&c.Serve) != nil {
		t.Fatalf("the defaults: %v, %v", err, validate(&c.Serve))
	}
	for _, args := range [][]string{
		{"--max-parked-per-call", "0"},
		{"--max-input-request-bytes", "-1"},
		{"--max-parked-bytes", "0"},
		{"--max-waiting-per-principal", "2000"},
		{"--max-waiting", "8"},
		{"--max-parked-bytes-per-principal", "300000000"},
	} {
		c, err := parseFlags(args)
		if err == nil {
			err = validate(&c.Serve)
		}
		var ue *usageErr
		if !errors.As(err, &ue) || ue.ExitCode() != 2 || !strings.Contains(ue.Error(), args[0]) {
			t.Errorf("serve %v: %v, want a usage error naming the flag", args, err)
		}
	}
}
