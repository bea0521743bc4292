package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

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

// credentialKeys are the keys of a credentials object.
var credentialKeys = keysOf(credentialsJSON{})

// credentialKeyList names them for a refusal.
const credentialKeyList = "mode, issuer, tokenUrl, authorizationUrl, clientId, clientSecret, scopes, audience, resource, subjectTokenType, requireSameSubject, maxSessions, sessionIdle, privateTools"

// credentialProblem is one problem of a credentials object: field is ""
// for the object itself (not an object, an unknown key) or the key whose
// value does not decode.
type credentialProblem struct {
	field string
	err   error
}

// decodeCredentials decodes a credentials object one key at a time, so
// that one bad value hides no other (config check prints every problem):
// it returns what decoded, and every unknown key and undecodable value.
func decodeCredentials(raw []byte) (*mcpbridge.CredentialsConfig, []credentialProblem) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		msg := "null"
		if err != nil {
			msg = cleanJSONError(err)
		}
		return nil, []credentialProblem{{"", fmt.Errorf("want an object: %s", msg)}}
	}
	if dec.More() {
		return nil, []credentialProblem{{"", errors.New("want one object")}}
	}
	var c credentialsJSON
	var probs []credentialProblem
	decodeKeys(obj, credentialKeys, &c,
		func(k string) {
			probs = append(probs, credentialProblem{"", fmt.Errorf("unknown key %q (want %s)", k, credentialKeyList)})
		},
		func(k string, err error) {
			probs = append(probs, credentialProblem{k, errors.New(cleanJSONError(err))})
		})
	return &mcpbridge.CredentialsConfig{Mode: c.Mode, Issuer: c.Issuer, TokenURL: c.TokenURL, AuthorizationURL: c.AuthorizationURL,
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scopes, Audience: c.Audience, Resource: c.Resource,
		SubjectTokenType: c.SubjectTokenType, RequireSameSubject: c.RequireSameSubject, MaxSessions: c.MaxSessions,
		SessionIdle: c.SessionIdle.D, PrivateTools: c.PrivateTools}, probs
}

// serverCredentials decodes a server's "credentials" object (absent or
// null: shared) into sc, adding its client secret to sc's secrets. Every
// problem of the object is reported (a value that does not decode as
// "credentials.<key>"), and what did decode is kept in sc so that
// mcpbridge's rules report theirs too; it returns false when there was
// any.
func (p *parser) serverCredentials(name string, raw json.RawMessage, sc *mcpbridge.ServerConfig) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	cc, probs := decodeCredentials(raw)
	for _, pr := range probs {
		field := "credentials"
		if pr.field != "" {
			field += "." + pr.field
		}
		p.add(name, field, "%v", pr.err)
	}
	if cc == nil {
		return false
	}
	sc.Credentials = cc
	if len(cc.ClientSecret) >= 4 {
		sc.Secrets = append(sc.Secrets, cc.ClientSecret)
	}
	return len(probs) == 0
}
