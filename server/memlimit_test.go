package server

import (
	"math"
	"strings"
	"testing"
)

// TestParseMemoryLimit: --memory-limit takes what the downward API writes
// (bytes, divisor 1) and Kubernetes quantities; anything else is refused
// naming the flag and the value.
func TestParseMemoryLimit(t *testing.T) {
	for in, want := range map[string]uint64{
		"":          0,
		"536870912": 512 << 20,
		"512Mi":     512 << 20,
		"1Gi":       1 << 30,
		"1G":        1e9,
		"8Ei":       math.MaxInt64, // past int64: no limit worth the name
	} {
		if got, err := parseMemoryLimit(in); err != nil || got != want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"12x", "-1Gi", "0", "512 Mi", "max"} {
		_, err := parseMemoryLimit(in)
		if err == nil || !strings.Contains(err.Error(), "--memory-limit") || !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("parseMemoryLimit(%q) = %v; want an error naming --memory-limit and the value", in, err)
		}
	}
}
