package mcpbridge

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// grpcOAuthProblems reports what OAuth on a "type": "grpc" server needs
// beyond HTTP's: a tokenUrl (the binding has no 401 challenge to discover
// one from) and transport security unless the target is loopback (the
// token is a bearer credential; grpc-go's own rule for per-RPC
// credentials, relaxed for a sidecar on the same host).
func (sc *ServerConfig) grpcOAuthProblems() []*FieldError {
	var probs []*FieldError
	if sc.OAuth.TokenURL == "" {
		probs = append(probs, &FieldError{Server: sc.Name, Field: "oauth.tokenUrl",
			Err: errors.New("required for a \"type\": \"grpc\" server (the gRPC binding has no challenge to discover it from)")})
	}
	if u, err := url.Parse(sc.URL); err == nil && strings.EqualFold(u.Scheme, "grpc") && !IsLoopbackHost(u.Hostname()) {
		probs = append(probs, &FieldError{Server: sc.Name, Field: "oauth",
			Err: errors.New("needs a grpcs:// url: a token is sent over plaintext only to a loopback target")})
	}
	return probs
}

// IsLoopbackHost says whether host (a URL's hostname) is a loopback
// address or "localhost".
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
