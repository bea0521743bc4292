package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Serve is the "serve" section: the settings of the serving process itself
// (listeners, TLS, limits, the MCP front door, interactive calls, tasks).
// Each has one name, its key here (serve.<key> in docs/configuration.md),
// and one serve flag that only overrides it; package server holds each
// one's flag, default and whether a reload applies it (server.Settings).
// Durations are strings in the file ("15s"), lists arrays of strings.
type Serve struct {
	Listen                     string        `json:"listen"`
	AdminListen                string        `json:"adminListen"`
	LogLevel                   string        `json:"logLevel"`
	LogFormat                  string        `json:"logFormat"`
	ShutdownTimeout            time.Duration `json:"shutdownTimeout"`
	MaxRequestBytes            int           `json:"maxRequestBytes"`
	MaxResponseBytes           int           `json:"maxResponseBytes"`
	MaxConnectionAge           time.Duration `json:"maxConnectionAge"`
	MaxConnectionAgeGrace      time.Duration `json:"maxConnectionAgeGrace"`
	TLSCert                    string        `json:"tlsCert"`
	TLSKey                     string        `json:"tlsKey"`
	TLSClientCA                string        `json:"tlsClientCA"`
	MCPListen                  string        `json:"mcpListen"`
	MCPAllowedHosts            []string      `json:"mcpAllowedHosts"`
	MCPAllowedOrigins          []string      `json:"mcpAllowedOrigins"`
	MCPSessionKeyFile          string        `json:"mcpSessionKeyFile"`
	MCPPageSize                int           `json:"mcpPageSize"`
	MCPMaxSessions             int           `json:"mcpMaxSessions"`
	MCPMaxSessionsPerPrincipal int           `json:"mcpMaxSessionsPerPrincipal"`
	MCPSessionTimeout          time.Duration `json:"mcpSessionTimeout"`
	MCPBodyTimeout             time.Duration `json:"mcpBodyTimeout"`
	MCPDiscovery               string        `json:"mcpDiscovery"`
	MCPCoreTools               []string      `json:"mcpCoreTools"`
	MCPDiscoveryPrincipals     []string      `json:"mcpDiscoveryPrincipals"`
	SearchRanker               string        `json:"searchRanker"`
	PublicURL                  string        `json:"publicURL"`
	StateKeyFile               string        `json:"stateKeyFile"`
	TaskPollInterval           time.Duration `json:"taskPollInterval"`
	InputTimeout               time.Duration `json:"inputTimeout"`
	MaxWaitingPerPrincipal     int           `json:"maxWaitingPerPrincipal"`
	MaxWaiting                 int           `json:"maxWaiting"`
	MaxTaskWatchesPerPrincipal int           `json:"maxTaskWatchesPerPrincipal"`
	MaxParkedPerCall           int           `json:"maxParkedPerCall"`
	MaxInputRequestBytes       int           `json:"maxInputRequestBytes"`
	MaxParkedBytesPerPrincipal int64         `json:"maxParkedBytesPerPrincipal"`
	MaxParkedBytes             int64         `json:"maxParkedBytes"`
	AddrFile                   string        `json:"addrFile"`
	OTLPEndpoint               string        `json:"otlpEndpoint"`
	Kubeconfig                 string        `json:"kubeconfig"`
	MemoryLimit                string        `json:"memoryLimit"`
}

// ServeKeys are the keys of the serve section, in Serve's field order.
func ServeKeys() []string {
	t := reflect.TypeFor[Serve]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i] = jsonName(t.Field(i))
	}
	return keys
}

// ServeField is the field of s that key names (nil: no such key), for
// the flags that override it and the reload's comparison.
func ServeField(s *Serve, key string) any {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if jsonName(v.Type().Field(i)) == key {
			return v.Field(i).Addr().Interface()
		}
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// parseServe decodes the serve section onto s (the defaults), every key on
// its own so that one bad value hides no other: an unknown key is a
// problem (the section is toolsvc's own, so a misspelt key would silently
// leave a default in force), as is a value of the wrong type. It returns
// the keys the file sets.
func parseServe(raw json.RawMessage, s *Serve, add func(field, format string, args ...any)) []string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		add("", "want an object of settings, got %s", kindOf(raw))
		return nil
	}
	var set []string
	for _, k := range sortedKeys(obj) {
		p := ServeField(s, k)
		if p == nil {
			add("."+k, "unknown key %q (the keys of the serve section: docs/configuration.md, \"Settings\")", k)
			continue
		}
		if err := decodeSetting(obj[k], p); err != nil {
			add("."+k, "%s", err)
			continue
		}
		set = append(set, k)
	}
	return set
}

// decodeSetting decodes one serve value into p: a duration from its
// string, a number that must be whole and not negative, anything else as
// JSON decodes it.
func decodeSetting(raw json.RawMessage, p any) error {
	switch p := p.(type) {
	case *time.Duration:
		var d Duration
		if err := d.UnmarshalJSON(raw); err != nil {
			return err
		}
		*p = d.D
		return nil
	case *int, *int64:
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("want a whole number, got %s", kindOf(raw))
		}
		v, err := n.Int64()
		if err != nil || v < 0 {
			return fmt.Errorf("want a whole number of at least 0, got %s", n)
		}
		if ip, ok := p.(*int); ok {
			*ip = int(v)
		} else {
			*p.(*int64) = v
		}
		return nil
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return fmt.Errorf("%s", cleanJSONError(err))
	}
	return nil
}

// kindOf names the JSON kind of raw for a problem's text.
func kindOf(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "invalid JSON"
	}
	switch v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}
