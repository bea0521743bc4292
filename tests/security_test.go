package tests

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

const beyondLoopbackWarning = "listening beyond loopback without authentication"

// TestSecureDefaultsWithoutAuth: without an auth section, a toolsvc that
// listens on every interface warns once that it does, and still answers
// AdminService and the configuration status to a loopback caller. Tests
// send traffic to loopback addresses only (the workplace forbids any
// other), so the refusal of a non-loopback caller (PERMISSION_DENIED /
// ADMIN_LOOPBACK_ONLY, no last errors, no configuration) is tested at the
// handler with the peer gRPC hands it: service.TestAdminLoopbackOnlyWithoutAuth
// and service.TestLocalPeer.
func TestSecureDefaultsWithoutAuth(t *testing.T) {
	t.Parallel()
	p := startToolsvcWith(t, cfg{Servers: servers{"up": goStdio(upstream{PingInterval: "1h"}),
		"broken": {Command: "/nonexistent/toolsvc-test-binary", PingInterval: "1h"}}}, startOpts{args: []string{"--listen", "0.0.0.0:0"}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	if n := strings.Count(p.log.String(), beyondLoopbackWarning); n != 1 {
		t.Errorf("the beyond-loopback warning appears %d times, want once", n)
	}
	_, port, _ := net.SplitHostPort(p.addr)
	local := grpcConn(t, net.JoinHostPort("127.0.0.1", port))
	if _, err := toolsvcv1.NewAdminServiceClient(local).ReloadConfig(ctx, &toolsvcv1.ReloadConfigRequest{}); err != nil {
		t.Fatalf("ReloadConfig from loopback = %v", err)
	}
	eventually(t, defaultTestTimeout, "the broken server to record its error", func() bool {
		return serverStatus(t, ctx, toolsvcv1.NewToolServiceClient(local), "broken").GetLastError() != ""
	})
	localList, err := toolsvcv1.NewToolServiceClient(local).ListServers(ctx, &toolsvcv1.ListServersRequest{})
	if err != nil || localList.GetConfig() == nil {
		t.Fatalf("ListServers from loopback = %v, %v; want the configuration status", localList, err)
	}
}

// TestNoWarningOnLoopback: listening on loopback only (the harness's
// 127.0.0.1) is not worth a warning.
func TestNoWarningOnLoopback(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"up": goStdio(upstream{PingInterval: "1h"})}})
	if strings.Contains(p.log.String(), beyondLoopbackWarning) {
		t.Error("warned about listening beyond loopback on 127.0.0.1")
	}
}

// TestTLSClientCAWithoutAuth: --tls-client-ca without an auth section makes
// the handshake require a certificate from that CA: no certificate and a
// certificate from another CA are refused, one from the CA works.
func TestTLSClientCAWithoutAuth(t *testing.T) {
	t.Parallel()
	ca, other := newTestCA(t, "toolsvc-test-ca"), newTestCA(t, "other-ca")
	srvCert, srvKey := ca.issue("server", true)
	p := startToolsvcWith(t, cfg{Servers: servers{"up": goStdio(upstream{PingInterval: "1h"})}},
		startOpts{args: []string{"--tls-cert", srvCert, "--tls-key", srvKey, "--tls-client-ca", ca.file}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	client := func(certs ...tls.Certificate) toolsvcv1.ToolServiceClient {
		creds := credentials.NewTLS(&tls.Config{RootCAs: roots, Certificates: certs})
		return toolsvcv1.NewToolServiceClient(grpcConn(t, p.addr, grpc.WithTransportCredentials(creds)))
	}
	if _, err := client().ListTools(ctx, &toolsvcv1.ListToolsRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("ListTools without a client certificate = %v, want UNAVAILABLE (handshake refused)", err)
	}
	cf, kf := other.issue("intruder", false)
	bad, err := tls.LoadX509KeyPair(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client(bad).ListTools(ctx, &toolsvcv1.ListToolsRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("ListTools with another CA's certificate = %v, want UNAVAILABLE (handshake refused)", err)
	}
	cf, kf = ca.issue("agent", false)
	good, err := tls.LoadX509KeyPair(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := client(good).CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__ping_me", ArgumentsJson: `{"x": 1}`}); err != nil || resultText(res) != "2" {
		t.Fatalf("CallTool with the CA's certificate = %v, %v", res, err)
	}
}

// TestListServersFiltered: with auth rules, a principal sees only the
// servers exposing a tool it may see, without last errors or the
// configuration; an admin sees every server with its error.
func TestListServersFiltered(t *testing.T) {
	t.Parallel()
	const alice, ops = "alice-token-0123456789", "ops-token-0123456789abc"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"alice": alice, "ops": ops}, Admins: []string{"ops"},
			Rules: []rule{{Principal: "alice", Allow: []string{"a__*"}}, {Principal: "ops"}}},
		Servers: servers{"a": goStdio(upstream{PingInterval: "1h"}), "b": goStdio(upstream{PingInterval: "1h"}),
			"broken": {Command: "/nonexistent/toolsvc-test-binary", PingInterval: "1h"}}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	names := func(r *toolsvcv1.ListServersResponse) []string {
		var out []string
		for _, s := range r.GetServers() {
			out = append(out, s.GetName())
		}
		return out
	}
	eventually(t, defaultTestTimeout, "the broken server to record its error", func() bool {
		return serverStatus(t, as(ops), p.client, "broken").GetLastError() != ""
	})
	opsList, err := p.client.ListServers(as(ops), &toolsvcv1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(opsList), ","); got != "a,b,broken" || opsList.GetConfig() == nil {
		t.Fatalf("admin ListServers = %s (config %v), want a,b,broken with the configuration", got, opsList.GetConfig())
	}
	aliceList, err := p.client.ListServers(as(alice), &toolsvcv1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(aliceList), ","); got != "a" {
		t.Fatalf("alice ListServers = %s, want only a (the server of her tools)", got)
	}
	if aliceList.GetConfig() != nil || aliceList.GetServers()[0].GetLastError() != "" {
		t.Error("alice sees operator details (configuration or last error)")
	}
	if _, err := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListServers without credentials = %v, want UNAUTHENTICATED", err)
	}
}
