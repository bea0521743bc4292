package mcpgrpcup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// clientTLS builds the TLS of a grpcs:// upstream with a tls object: its
// CA replaces the system's roots, its certificate is offered when the
// upstream asks for one (mTLS). config/ has checked the PEM already; the
// checks here keep a hand-built ServerConfig from dialing with less than
// it asked for. No error quotes the key.
func clientTLS(c *mcpbridge.TLSConfig) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CA != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CA) {
			return nil, fmt.Errorf("tls.caFile: %s: no PEM certificate", c.CAFile)
		}
		tc.RootCAs = pool
	}
	if (c.Cert == nil) != (c.Key == nil) {
		return nil, errors.New("tls: set certFile and keyFile together")
	}
	if c.Cert != nil {
		pair, err := tls.X509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("tls.keyFile: %s and %s are not a certificate and its key: %w", c.CertFile, c.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// connectCause is why a channel in transient failure could not connect
// (": " and grpc-go's connection error, clipped), or "": grpc-go keeps it
// in the status a fail-fast RPC gets, and the cause (a refused handshake:
// "tls: certificate required", "certificate signed by unknown authority")
// is what an operator needs in the server's last error. The RPC carries no
// metadata, so no token goes to a peer that failed to connect; on a failed
// channel it does not leave the process. grpc-go's connection errors name
// the TLS failure, never certificate or key content.
func connectCause(ctx context.Context, client pb.McpClient) string {
	_, err := client.ListTools(ctx, &pb.ListToolsRequest{})
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable && st.Message() != "" {
		return ": " + clip(st.Message())
	}
	return ""
}
