package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The direct client and the upstream are go-sdk clients and servers. Built
// in this module they get toolsvc's patched go-sdk (the replace in go.mod,
// docs/go-sdk-decode-garbage.md), which is not what a user of the SDK has.
// With -direct-sdk stock the bench builds itself and the upstream again with
// go-sdk v1.8.0 as released (a copy of go.mod without that replace) and runs
// that build with the same arguments; toolsvc is still built from this
// module, as it ships.

// stockEnv marks the bench process that is the stock build.
const stockEnv = "TOOLSVC_BENCH_STOCK_SDK"

// runStock builds the stock bench and upstream and runs the bench.
func runStock(ctx context.Context, root string) error {
	tmp, err := os.MkdirTemp("", "toolsvc-bench-stock-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	var kept []string
	dropped := false
	for _, line := range strings.Split(string(mod), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "replace github.com/modelcontextprotocol/go-sdk ") {
			dropped = true
			continue
		}
		kept = append(kept, line)
	}
	if !dropped {
		return errors.New("-direct-sdk stock: go.mod has no replace of github.com/modelcontextprotocol/go-sdk (is the patch gone? then every build is stock)")
	}
	modFile := filepath.Join(tmp, "go.mod")
	if err := os.WriteFile(modFile, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.sum"), sum, 0o644); err != nil {
		return err
	}
	build := func(out, pkg string) error {
		log.Printf("go build %s (stock go-sdk)", pkg)
		cmd := exec.CommandContext(ctx, "go", "build", "-modfile="+modFile, "-o", out, pkg)
		cmd.Dir = root
		// The stock module's checksum is added to the copy's go.sum only.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s with stock go-sdk: %w", pkg, err)
		}
		return nil
	}
	bench, up := filepath.Join(tmp, "bench"), filepath.Join(tmp, "upstream")
	if err := build(bench, "./tests/bench"); err != nil {
		return err
	}
	args := os.Args[1:]
	if *upstreamBin == "" {
		if err := build(up, "./tests/bench/upstream"); err != nil {
			return err
		}
		args = append(args, "-upstream", up)
	}
	cmd := exec.CommandContext(ctx, bench, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), stockEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}
