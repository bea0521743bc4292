package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsvc/toolsvc/console"
	"github.com/toolsvc/toolsvc/internal/proccpu"
	"github.com/toolsvc/toolsvc/service"
)

// BenchmarkCallObservers is what the composition root's observers (the
// metrics and the console's traffic ring, as serving.go combines them) add
// to each tool call: its start and its end, over 50 tools of one server.
//
//	go test -run XXX -bench CallObservers -benchmem ./server
func BenchmarkCallObservers(b *testing.B) {
	obs := observers{service.NewMetrics(prometheus.NewRegistry()), console.NewTraffic()}
	tools := make([]string, 50)
	for i := range tools {
		tools[i] = fmt.Sprintf("s__tool%02d", i)
	}
	start := time.Now()
	b.ReportAllocs()
	cpu0 := proccpu.Used()
	for i := 0; b.Loop(); i++ {
		obs.CallStarted()
		end := time.Now() // the core's one clock read at the end of a call
		obs.CallDone("s", tools[i%len(tools)], "ok", end, end.Sub(start))
	}
	// This process's CPU time per call: steadier than ns/op on a shared
	// machine.
	b.ReportMetric(float64(proccpu.Used()-cpu0)/float64(b.N), "cpu-ns/op")
}
