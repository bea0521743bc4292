package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFetchJWKSBounds: on a reload (started), a JWKS URL whose answer is
// larger than 16 MiB is refused, and a URL carrying credentials in its user
// info or query never shows them in the error.
func TestFetchJWKSBounds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	l := &authLoader{ctx: ctx, log: slog.New(slog.DiscardHandler), started: true}

	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"keys": [], "padding": "`)) // valid JSON, no keys: accepted whole
		chunk := []byte(strings.Repeat("k", 1<<20))
		for range 17 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}`))
	}))
	defer huge.Close()
	if _, err := l.fetchJWKS(ctx, huge.URL+"/jwks.json"); err == nil {
		t.Error("a 17 MiB JWKS answer was accepted")
	}

	secretURL := "http://user:hunter2@127.0.0.1:1/jwks.json?access_token=s3cr3t"
	_, err := l.fetchJWKS(ctx, secretURL)
	if err == nil {
		t.Fatal("an unreachable JWKS URL was accepted on a reload")
	}
	if msg := err.Error(); strings.Contains(msg, "hunter2") || strings.Contains(msg, "s3cr3t") {
		t.Errorf("error %q shows the URL's credentials", msg)
	}
}
