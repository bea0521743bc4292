// Binary confclient is the MCP client side of toolsvc, for the MCP
// conformance suite (@modelcontextprotocol/conformance, client mode). It
// connects to the URL given as its last argument exactly as `toolsvc serve`
// would: a config file parsed by package config, then mcpbridge with its
// defaults (protocol 2025-11-25, no client capabilities). It waits for the
// bridge's first connection attempt, then calls every tool in the catalog
// with arguments made from its input schema, and exits.
//
//	confclient [-v] URL
//
// Exit status: 0 when the upstream was reached and every call returned a
// result; 1 otherwise.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
)

func main() {
	verbose := flag.Bool("v", false, "log the bridge at debug level")
	login := flag.Bool("login", false, "run toolsvc's interactive OAuth login (oauth.Login, as `toolsvc oauth login` does) instead of the bridge")
	cimd := flag.String("client-metadata-url", "", "with -login: the client ID metadata document URL")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: confclient [-v] URL")
		os.Exit(2)
	}
	if *login {
		if err := runLogin(flag.Arg(flag.NArg()-1), *cimd); err != nil {
			fmt.Fprintln(os.Stderr, "confclient:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(flag.Arg(flag.NArg()-1), *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "confclient:", err)
		os.Exit(1)
	}
}

func run(url string, verbose bool) error {
	// elicitation "defaults": answer elicitation/create with the schema's
	// defaults, the policy an operator picks for such an upstream.
	server := map[string]any{"url": url, "elicitation": "defaults"}
	if o := oauthFromContext(); o != nil {
		server["oauth"] = o
	}
	file, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"conformance": server}})
	c, err := config.Parse("conformance.json", file)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	cfg := c.Bridge
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	b, err := mcpbridge.New(cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	<-b.Ready()
	st, err := b.Server("conformance")
	if err != nil {
		return err
	}
	fmt.Printf("server %s: %s, protocol %s, %d tools\n", st.Name, st.State, st.ProtocolVersion, st.ToolCount)
	if st.State != mcpbridge.StateReady {
		return fmt.Errorf("upstream not ready: %s", st.LastError)
	}
	failed := 0
	for _, t := range b.Catalog().Current().Tools {
		args := argsFor(t.InputSchema)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := b.CallTool(ctx, t.Name, args, nil)
		cancel()
		if err != nil {
			failed++
			fmt.Printf("call %s %v: error: %v\n", t.OriginalName, args, err)
			continue
		}
		out, _ := json.Marshal(res)
		fmt.Printf("call %s %v: %s\n", t.OriginalName, args, out)
	}
	if failed > 0 {
		return fmt.Errorf("%d calls failed", failed)
	}
	return nil
}

// runLogin is `toolsvc oauth login` with the scenario's pre-registered
// client, if it hands one out, and a user agent that approves at once: it
// fetches the authorization URL and follows the redirects, as a browser
// would after the user clicked "allow", to toolsvc's loopback redirect URI.
func runLogin(url, cimd string) error {
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := oauth.Login(ctx, oauth.LoginOptions{Version: mcpbridge.Version, URL: url, ClientID: c.ClientID, ClientSecret: c.ClientSecret, ClientMetadataURL: cimd,
		Open: func(authURL string) error {
			go func() {
				resp, err := http.Get(authURL)
				if err != nil {
					fmt.Fprintln(os.Stderr, "user agent:", err)
					return
				}
				resp.Body.Close()
			}()
			return nil
		}})
	if err != nil {
		return err
	}
	fmt.Printf("logged in as client %s: %d tools, refresh token issued: %v\n", res.OAuth.ClientID, res.Tools, res.OAuth.RefreshToken != "")
	return nil
}

// oauthFromContext turns the credentials an auth scenario hands its client
// (MCP_CONFORMANCE_CONTEXT) into the server's "oauth" settings, as an
// operator would write them: a client id with a secret or a private key
// is the client_credentials grant. Scenarios that hand out nothing need
// an interactive authorization (or dynamic registration), which a
// headless gateway does not do: no oauth then.
func oauthFromContext() map[string]any {
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		PrivateKey   string `json:"private_key_pem"`
		SigningAlg   string `json:"signing_algorithm"`
	}
	if err := json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &c); err != nil || c.ClientID == "" {
		return nil
	}
	o := map[string]any{"grant": "client_credentials", "clientId": c.ClientID}
	switch {
	case c.ClientSecret != "":
		o["clientSecret"] = c.ClientSecret
	case c.PrivateKey != "":
		o["privateKey"], o["signingAlg"] = c.PrivateKey, c.SigningAlg
	default:
		return nil
	}
	return o
}

// argsFor makes an arguments object for a schema: each property's default
// if it has one, else a value of its type (numbers 2, 3, ...).
func argsFor(schema map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	args := map[string]any{}
	next := 2
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		if d, ok := p["default"]; ok {
			args[n] = d
			continue
		}
		switch p["type"] {
		case "number", "integer":
			args[n] = next
			next++
		case "boolean":
			args[n] = true
		case "string":
			args[n] = "conformance"
		case "array":
			args[n] = []any{}
		case "object":
			args[n] = map[string]any{}
		}
	}
	return args
}
