package config

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCertPair writes a self-signed certificate and its key as PEM files
// in dir, named after cn.
func writeCertPair(t *testing.T, dir, cn string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, cn+".pem"), filepath.Join(dir, cn+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestParseServerTLS: a grpcs:// server's tls object reads its CA and
// client certificate into the server's configuration; a file that cannot
// be read or does not hold what its key says, a certificate without its
// key, an unknown key and tls on a server that cannot use it are refused
// with the field named, and no refusal quotes the key.
func TestParseServerTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile, caKey := writeCertPair(t, dir, "ca")
	certFile, keyFile := writeCertPair(t, dir, "client")
	_, otherKey := writeCertPair(t, dir, "other")
	notPEM := filepath.Join(dir, "notpem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }

	c, err := Parse("g.json", []byte(`{"mcpServers": {"g": {"type": "grpc", "url": "grpcs://h:443", "tls": {"caFile": `+q(caFile)+
		`, "certFile": `+q(certFile)+`, "keyFile": `+q(keyFile)+`, "serverName": "tools.internal"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(caFile)
	keyPEM, _ := os.ReadFile(keyFile)
	tc := c.Bridge.Servers[0].TLS
	if tc == nil || !bytes.Equal(tc.CA, caPEM) || !bytes.Equal(tc.Key, keyPEM) || len(tc.Cert) == 0 || tc.ServerName != "tools.internal" || tc.CertFile != certFile {
		t.Fatalf("tls = %+v", tc)
	}

	keys := map[string][]byte{}
	for _, f := range []string{caKey, keyFile, otherKey} {
		b, _ := os.ReadFile(f)
		keys[f] = b
	}
	for _, tc := range []struct{ conf, want string }{
		{`{"type": "grpc", "url": "grpcs://h:1", "tls": {"caFile": ` + q(filepath.Join(dir, "missing")) + `}}`, `field "tls.caFile": ` + filepath.Join(dir, "missing") + `: cannot read the file`},
		{`{"type": "grpc", "url": "grpcs://h:1", "tls": {"caFile": ` + q(notPEM) + `}}`, `field "tls.caFile": ` + notPEM + `: no PEM certificate in the file`},
		{`{"type": "grpc", "url": "grpcs://h:1", "tls": {"caFile": ` + q(dir) + `}}`, `field "tls.caFile": ` + dir},
		{`{"type": "grpc", "url": "grpcs://h:1", "tls": {"certFile": ` + q(certFile) + `}}`, `field "tls.certFile": set certFile and keyFile together`},
		{`{"type": "grpc", "url": "grpcs://h:1", "tls": {"certFile": ` + q(certFile) + `, "keyFile": ` + q(otherKey) + `}}`, `field "tls.keyFile": ` + certFile + ` and ` + otherKey + ` are not a certificate and its key`},
		{`{"type": "grpc", "url": "grpcs://h:1", "tls": {"certFile": ` + q(certFile) + `, "keyFile": ` + q(notPEM) + `}}`, `field "tls.keyFile"`},
		{`{"type": "grpc", "url": "grpcs://h:1", "tls": {"ca": "x"}}`, `field "tls": unknown key "ca" (want caFile, certFile, keyFile, serverName)`},
		{`{"type": "grpc", "url": "grpcs://h:1", "tls": "ca.pem"}`, `field "tls": want an object`},
		{`{"type": "grpc", "url": "grpc://h:1", "tls": {"caFile": ` + q(caFile) + `}}`, `field "tls": only a "type": "grpc" server with a grpcs:// url uses tls`},
		{`{"type": "http", "url": "https://h/mcp", "tls": {"caFile": ` + q(caFile) + `}}`, `field "tls": only a "type": "grpc" server with a grpcs:// url uses tls`},
	} {
		_, err := Parse("g.json", []byte(`{"mcpServers": {"g": `+tc.conf+`}}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.conf, err, tc.want)
			continue
		}
		for f, k := range keys {
			// Each base64 line of a key is its material; none may show.
			for _, line := range strings.Split(string(k), "\n")[1:] {
				if len(line) > 16 && strings.Contains(err.Error(), line) {
					t.Errorf("%s: the refusal quotes the key of %s: %v", tc.conf, f, err)
				}
			}
		}
	}
}
