package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestServeAddrFile: with port 0 everywhere, --addr-file names the bound
// gRPC, admin and MCP front-door addresses, and each answers there.
func TestServeAddrFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "sub", "addrs.json")
	if err := os.Mkdir(filepath.Dir(addrFile), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- Command(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
			"--mcp-listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-level", "error"})
	}()
	var a boundAddrs
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(addrFile)
		if err == nil {
			// Written whole (by rename): the first read parses.
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatalf("addr file %q: %v", b, err)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		select {
		case err := <-served:
			t.Fatalf("serve ended before writing the addr file: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no addr file within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for name, addr := range map[string]string{"grpc": a.GRPC, "admin": a.Admin, "mcp": a.MCP} {
		if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
			t.Errorf("%s address %q, want a bound 127.0.0.1 port", name, addr)
		}
	}
	conn, err := grpc.NewClient(a.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hctx, hcancel := context.WithTimeout(ctx, 30*time.Second)
	defer hcancel()
	if _, err := healthpb.NewHealthClient(conn).Check(hctx, &healthpb.HealthCheckRequest{Service: "liveness"}); err != nil {
		t.Errorf("health check at the addr file's grpc address: %v", err)
	}
	for _, u := range []string{"http://" + a.Admin + "/metrics", "http://" + a.MCP + "/mcp"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Errorf("GET %s: %v", u, err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if u == "http://"+a.Admin+"/metrics" && resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", u, resp.Status)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(addrFile), ".addr-*")); len(matches) > 0 {
		t.Errorf("temporary files left next to the addr file: %v", matches)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestWriteAddrFileOmitsOff: without --admin-listen and --mcp-listen the
// file has only the gRPC address (the others omitted, not "").
func TestWriteAddrFileOmitsOff(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.json")
	if err := writeAddrFile(path, boundAddrs{GRPC: "127.0.0.1:1234"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), `{"grpc":"127.0.0.1:1234"}`; got != want {
		t.Errorf("addr file %s, want %s", got, want)
	}
	if err := writeAddrFile(filepath.Join(t.TempDir(), "missing", "a.json"), boundAddrs{}); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
