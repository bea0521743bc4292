// Package proccpu is the CPU time this process has used, for benchmarks
// that report it per operation (cpu-ns/op): on a shared, loaded machine it
// varies less than ns/op, which counts the time other processes hold the
// cores.
package proccpu

import (
	"syscall"
	"time"
)

// Used is the user and system CPU time this process has used (0 if the
// system does not say).
func Used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
