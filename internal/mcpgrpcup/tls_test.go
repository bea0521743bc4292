package mcpgrpcup

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// selfSigned is a PEM certificate and its PEM key.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "c"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestClientTLS: the tls object becomes the channel's TLS (the CA as the
// only roots, the client certificate, the server name); a ServerConfig
// built by hand with less than it asks for is refused with the field
// named and without the key.
func TestClientTLS(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	_, otherKey := selfSigned(t)
	tr, err := Factory(mcpbridge.ServerConfig{Name: "g", Transport: mcpbridge.TransportGRPC, URL: "grpcs://127.0.0.1:1",
		TLS: &mcpbridge.TLSConfig{CA: cert, Cert: cert, Key: key, ServerName: "tools.internal"}}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	tc := tr.(*Transport).TLSConfig
	if tc == nil || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.ServerName != "tools.internal" || tc.MinVersion != 0x0303 {
		t.Fatalf("tls config = %+v", tc)
	}
	for _, c := range []struct {
		tls  mcpbridge.TLSConfig
		want string
	}{
		{mcpbridge.TLSConfig{CAFile: "ca.pem", CA: []byte("junk")}, "tls.caFile: ca.pem: no PEM certificate"},
		{mcpbridge.TLSConfig{Cert: cert}, "tls: set certFile and keyFile together"},
		{mcpbridge.TLSConfig{CertFile: "c.pem", KeyFile: "k.pem", Cert: cert, Key: otherKey}, "tls.keyFile: c.pem and k.pem are not a certificate and its key"},
	} {
		_, err := Factory(mcpbridge.ServerConfig{Name: "g", Transport: mcpbridge.TransportGRPC, URL: "grpcs://127.0.0.1:1", TLS: &c.tls}, 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.want, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), strings.Split(string(otherKey), "\n")[1]) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}
