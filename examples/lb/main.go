// Binary lb demonstrates client-side load balancing over toolsvc
// replicas in Go: the service config in examples/lb/service_config.json
// (round_robin over every address, health-checked subchannels, retries of
// UNAVAILABLE on ListTools, ListServers and WatchCatalog), and the safe
// CallTool retry, which gRPC's retry policy must not do blindly.
//
//	go run ./examples/lb TARGET CALLS TOOL [ARGS_JSON]
//
// TARGET is a gRPC target such as dns:///toolsvc-headless.tools.svc.cluster.local:50051
// (a Kubernetes headless Service: one address per ready pod), or, to try it
// locally, a comma-separated list of host:port.
package main

import (
	"context"
	_ "embed"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // enables healthCheckConfig
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// The same file the Python and Node examples read.
//
//go:embed service_config.json
var serviceConfig string

func main() {
	if len(os.Args) < 4 {
		log.Fatal("usage: lb TARGET CALLS TOOL [ARGS_JSON]")
	}
	calls, err := strconv.Atoi(os.Args[2])
	if err != nil {
		log.Fatal(err)
	}
	args := "{}"
	if len(os.Args) > 4 {
		args = os.Args[4]
	}
	if err := run(os.Args[1], calls, os.Args[3], args); err != nil {
		log.Fatal(err)
	}
}

func dial(target string) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceConfig),
	}
	if strings.Contains(target, ",") { // a static list: what DNS would return
		r := manual.NewBuilderWithScheme("static")
		var addrs []resolver.Address
		for _, a := range strings.Split(target, ",") {
			addrs = append(addrs, resolver.Address{Addr: a})
		}
		r.InitialState(resolver.State{Addresses: addrs})
		opts = append(opts, grpc.WithResolvers(r))
		target = "static:///toolsvc"
	}
	return grpc.NewClient(target, opts...)
}

func run(target string, calls int, tool, args string) error {
	conn, err := dial(target)
	if err != nil {
		return err
	}
	defer conn.Close()
	c := toolsvcv1.NewToolServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// ListTools is retried by the channel itself (retryPolicy).
	page, err := c.ListTools(ctx, &toolsvcv1.ListToolsRequest{})
	if err != nil {
		return err
	}
	fmt.Println("revision", page.GetRevision(), "tools", len(page.GetTools()))

	byPeer := map[string]int{}
	for range calls {
		var p peer.Peer
		if _, err := callTool(ctx, c, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: args}, false, grpc.Peer(&p)); err != nil {
			return err
		}
		byPeer[p.Addr.String()]++
	}
	addrs := make([]string, 0, len(byPeer))
	for a := range byPeer {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		fmt.Println("peer", a, byPeer[a])
	}
	fmt.Println("calls", calls, "ok")
	return nil
}

// callTool retries a CallTool only when a retry cannot run the tool twice:
// the server said it never dispatched the call (SHUTTING_DOWN, CIRCUIT_OPEN,
// UPSTREAM_UNAVAILABLE with unavailable_reason=no_session). Any other
// UNAVAILABLE (a connection that broke mid-call, session_lost) may have run
// the tool: it is retried only when the caller says the tool is idempotent.
func callTool(ctx context.Context, c toolsvcv1.ToolServiceClient, req *toolsvcv1.CallToolRequest, idempotent bool, opts ...grpc.CallOption) (*toolsvcv1.CallToolResponse, error) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := c.CallTool(cctx, req, opts...)
		cancel()
		if err == nil || attempt == 5 || !(notDispatched(err) || idempotent && status.Code(err) == codes.Unavailable) {
			return resp, err
		}
		wait := backoff/2 + rand.N(backoff/2)
		if ri := retryInfo(err); ri > wait {
			wait = ri
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		backoff *= 2
	}
}

func notDispatched(err error) bool {
	if status.Code(err) != codes.Unavailable {
		return false
	}
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			switch ei.GetReason() {
			case "SHUTTING_DOWN", "CIRCUIT_OPEN":
				return true
			case "UPSTREAM_UNAVAILABLE":
				return ei.GetMetadata()["unavailable_reason"] == "no_session"
			}
		}
	}
	return false
}

func retryInfo(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}
