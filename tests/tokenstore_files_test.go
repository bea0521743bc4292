package tests

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// brokenStores are token stores whose files break the rules every file
// toolsvc reads follows, each with what toolsvc must
// say about it: the store file a FIFO (it hung serve before it listened,
// deaf to SIGTERM), /dev/zero behind a symlink (out of memory), a
// directory, an empty file; the key file readable by others or one byte
// short.
func brokenStores(t *testing.T) map[string]struct {
	store tokenStoreCfg
	field string
	want  string
} {
	dir := t.TempDir()
	key := storeKeyFile(t, dir)
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	writeKey := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	raw, _ := hex.DecodeString(strings.Repeat("ab", 32))
	store := filepath.Join(dir, "tokens")
	return map[string]struct {
		store tokenStoreCfg
		field string
		want  string
	}{
		"fifo":    {tokenStoreCfg{File: fifo, KeyFile: key}, "tokenStore.file", "not a regular file (a FIFO)"},
		"devzero": {tokenStoreCfg{File: zero, KeyFile: key}, "tokenStore.file", "not a regular file (a character device)"},
		"dir":     {tokenStoreCfg{File: dir, KeyFile: key}, "tokenStore.file", "not a regular file (a directory)"},
		"empty":   {tokenStoreCfg{File: empty, KeyFile: key}, "tokenStore.file", "the file is empty"},
		"key0644": {tokenStoreCfg{File: store, KeyFile: writeKey("k644", raw, 0o644)}, "tokenStore.keyFile", "mode 0644 lets others read it"},
		"key31":   {tokenStoreCfg{File: store, KeyFile: writeKey("k31", raw[:31], 0o600)}, "tokenStore.keyFile", "holds 31 bytes, not a key"},
		"keyfifo": {tokenStoreCfg{File: store, KeyFile: fifo}, "tokenStore.keyFile", "not a regular file (a FIFO)"},
		"keydir":  {tokenStoreCfg{File: store, KeyFile: dir}, "tokenStore.keyFile", "not a regular file (a directory)"},
	}
}

// TestConfigCheckTokenStoreFiles: `toolsvc config check` reads the token
// store's files as serve does and refuses each broken one, naming the
// field and what is wrong (it said "ok" to all of them).
func TestConfigCheckTokenStoreFiles(t *testing.T) {
	t.Parallel()
	up := startHTTPUpstream(t)
	for name, tc := range brokenStores(t) {
		t.Run(name, func(t *testing.T) {
			ts := tc.store
			c := cfg{TokenStore: &ts, Servers: servers{"up": userOAuthUp("http://127.0.0.1:9", up)}}
			path := filepath.Join(t.TempDir(), "c.json")
			if err := os.WriteFile(path, []byte(c.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin.toolsvc, "config", "check", path).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("config check = %v (want exit status 1):\n%s", err, out)
			}
			if !strings.Contains(string(out), `field "`+tc.field+`"`) || !strings.Contains(string(out), tc.want) {
				t.Errorf("config check output lacks field %q and %q:\n%s", tc.field, tc.want, out)
			}
		})
	}
}

// TestBrokenTokenStoreFailsOnlyItsUpstreams: serve with a token store it
// cannot open (a FIFO as the store file: serve hung before listening and
// ignored SIGTERM; a 31-byte key: serve refused to start) becomes ready,
// serves its other upstreams, and stops on SIGTERM with status 0 (the
// harness's cleanup); the userOAuth upstream reports the reason in
// ListServers, and its calls and logins fail UNAVAILABLE token_store with
// it.
func TestBrokenTokenStoreFailsOnlyItsUpstreams(t *testing.T) {
	t.Parallel()
	up := startHTTPUpstream(t)
	stores := brokenStores(t)
	for _, name := range []string{"fifo", "key31"} {
		t.Run(name, func(t *testing.T) {
			tc := stores[name]
			ts := tc.store
			toks := map[string]string{"alice": "static-alice-0123456789", "root": "static-root-0123456789"}
			p := startToolsvc(t, cfg{Auth: &authCfg{Tokens: toks, Admins: []string{"root"}}, TokenStore: &ts,
				Servers: servers{"up": userOAuthUp("http://127.0.0.1:9", up), "plain": goStdio(upstream{})}})
			ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+toks["alice"]), defaultTestTimeout)
			defer cancel()
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "plain__echo", ArgumentsJson: `{"text": "still here"}`})
			if err != nil || resultText(res) != "still here" {
				t.Fatalf("plain__echo beside a broken store = %v, %v", res, err)
			}
			// The reason is operator information: an admin's ListServers.
			rootCtx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+toks["root"])
			st := serverStatus(t, rootCtx, p.client, "up")
			if !strings.Contains(st.GetLastError(), tc.field) || !strings.Contains(st.GetLastError(), tc.want) {
				t.Errorf("ListServers up: last_error %q, want %s and %q", st.GetLastError(), tc.field, tc.want)
			}
			_, err = toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr)).Login(ctx, &toolsvcv1.LoginRequest{Server: "up"})
			ei := wantStatus(t, err, codes.Unavailable, "UPSTREAM_UNAVAILABLE", "up", "")
			if ei.GetMetadata()["unavailable_reason"] != "token_store" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Login to up = %v (metadata %v); want token_store and %q", err, ei.GetMetadata(), tc.want)
			}
			_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__echo", ArgumentsJson: `{"text": "x"}`})
			if status := errorInfo(t, err); err == nil || status.GetMetadata()["unavailable_reason"] != "token_store" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("up__echo = %v; want UNAVAILABLE token_store and %q", err, tc.want)
			}
			p.log.waitFor(t, regexp.MustCompile(`the token store cannot be opened`), 10*time.Second)
		})
	}
}
