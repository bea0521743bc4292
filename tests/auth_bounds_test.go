package tests

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestBearerBoundsEndToEnd: against a real toolsvc with static tokens and
// a JWKS, a validly signed JWT over 8 KiB is refused UNAUTHENTICATED (reason
// UNAUTHENTICATED) before it is parsed, one under it is accepted, and a JWT
// whose subject is a static-token principal ("alice") is refused.
func TestBearerBoundsEndToEnd(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	sign := func(sub string, pad int) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": sub, "iss": "test-idp", "aud": "toolsvc",
			"exp": time.Now().Add(time.Hour).Unix(), "groups": strings.Repeat("g", pad)})
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const alice = "alice-token-0123456789"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"alice": alice}, JWT: testJWT(jwksFile),
			Rules: []rule{{Principal: "alice"}, {Principal: "carol"}}},
		Servers: servers{"a": goStdio(upstream{PingInterval: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	small := sign("carol", 4000)
	if _, err := p.client.ListTools(as(small), &toolsvcv1.ListToolsRequest{}); err != nil {
		t.Fatalf("ListTools with a %d-byte JWT = %v, want it accepted", len(small), err)
	}
	for _, c := range []struct{ what, tok, msg string }{
		{"a validly signed 9 KiB JWT", sign("carol", 6600), "longer than 8192 bytes"},
		{"a JWT whose subject is the static-token principal alice", sign("alice", 0), "static-token principal"},
	} {
		_, err := p.client.ListTools(as(c.tok), &toolsvcv1.ListToolsRequest{})
		st := status.Convert(err)
		reason := ""
		for _, d := range st.Details() {
			if ei, ok := d.(*errdetails.ErrorInfo); ok {
				reason = ei.GetReason()
			}
		}
		if st.Code() != codes.Unauthenticated || reason != "UNAUTHENTICATED" || !strings.Contains(st.Message(), c.msg) {
			t.Errorf("ListTools with %s (%d bytes) = %v (reason %q), want UNAUTHENTICATED saying %q", c.what, len(c.tok), err, reason, c.msg)
		}
	}
}

// TestConfigCheckRefusesDuplicatesAndPaddedTokens: `toolsvc config check`
// refuses a JSON file that names a server twice (encoding/json kept the
// last one) and a static token with surrounding whitespace, naming the key
// or field and its line.
func TestConfigCheckRefusesDuplicatesAndPaddedTokens(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, cfg, want string }{
		{"duplicate-server", "{\"mcpServers\": {\n  \"gh\": {\"command\": \"a\"},\n  \"gh\": {\"command\": \"b\"}}}",
			`:3: server "gh": duplicate key "gh" (first at line 2)`},
		{"padded-token", "{\"auth\": {\"tokens\": {\n  \"ops\": \"ops-token-0123456789 \"}},\n \"mcpServers\": {\"x\": {\"command\": \"x\"}}}",
			`:1: field "auth.tokens.ops": has leading or trailing whitespace`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.json")
			if err := os.WriteFile(path, []byte(c.cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin.toolsvc, "config", "check", path).CombinedOutput()
			if err == nil || !strings.Contains(string(out), path+c.want) {
				t.Errorf("config check = %v:\n%s\nwant %s", err, out, path+c.want)
			}
			if strings.Contains(string(out), "ops-token") {
				t.Errorf("config check printed the token:\n%s", out)
			}
		})
	}
}
