package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/service"
)

// setupTracing exports spans over OTLP/gRPC to endpoint (insecure unless
// OTEL_EXPORTER_OTLP_INSECURE=false) and installs the W3C propagator. The
// returned func flushes and stops it.
func setupTracing(ctx context.Context, endpoint string) (func(), error) {
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://"))}
	if os.Getenv("OTEL_EXPORTER_OTLP_INSECURE") != "false" && !strings.HasPrefix(endpoint, "https://") {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	res := sdkresource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("toolsvc"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}, nil
}

// buildAuth turns the config's auth section into the service's
// authenticator and authorizer. A JWKS URL is fetched (and refreshed in the
// background) for as long as ctx lives.
func buildAuth(ctx context.Context, a *config.Auth, mtls bool) (*service.Authenticator, *service.Authorizer, error) {
	tokens := map[string]string{}
	for name, tok := range a.Tokens {
		tokens[tok] = name
	}
	if a.TokensFile != "" {
		data, err := config.ReadFile(a.TokensFile)
		if err != nil {
			return nil, nil, fmt.Errorf("tokensFile: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, tok, ok := strings.Cut(line, ":")
			if !ok || strings.TrimSpace(name) == "" || len(strings.TrimSpace(tok)) < 16 {
				return nil, nil, fmt.Errorf("tokensFile %s:%d: want \"principal:token\" with a token of at least 16 characters", a.TokensFile, n)
			}
			tokens[strings.TrimSpace(tok)] = strings.TrimSpace(name)
		}
		if err := sc.Err(); err != nil {
			return nil, nil, fmt.Errorf("tokensFile: %w", err)
		}
	}
	var jwtOpts *service.JWTOptions
	if j := a.JWT; j != nil {
		var kf keyfunc.Keyfunc
		var err error
		if j.JWKSFile != "" {
			raw, rerr := config.ReadFile(j.JWKSFile)
			if rerr != nil {
				return nil, nil, fmt.Errorf("jwt.jwksFile: %w", rerr)
			}
			kf, err = keyfunc.NewJWKSetJSON(json.RawMessage(raw))
		} else {
			kf, err = keyfunc.NewDefaultCtx(ctx, []string{j.JWKSURL})
		}
		if err != nil {
			return nil, nil, fmt.Errorf("jwt: %w", err)
		}
		jwtOpts = &service.JWTOptions{Keyfunc: kf, Issuer: j.Issuer, Audience: j.Audience}
	}
	if a.MTLS && !mtls {
		return nil, nil, fmt.Errorf("auth.mtls needs --tls-client-ca")
	}
	var rules []service.Rule
	for _, r := range a.Rules {
		rules = append(rules, service.Rule{Principal: r.Principal, Allow: r.Allow, Deny: r.Deny})
	}
	return service.NewAuthenticator(tokens, jwtOpts, a.MTLS), service.NewAuthorizer(rules, a.Admins), nil
}
