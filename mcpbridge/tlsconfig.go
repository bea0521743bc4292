package mcpbridge

import "strings"

// TLSConfig is a grpcs:// upstream's TLS beyond the system's roots: a
// private CA to verify the upstream with, a client certificate (mTLS) and
// the name to verify. config/ reads and checks the files (boundedfile) so
// a transport gets PEM it can use; the paths stay for messages, the key
// never appears in one.
type TLSConfig struct {
	CAFile, CertFile, KeyFile string
	// CA is PEM certificates that replace the system's roots (nil: the
	// system's roots); Cert and Key are the client certificate chain and
	// its private key in PEM (both or neither).
	CA, Cert, Key []byte
	// ServerName overrides the name verified in the upstream's certificate
	// (and sent as SNI); "" is the url's host.
	ServerName string
}

// tlsProblems reports a tls object on a server whose transport cannot use
// it: only type grpc with a grpcs:// url has a TLS client of its own
// (HTTP upstreams use the process's HTTP client).
func (sc *ServerConfig) tlsProblems(p *fieldProblems) {
	if sc.TLS == nil {
		return
	}
	if sc.Transport != TransportGRPC || !strings.HasPrefix(strings.ToLower(sc.URL), "grpcs://") {
		p.add("tls", "only a \"type\": \"grpc\" server with a grpcs:// url uses tls")
	}
	if (sc.TLS.Cert == nil) != (sc.TLS.Key == nil) {
		p.add("tls", "set certFile and keyFile together (a client certificate needs its key)")
	}
}
