// Command toolsvc serves the tools of many MCP servers over one gRPC API
// (toolsvc serve: package server), and is a small client for that API
// (every other command: package cli). main only dispatches.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolsvc/toolsvc/cmd/toolsvc/cli"
	"github.com/toolsvc/toolsvc/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dispatch(ctx, os.Args[1:])
	stop()
	if code := cli.Exit(os.Stderr, err); code != 0 {
		os.Exit(code)
	}
}

func dispatch(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return server.Command(ctx, args[1:])
		case "demo-server": // the built-in demo upstream serve runs without --config
			return server.RunDemoServer(ctx)
		}
	}
	return cli.Run(ctx, args)
}
