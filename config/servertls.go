package config

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"strings"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// MaxTLSFileSize bounds each file a server's tls object names (a CA
// bundle, a certificate chain, a key): PEM of that size holds hundreds of
// certificates.
const MaxTLSFileSize = 1 << 20

// serverTLSJSON is a server's "tls" object (a grpcs:// upstream).
type serverTLSJSON struct {
	CAFile     string `json:"caFile"`
	CertFile   string `json:"certFile"`
	KeyFile    string `json:"keyFile"`
	ServerName string `json:"serverName"`
}

// serverTLS decodes a server's "tls" object (absent or null: none), reads
// its files and checks they hold what they should, into sc; it returns
// false, reported with the field named, when any does not. No message
// quotes a file's content (the key is a secret).
func (p *parser) serverTLS(name string, raw json.RawMessage, sc *mcpbridge.ServerConfig) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	var tj serverTLSJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tj); err != nil {
		msg := cleanJSONError(err)
		if k, found := strings.CutPrefix(msg, "unknown field "); found {
			p.add(name, "tls", "unknown key %s (want caFile, certFile, keyFile, serverName)", k)
		} else {
			p.add(name, "tls", "want an object: %s", msg)
		}
		return false
	}
	tc := &mcpbridge.TLSConfig{CAFile: tj.CAFile, CertFile: tj.CertFile, KeyFile: tj.KeyFile, ServerName: tj.ServerName}
	ok := true
	read := func(field, path string) []byte {
		if path == "" {
			return nil
		}
		b, err := readBounded(path, MaxTLSFileSize, "tls."+field)
		if err != nil {
			p.add(name, "tls."+field, "%s: %v", path, err)
			ok = false
			return nil
		}
		return b
	}
	tc.CA = read("caFile", tj.CAFile)
	tc.Cert = read("certFile", tj.CertFile)
	tc.Key = read("keyFile", tj.KeyFile)
	if tc.CA != nil && !x509.NewCertPool().AppendCertsFromPEM(tc.CA) {
		p.add(name, "tls.caFile", "%s: no PEM certificate in the file", tj.CAFile)
		ok = false
	}
	if (tj.CertFile == "") != (tj.KeyFile == "") {
		p.add(name, "tls.certFile", "set certFile and keyFile together (a client certificate needs its key)")
		ok = false
	} else if tc.Cert != nil && tc.Key != nil {
		if _, err := tls.X509KeyPair(tc.Cert, tc.Key); err != nil {
			// tls's errors name what is wrong (no PEM block, a key that
			// does not match) without quoting the key.
			p.add(name, "tls.keyFile", "%s and %s are not a certificate and its key: %v", tj.CertFile, tj.KeyFile, err)
			ok = false
		}
	}
	sc.TLS = tc
	return ok
}
