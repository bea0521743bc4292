package server

import (
	"os"
	"runtime/debug"
)

// gcPercent is toolsvc's default GOGC. Every upstream message costs the
// go-sdk a fresh 32 KiB decode buffer per JSON value (about 128 KiB of
// garbage per tools/call) while toolsvc's live heap is small, so at the
// runtime's default of 100 the collector runs every few dozen calls and
// took about a third of toolsvc's CPU per call (go run ./tests/bench
// -profile; docs/benchmarks.md). At 400 toolsvc's CPU per call fell by
// 25–32%. The price is memory: the heap may grow to 5× the live heap
// (with a 20,000-tool catalog, RSS 311 MiB against 157 MiB at 100).
// GOGC and GOMEMLIMIT in the environment still win.
const gcPercent = 400

// setGCPercent sets toolsvc's GOGC for serve (the client commands keep the
// runtime's).
func setGCPercent() {
	// An empty GOGC is the runtime's default too: toolsvc's applies.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
