package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// credentialsJSON is a server's "credentials" object (docs/credentials.md).
type credentialsJSON struct {
	Mode             string   `json:"mode"`
	Issuer           string   `json:"issuer"`
	TokenURL         string   `json:"tokenUrl"`
	AuthorizationURL string   `json:"authorizationUrl"`
	ClientID         string   `json:"clientId"`
	ClientSecret     string   `json:"clientSecret"`
	Scopes           []string `json:"scopes"`
	Audience         string   `json:"audience"`
	Resource         string   `json:"resource"`
	SubjectTokenType string   `json:"subjectTokenType"`
	// RequireSameSubject: a userOAuth login must name the principal.
	RequireSameSubject bool     `json:"requireSameSubject"`
	MaxSessions        int      `json:"maxSessions"`
	SessionIdle        Duration `json:"sessionIdle"`
	// PrivateTools: each principal's session lists its own tools.
	PrivateTools bool `json:"privateTools"`
}

// ParseCredentials decodes a server's "credentials" object (its ${ENV} and
// ${file:…} references already resolved). Unknown keys are errors, as in
// the oauth object; which fields a mode needs or refuses is mcpbridge's
// rule (ServerConfig.Problems reports it, naming "credentials.<field>").
func ParseCredentials(raw []byte) (*mcpbridge.CredentialsConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c credentialsJSON
	if err := dec.Decode(&c); err != nil {
		msg := cleanJSONError(err)
		if k, ok := strings.CutPrefix(msg, "unknown field "); ok {
			return nil, fmt.Errorf("unknown key %s (want mode, issuer, tokenUrl, authorizationUrl, clientId, clientSecret, scopes, audience, resource, subjectTokenType, requireSameSubject, maxSessions, sessionIdle, privateTools)", k)
		}
		return nil, fmt.Errorf("want an object: %s", msg)
	}
	if dec.More() {
		return nil, errors.New("want one object")
	}
	return &mcpbridge.CredentialsConfig{Mode: c.Mode, Issuer: c.Issuer, TokenURL: c.TokenURL, AuthorizationURL: c.AuthorizationURL,
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scopes, Audience: c.Audience, Resource: c.Resource,
		SubjectTokenType: c.SubjectTokenType, RequireSameSubject: c.RequireSameSubject, MaxSessions: c.MaxSessions,
		SessionIdle: c.SessionIdle.D, PrivateTools: c.PrivateTools}, nil
}

// serverCredentials decodes a server's "credentials" object (absent or
// null: shared) into sc, adding its client secret to sc's secrets; it
// returns false, reported, when the object does not decode.
func (p *parser) serverCredentials(name string, raw json.RawMessage, sc *mcpbridge.ServerConfig) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	cc, err := ParseCredentials(raw)
	if err != nil {
		p.add(name, "credentials", "%v", err)
		return false
	}
	sc.Credentials = cc
	if len(cc.ClientSecret) >= 4 {
		sc.Secrets = append(sc.Secrets, cc.ClientSecret)
	}
	return true
}
