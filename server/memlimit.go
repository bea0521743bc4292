package server

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitRatio is the share of the container's memory limit that
// toolsvc gives the Go runtime as its soft limit (GOMEMLIMIT). The rest is
// headroom for what the limit does not steer: memory the runtime has freed
// but the kernel not yet taken back, and what the collector cannot free
// because it is live. Stdio upstreams run in the same container and are
// charged to the same cgroup: a pod with large ones lowers the share with
// AUTOMEMLIMIT (docs/kubernetes.md, "Memory").
const memoryLimitRatio = 0.9

// memoryLimitEnv names the container's memory limit declared by the
// deployment (the Helm chart sets it from the pod's limits.memory through
// the downward API), for runtimes whose cgroup files do not show it.
const memoryLimitEnv = "TOOLSVC_MEMORY_LIMIT"

// parseMemoryLimit reads serve.memoryLimit (--memory-limit): bytes, or a Kubernetes
// quantity such as 512Mi. Empty means not declared (0).
func parseMemoryLimit(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("serve.memoryLimit (--memory-limit, default $%s): %q is not a positive number of bytes such as 536870912 or 512Mi", memoryLimitEnv, s)
	}
	v, ok := q.AsInt64()
	if !ok {
		return math.MaxInt64, nil
	}
	return uint64(v), nil
}

// memoryLimitSource is where a soft memory limit came from, for the start log.
type memoryLimitSource struct {
	source    string // "GOMEMLIMIT", "AUTOMEMLIMIT=off", "cgroup", "declared", or "none"
	container uint64 // the container's limit the share was taken of (0: none)
}

// setMemoryLimit gives the Go runtime a soft memory limit of
// memoryLimitRatio of the container's: the lower of the cgroup's
// (memory.max on cgroup v2, memory.limit_in_bytes on v1, found through
// /proc/self/cgroup and /proc/self/mountinfo by automemlimit) and the
// declared one. GOMEMLIMIT in the environment wins, as the runtime's own
// setting; AUTOMEMLIMIT sets the share (or "off"). Without a limit the
// runtime keeps none: only GOGC paces the collector. It returns the limit
// in force (math.MaxInt64: none).
func setMemoryLimit(log *slog.Logger, declared uint64) (int64, error) {
	src := memoryLimitSource{source: "none"}
	provider := func() (uint64, error) {
		cg, err := memlimit.FromCgroup()
		if err != nil && !errors.Is(err, memlimit.ErrNoLimit) {
			// No cgroup or no memory controller: not an error for a
			// process outside a container.
			log.Debug("no cgroup memory limit found", "err", err)
		}
		switch {
		case err == nil && (declared == 0 || cg <= declared):
			src = memoryLimitSource{source: "cgroup", container: cg}
			return cg, nil
		case declared > 0:
			src = memoryLimitSource{source: "declared", container: declared}
			return declared, nil
		}
		return 0, memlimit.ErrNoLimit
	}
	limit, err := memlimit.Set(memlimit.WithProvider(provider), memlimit.WithRatio(memoryLimitRatio))
	if err != nil {
		return limit, err
	}
	switch v, auto := os.Getenv("GOMEMLIMIT"), os.Getenv("AUTOMEMLIMIT"); {
	case v != "":
		src.source = "GOMEMLIMIT"
	case auto == "off":
		src.source = "AUTOMEMLIMIT=off"
	}
	gogc := os.Getenv("GOGC")
	if gogc == "" {
		gogc = strconv.Itoa(gcPercent)
	}
	attrs := []any{"source", src.source, "GOGC", gogc}
	if limit != math.MaxInt64 {
		attrs = append(attrs, "soft_limit_bytes", limit, "soft_limit_mib", limit>>20)
	}
	if src.container > 0 {
		attrs = append(attrs, "container_limit_bytes", src.container)
	}
	log.Info("memory limit", attrs...)
	return limit, nil
}
