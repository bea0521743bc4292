// Binary authserver runs internal/authtest's authorization server (an
// OpenID Provider built on zitadel/oidc) as a process for toolsvc's tests.
// It prints "URL <issuer>" on stdout once it serves, and stops on SIGTERM
// or SIGINT.
//
//	authserver -access-ttl 30s -refresh-ttl 1h \
//	  -clients '[{"id":"agent","redirectURIs":["http://127.0.0.1/callback"],"audience":["toolsvc"]},
//	             {"id":"toolsvc","secret":"s3cret","redirectURIs":["http://127.0.0.1/oauth/callback"]}]' \
//	  -refuse-exchange mallory -exchange-audiences http://127.0.0.1:8080/mcp
//
// Without -clients it registers those two clients (the secret "toolsvc-secret").
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/toolsvc/toolsvc/internal/authtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	accessTTL := flag.Duration("access-ttl", 0, "lifetime of access tokens (default 5m)")
	refreshTTL := flag.Duration("refresh-ttl", 0, "lifetime of refresh tokens (default 1h)")
	clients := flag.String("clients", `[{"id":"agent","redirectURIs":["http://127.0.0.1/callback"],"audience":["toolsvc"]},`+
		`{"id":"toolsvc","secret":"toolsvc-secret","redirectURIs":["http://127.0.0.1/oauth/callback"]}]`,
		"registered clients, a JSON array of {id, secret, redirectURIs, audience}")
	refuse := flag.String("refuse-exchange", "", "comma-separated subjects whose tokens are never exchanged")
	audiences := flag.String("exchange-audiences", "", "comma-separated audiences a token exchange may ask for (default any)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("authserver: ")

	cfg := authtest.Config{Addr: *addr, AccessTTL: *accessTTL, RefreshTTL: *refreshTTL,
		RefuseExchange: split(*refuse), ExchangeAudiences: split(*audiences)}
	if err := json.Unmarshal([]byte(*clients), &cfg.Clients); err != nil {
		log.Fatalf("-clients: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := authtest.Start(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("URL %s\n", s.URL())
	<-ctx.Done()
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
