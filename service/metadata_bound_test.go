package service

import (
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestRequestMetadataBounded: a caller's request metadata (gRPC headers)
// is bounded like its message: grpc-go's default let 16 MiB of headers in
// per request, before authentication, four times the request bound, held
// for the RPC's life. Metadata within the bound is served; past it the RPC
// is refused before it reaches the service, with grpc-go's error naming
// the bound. Real grpc-go client and server over HTTP/2 framing.
func TestRequestMetadataBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	for _, tc := range []struct {
		name string
		pad  int
		ok   bool
	}{
		{"within", 16 << 10, true},
		{"past", 2 << 20, false},
	} {
		ctx := metadata.AppendToOutgoingContext(ctxT(t), "x-pad", strings.Repeat("p", tc.pad))
		_, err := f.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
		switch {
		case tc.ok && err != nil:
			t.Fatalf("%s: ListServers with %d bytes of metadata: %v", tc.name, tc.pad, err)
		case !tc.ok && err == nil:
			t.Fatalf("%s: ListServers with %d bytes of metadata was served", tc.name, tc.pad)
		case !tc.ok && !strings.Contains(err.Error(), "header list size"):
			t.Fatalf("%s: %v, want the header list bound", tc.name, err)
		case !tc.ok:
			t.Logf("%s: %v", tc.name, err)
		}
	}
	// The connection stays usable.
	if _, err := f.client.ListServers(ctxT(t), &toolsvcv1.ListServersRequest{}); err != nil {
		t.Fatalf("ListServers after the refusal: %v", err)
	}
}
