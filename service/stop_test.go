package service

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestStopWaitsForWatchHandlers: a gRPC server built with the service's
// ServerOptions returns from Stop only once every WatchCatalog handler has
// returned, so Wait, which the shutdown calls right after, never runs while
// a handler can still start a pump (the catalog keeps changing meanwhile: a
// pump started during Wait would reuse its WaitGroup, a data race and a
// possible panic in the drain's bound-reached path).
func TestStopWaitsForWatchHandlers(t *testing.T) {
	f := newWatchFixture(t, nil, map[string][]string{"a": {"t0"}})
	gs := grpc.NewServer(f.svc.ServerOptions()...)
	f.svc.Register(gs)
	conn := serveBufconn(t, gs) // its cleanup stops gs again: a no-op
	client := toolsvcv1.NewToolServiceClient(conn)
	ctx := ctxT(t)
	const streams = 8
	for range streams {
		st, err := client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	// The catalog changes all along, so every handler's stream has pumps
	// to start until its handler returns, and clients keep opening streams
	// (some handlers are still starting their first pump when it stops).
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(2)
	go func() {
		defer churn.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f.servers["a"].put(fmt.Sprintf("t%d", i%4), fmt.Sprint("v", i))
			runtime.Gosched()
		}
	}()
	go func() {
		defer churn.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{}); err != nil {
				return
			}
		}
	}()
	for range 50 {
		runtime.Gosched()
	}
	f.svc.Shutdown() // as the shutdown does first: watch streams end
	gs.Stop()
	buf := make([]byte, 1<<22)
	stacks := string(buf[:runtime.Stack(buf, true)])
	running := strings.Count(stacks, "service.(*Server).WatchCatalog(")
	f.svc.Wait()
	close(stop)
	churn.Wait()
	if running > 0 {
		t.Fatalf("%d WatchCatalog handlers still running after Stop returned; Wait could race their pumps", running)
	}
}
