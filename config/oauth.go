package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// oauthJSON is a server's "oauth" object.
type oauthJSON struct {
	Grant        string   `json:"grant"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Scopes       []string `json:"scopes"`
	TokenURL     string   `json:"tokenUrl"`
	RefreshToken string   `json:"refreshToken"`
	RefreshFile  string   `json:"refreshTokenFile"`
	Resource     string   `json:"resource"`
	AuthMethod   string   `json:"authMethod"`
	PrivateKey   string   `json:"privateKey"`
	SigningAlg   string   `json:"signingAlg"`
}

// ParseOAuth decodes a server's "oauth" object (its ${ENV} and ${file:…}
// references already resolved); grant defaults to refresh_token when a
// refreshToken is given, else client_credentials. Unknown keys are errors:
// a misspelt clientSecret must not silently become "no secret".
func ParseOAuth(raw []byte) (*mcpbridge.OAuthConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var o oauthJSON
	if err := dec.Decode(&o); err != nil {
		msg := cleanJSONError(err)
		if k, ok := strings.CutPrefix(msg, "unknown field "); ok {
			return nil, fmt.Errorf("unknown key %s (want grant, clientId, clientSecret, scopes, tokenUrl, refreshToken, refreshTokenFile, resource, authMethod, privateKey, signingAlg)", k)
		}
		return nil, fmt.Errorf("want an object: %s", msg)
	}
	if dec.More() {
		return nil, errors.New("want one object")
	}
	if o.Grant == "" {
		o.Grant = mcpbridge.OAuthClientCredentials
		if o.RefreshToken != "" || o.RefreshFile != "" {
			o.Grant = mcpbridge.OAuthRefreshToken
		}
	}
	// The rules (which fields each grant needs, URL forms) are
	// mcpbridge's: ServerConfig.Problems reports them with the others.
	return &mcpbridge.OAuthConfig{Grant: o.Grant, ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes,
		TokenURL: o.TokenURL, RefreshToken: o.RefreshToken, RefreshTokenFile: o.RefreshFile, Resource: o.Resource, AuthMethod: o.AuthMethod,
		PrivateKey: o.PrivateKey, SigningAlg: o.SigningAlg}, nil
}

// oauthSecrets are the values of c to redact wherever they might appear.
func oauthSecrets(c *mcpbridge.OAuthConfig) []string {
	var out []string
	for _, s := range []string{c.ClientSecret, c.RefreshToken, c.PrivateKey} {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	return out
}
