package service

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/toolsvc/toolsvc/service/core"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// FuzzAuthenticate feeds arbitrary authorization headers to the
// authenticator (static tokens and JWTs against a JWKS). Never a panic; a
// caller is authenticated only by a configured token or a JWT signed by the
// JWKS key with the right issuer, audience and expiry; every refusal is
// UNAUTHENTICATED with ErrorInfo reason UNAUTHENTICATED, and never echoes
// what the caller sent.
//
// CI runs the seed corpus (go test); a longer run:
//
//	go test -run '^$' -fuzz FuzzAuthenticate -fuzztime 5m ./service
func FuzzAuthenticate(f *testing.F) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		f.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
	kf, err := keyfunc.NewJWKSetJSON(jwks)
	if err != nil {
		f.Fatal(err)
	}
	const static = "static-token-0123456789"
	a := core.NewAuthenticator(map[string]string{static: "svc"}, &core.JWTOptions{Keyfunc: kf, Issuer: "idp", Audience: "toolsvc"}, false)
	sign := func(claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
		tok.Header["kid"] = "k1"
		s, _ := tok.SignedString(key)
		return s
	}
	exp := time.Now().Add(time.Hour).Unix()
	good := sign(jwt.MapClaims{"sub": "carol", "iss": "idp", "aud": "toolsvc", "exp": exp})
	for _, h := range []string{
		"Bearer " + static, "bearer " + static, "Bearer " + static + " ", "Bearer " + static[:10], "Basic " + static,
		"Bearer " + good, "Bearer " + good[:len(good)-2], "Bearer " + strings.Replace(good, ".", "..", 1),
		"Bearer " + sign(jwt.MapClaims{"sub": "carol", "iss": "other", "aud": "toolsvc", "exp": exp}),
		"Bearer " + sign(jwt.MapClaims{"sub": "", "iss": "idp", "aud": "toolsvc", "exp": exp}),
		"Bearer " + sign(jwt.MapClaims{"sub": "carol", "iss": "idp", "aud": "toolsvc"}),
		"Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "Bearer a.b.c", "Bearer ...", "", "Bearer", "Bearer  ", "\x00",
	} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", header))
		out, err := authFunc(a)(ctx)
		tok, isBearer := strings.CutPrefix(header, "Bearer ")
		if !isBearer {
			tok, isBearer = strings.CutPrefix(header, "bearer ")
		}
		if err == nil {
			p, _ := core.PrincipalFrom(out)
			switch p.Method {
			case "token":
				if !isBearer || tok != static || p.Name != "svc" {
					t.Fatalf("header %q authenticated as %+v", header, p)
				}
			case "jwt":
				claims := jwt.MapClaims{}
				if _, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
					jwt.WithIssuer("idp"), jwt.WithAudience("toolsvc"), jwt.WithExpirationRequired()); err != nil {
					t.Fatalf("header %q authenticated as %+v, but the JWT does not verify: %v", header, p, err)
				}
				if claims["sub"] != p.Name || p.Name == "" {
					t.Fatalf("JWT principal %q, sub %v", p.Name, claims["sub"])
				}
			default:
				t.Fatalf("header %q authenticated by %q", header, p.Method)
			}
			return
		}
		st := status.Convert(err)
		if st.Code() != codes.Unauthenticated {
			t.Fatalf("header %q: %v, want UNAUTHENTICATED", header, err)
		}
		var reason string
		for _, d := range st.Details() {
			if ei, ok := d.(*errdetails.ErrorInfo); ok {
				reason = ei.GetReason()
			}
		}
		if reason != ReasonUnauthenticated {
			t.Fatalf("refusal reason %q, want %s", reason, ReasonUnauthenticated)
		}
		if len(tok) >= 8 && strings.Contains(st.Message(), tok) {
			t.Fatalf("the refusal %q echoes the token", st.Message())
		}
	})
}
