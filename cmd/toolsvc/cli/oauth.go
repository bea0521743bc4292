package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
)

// runOAuth is `toolsvc oauth login`: the one interactive step of the
// refresh_token grant. It prints the authorization URL (and runs --browser
// with it), waits for the redirect on 127.0.0.1, and prints the "oauth"
// object to put under the server in the config file. The refresh token is
// a secret: store it in a file or the environment and reference it with
// ${file:…} or ${ENV}.
func runOAuth(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "login" {
		return &exitError{code: 2, err: errors.New("usage: toolsvc oauth login [flags] URL")}
	}
	fs := flag.NewFlagSet("oauth login", flag.ContinueOnError)
	clientID := fs.String("client-id", "", "a client registered with the authorization server (default: dynamic registration)")
	clientSecret := fs.String("client-secret", os.Getenv("TOOLSVC_OAUTH_CLIENT_SECRET"), "its secret (default $TOOLSVC_OAUTH_CLIENT_SECRET; none: a public client)")
	metadataURL := fs.String("client-metadata-url", "", "client ID metadata document URL, used where the server supports those")
	port := fs.Int("redirect-port", 0, "port of the redirect URI http://127.0.0.1:PORT/callback (0: any; a pre-registered client needs its registered one)")
	browser := fs.String("browser", "", "command run with the authorization URL as its last argument (e.g. xdg-open); default: only print it")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the login to complete")
	if err := fs.Parse(args[1:]); err != nil {
		return &exitError{code: 2, err: err}
	}
	if fs.NArg() != 1 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc oauth login [flags] URL")}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := oauth.Login(ctx, oauth.LoginOptions{
		Version: mcpbridge.Version, URL: fs.Arg(0), ClientID: *clientID, ClientSecret: *clientSecret, ClientMetadataURL: *metadataURL, RedirectPort: *port,
		Open: func(u string) error {
			// The authorization URL comes from the upstream's discovered
			// metadata: shown as an address bar would, opened only if http(s).
			shown := showURL(u)
			if !shown.Openable {
				return fmt.Errorf("the authorization server's URL %s is not opened: %s", shown.Text, shown.Why)
			}
			fmt.Fprintf(os.Stderr, "Open this URL in a browser and approve toolsvc (site %s):\n\n  %s\n\n", shown.Site, shown.Text)
			if *browser == "" {
				return nil
			}
			f := strings.Fields(*browser)
			cmd := exec.CommandContext(ctx, f[0], append(f[1:], u)...)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Start(); err != nil {
				return err
			}
			go func() { _ = cmd.Wait() }()
			return nil
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "logged in: the server listed %d tools with the new token\n", res.Tools)
	o := map[string]any{"grant": res.OAuth.Grant, "clientId": res.OAuth.ClientID, "refreshToken": res.OAuth.RefreshToken}
	if res.OAuth.ClientSecret != "" {
		o["clientSecret"] = res.OAuth.ClientSecret
	}
	if res.OAuth.AuthMethod != "" {
		o["authMethod"] = res.OAuth.AuthMethod
	}
	out, _ := json.MarshalIndent(map[string]any{"oauth": o}, "", "  ")
	fmt.Println(string(out))
	if res.OAuth.RefreshToken == "" {
		return errors.New("the authorization server issued no refresh token, so toolsvc could not keep the session: ask its operator to allow refresh tokens (offline_access) for this client")
	}
	fmt.Fprintln(os.Stderr, "the refresh token (and any client secret) above are secrets: store them in files or the environment and reference them with ${file:…} / ${ENV}")
	return nil
}
