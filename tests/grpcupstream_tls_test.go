package tests

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// upstreamTLS is a server's "tls" object (docs/configuration.md): a
// grpcs:// upstream's private CA and client certificate.
type upstreamTLS struct {
	CAFile     string `json:"caFile,omitempty"`
	CertFile   string `json:"certFile,omitempty"`
	KeyFile    string `json:"keyFile,omitempty"`
	ServerName string `json:"serverName,omitempty"`
}

// TestGRPCUpstreamMTLS: an upstream that serves the binding over TLS with
// a certificate from a private CA, and requires a client certificate from
// it, is listed and called by a toolsvc configured with the CA and a
// client certificate. Configured with the CA but no client certificate,
// the same upstream stays down with the handshake's refusal as its last
// error, and no key material reaches toolsvc's log or status.
func TestGRPCUpstreamMTLS(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "grpc-upstream-ca")
	srvCert, srvKey := ca.issue("upstream", true)
	cliCert, cliKey := ca.issue("toolsvc-client", false)
	up := newGRPCUpstream(t, "-tls-cert", srvCert, "-tls-key", srvKey, "-client-ca", ca.file)
	url := "grpcs://" + up.addr
	p := startToolsvc(t, cfg{Servers: servers{
		"m":      fastSupervision(upstream{Type: "grpc", URL: url, TLS: &upstreamTLS{CAFile: ca.file, CertFile: cliCert, KeyFile: cliKey}}),
		"nocert": fastSupervision(upstream{Type: "grpc", URL: url, TLS: &upstreamTLS{CAFile: ca.file}}),
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	c := p.client

	tools, _ := listAll(t, ctx, c, 100)
	if !hasTool(tools, "m__echo") {
		t.Fatalf("ListTools lacks m__echo: %v", tools)
	}
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "m__echo", ArgumentsJson: `{"text": "over mtls"}`})
	if err != nil || resultText(res) != "over mtls" {
		t.Fatalf("CallTool(m__echo) = %v, %v", res, err)
	}

	var last string
	eventually(t, time.Minute, "nocert reports the refused handshake", func() bool {
		last = serverStatus(t, ctx, c, "nocert").GetLastError()
		return strings.Contains(last, "certificate required")
	})
	t.Logf("nocert's last error: %s", last)
	if st := serverStatus(t, ctx, c, "nocert").GetState(); st == toolsvcv1.ServerState_SERVER_STATE_READY {
		t.Errorf("nocert is READY without a client certificate")
	}
	if hasTool(tools, "nocert__echo") {
		t.Errorf("nocert's tools are listed: %v", tools)
	}
	key, err := os.ReadFile(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Join(strings.Split(string(key), "\n")[1:2], "") // the key's first base64 line
	if body == "" || strings.Contains(p.log.String(), body) || strings.Contains(last, body) {
		t.Errorf("the client key's material reached toolsvc's log or status (last error %q)", last)
	}
}
