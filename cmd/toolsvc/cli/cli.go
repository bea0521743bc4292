// Package cli is toolsvc's command line apart from serve: the client
// commands of the gRPC API (tools, call, watch, tasks, resources, prompts,
// complete, search, servers), the AdminService commands (refresh,
// reconnect, reload, login, logout), config check, and oauth login. It
// owns the usage text, the terminal-safe printing of what a server or an
// upstream sends, and the exit codes; package server owns serve.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Usage is the command line's help text.
const Usage = `toolsvc: one gRPC API for the tools of many MCP servers.

Usage:
  toolsvc serve [--config FILE] [--listen ADDR]    run the service (default :50051;
                                                   no --config: a built-in demo upstream); each
                                                   flag but --config overrides a key of the file's
                                                   serve section (toolsvc serve -h lists them)
  toolsvc tools   [--addr ADDR] [--json]           list tools
  toolsvc search  [--addr ADDR] [--json] [--limit N] [--server S]... QUERY
                                                   rank the tools for a free-text query
  toolsvc call    [--addr ADDR] [--json] [--no-input] NAME [ARGS_JSON]
                                                   call a tool; with stdin a terminal, a tool
                                                   that asks (a form, a URL to visit) is
                                                   answered by you, and roots are the current
                                                   directory; without one, or --no-input, the
                                                   server's policy answers (no sampling: a CLI
                                                   has no model)
  toolsvc call --task [--ttl D] [--detach] [--no-input] NAME [ARGS_JSON]
                                                   run the call as an upstream task: print its
                                                   handle, then follow it (status changes on
                                                   stderr, resuming when a stream breaks; input
                                                   asked on a terminal) to its result; --detach
                                                   prints the handle only
  toolsvc tasks   [--addr ADDR] [--json] [--server S]
                                                   list your tasks this replica knows of
  toolsvc task    [--addr ADDR] [--json] HANDLE [--watch [--no-input] | --cancel]
                                                   show, follow or cancel a task (HANDLE: the
                                                   handle, its prefix from toolsvc tasks, or
                                                   the task id)
  toolsvc watch   [--addr ADDR] [--json] [--resume REV] [--servers A,B] [--exclude-unavailable]
                                                   stream catalog changes, one line each;
                                                   resumes by itself when a stream ends
  toolsvc servers [--addr ADDR] [--json]           list upstream servers
  toolsvc resources [--addr ADDR] [--json]         list resources and resource templates
  toolsvc read    [--addr ADDR] [--json] [--server NAME] URI
                                                   read a resource (binary contents go to
                                                   stdout as raw bytes)
  toolsvc prompts [--addr ADDR] [--json]           list prompts (required arguments marked *)
  toolsvc prompt  [--addr ADDR] [--json] NAME [ARG=VALUE ...]
                                                   render a prompt
  toolsvc complete [--addr ADDR] [--json] (--prompt NAME | --template SERVER URI_TEMPLATE)
                   --arg NAME [--value TEXT] [--context NAME=VALUE]...
                                                   complete a prompt's or resource template's
                                                   argument, one value a line
  toolsvc refresh   [--addr ADDR] [--json] NAME    re-list one server's tools now
  toolsvc reconnect [--addr ADDR] [--json] NAME    reconnect one server now (clears its breaker)
  toolsvc reload    [--addr ADDR] [--json]         re-read the config file now (as SIGHUP does)
  toolsvc login     [--addr ADDR] [--json] --server S [--force] [--wait D]
                                                   log in to a userOAuth server before any call:
                                                   print your login link (or that you are logged
                                                   in); --wait D waits for the login to complete
  toolsvc logout    [--addr ADDR] [--json] --server S [--principal P]
                                                   revoke your login to a userOAuth server (another
                                                   principal's: auth.admins only)
  toolsvc config check FILE                        validate a config file
  toolsvc oauth login [--client-id ID] [--client-secret S] [--client-metadata-url URL]
                      [--redirect-port N] [--browser CMD] URL
                                                   log in to an OAuth-protected MCP server once
                                                   (authorization code + PKCE) and print the
                                                   server's "oauth" settings with a refresh token

Client commands talk to --addr (default $TOOLSVC_ADDR, else localhost:50051); with
--token (default $TOOLSVC_TOKEN) they send a bearer token, with --tls / --tls-ca use TLS.
`

// exitError carries a process exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// ExitCode is the process exit code of e.
func (e *exitError) ExitCode() int { return e.code }

// UsageError is the error of a bad command line: exit code 2.
func UsageError(err error) error { return &exitError{code: 2, err: err} }

// Exit writes err to w (nil: nothing) and returns the process's exit
// code: 0 without an error, the code an error carries (an ExitCode
// method), else 1. The text is made terminal-safe: a status message can
// carry an upstream's text.
func Exit(w io.Writer, err error) int {
	if err == nil {
		return 0
	}
	code := 1
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	if err.Error() != "" {
		fmt.Fprintln(w, "toolsvc:", termText(err.Error()))
	}
	return code
}

// Run runs one client command; args[0] names it. serve and demo-server are
// package server's, dispatched by main before Run.
func Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, Usage)
		return &exitError{code: 2, err: errors.New("")}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "tools":
		return describeRPCError(runTools(ctx, rest))
	case "search":
		return runSearch(ctx, rest)
	case "call":
		return describeRPCError(runCall(ctx, rest))
	case "watch":
		return describeRPCError(runWatch(ctx, rest))
	case "tasks":
		return describeRPCError(runTasks(ctx, rest))
	case "task":
		return describeRPCError(runTask(ctx, rest))
	case "servers":
		return describeRPCError(runServers(ctx, rest))
	case "resources":
		return describeRPCError(runResources(ctx, rest))
	case "read":
		return describeRPCError(runRead(ctx, rest))
	case "prompts":
		return describeRPCError(runPrompts(ctx, rest))
	case "prompt":
		return describeRPCError(runPrompt(ctx, rest))
	case "complete":
		return describeRPCError(runComplete(ctx, rest))
	case "config":
		return runConfig(rest)
	case "oauth":
		return runOAuth(ctx, rest)
	case "refresh", "reconnect":
		return describeRPCError(runAdminServer(ctx, cmd, rest))
	case "reload":
		return describeRPCError(runReload(ctx, rest))
	case "logout":
		return describeRPCError(runLogout(ctx, rest))
	case "login":
		return describeRPCError(runLogin(ctx, rest))
	case "help", "-h", "--help":
		fmt.Print(Usage)
		return nil
	}
	fmt.Fprint(os.Stderr, Usage)
	return &exitError{code: 2, err: fmt.Errorf("unknown command %q", cmd)}
}
