package config

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
)

// Redacted is the text that stands for a secret in Redacted's output.
const Redacted = "[redacted]"

// secretFields are the fields whose values are secrets whatever they hold
// (a literal in the file as much as a ${…} reference): tokens, client
// secrets, refresh tokens, private keys, passwords and key bytes.
var secretFields = map[string]bool{
	"ClientSecret": true, "RefreshToken": true, "PrivateKey": true, "Password": true, "Token": true,
	"AccessToken": true, "Secret": true, "Key": true,
}

// secretMaps are the maps whose values are secrets (their keys are not):
// a server's headers (Authorization, API keys) and environment, the auth
// section's tokens by principal.
var secretMaps = map[string]bool{"Headers": true, "Env": true, "Tokens": true}

// skipFields are left out of the printed configuration: the resolved
// secrets themselves, the file's raw top-level values (literal secrets
// among them), and what is not configuration (the bridge's transport
// factories, the token store handle).
var skipFields = map[string]bool{"Secrets": true, "Top": true, "Transports": true, "Store": true, "Observer": true, "Logger": true}

// Redacted is the configuration as loaded (the servers with their
// defaults, the auth, kubernetes, tokenStore and serve sections) as a
// JSON-ready value, with every secret shown as "[redacted]": the values of
// secretFields and secretMaps whatever they are, a URL's password, and
// anywhere else (an argument, a URL's query, a map key) every value a
// secret reference resolved to or that the sections list as secrets
// (Config's Secrets), plus extra. It is for showing an operator what runs
// (the console's Config page), never for loading again.
func (c *Config) Redacted(extra []string) map[string]any {
	var secrets []string
	add := func(ss []string) {
		for _, s := range ss {
			if len(s) >= minRedact {
				secrets = append(secrets, s)
			}
		}
	}
	add(extra)
	for _, sc := range c.Bridge.Servers {
		add(sc.Secrets)
	}
	if c.Auth != nil {
		add(c.Auth.Secrets)
	}
	if c.TokenStore != nil {
		add(c.TokenStore.Secrets)
	}
	// Longest first: a secret that contains another is replaced whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	r := redactor{secrets: slices.Compact(secrets)}
	out := map[string]any{}
	put := func(k string, v reflect.Value) {
		if p := r.value(v, k); p != nil {
			out[k] = p
		}
	}
	put("bridge", reflect.ValueOf(c.Bridge))
	put("auth", reflect.ValueOf(c.Auth))
	put("kubernetes", reflect.ValueOf(c.Kubernetes))
	put("tokenStore", reflect.ValueOf(c.TokenStore))
	put("serve", reflect.ValueOf(c.Serve))
	if len(c.Warnings) > 0 {
		out["warnings"] = r.value(reflect.ValueOf(c.Warnings), "Warnings")
	}
	return out
}

// minRedact: shorter values are not searched for inside other strings (a
// one-letter secret would blank every string); the fields that are secrets
// are redacted whatever their length.
const minRedact = 4

type redactor struct{ secrets []string }

var (
	durationType = reflect.TypeFor[time.Duration]()
	timeType     = reflect.TypeFor[time.Time]()
	fileDuration = reflect.TypeFor[Duration]()
)

// value is v for JSON with secrets redacted; name is its field's name. A
// zero value is nil (left out), so the output shows what is set.
func (r redactor) value(v reflect.Value, name string) any {
	if !v.IsValid() {
		return nil
	}
	switch v.Type() {
	case durationType:
		if v.Int() == 0 {
			return nil
		}
		return time.Duration(v.Int()).String()
	case fileDuration:
		return r.value(v.FieldByName("D"), name)
	case timeType:
		t := v.Interface().(time.Time)
		if t.IsZero() {
			return nil
		}
		return t.Format(time.RFC3339)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return r.value(v.Elem(), name)
	case reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return nil // handles, not configuration
	case reflect.Struct:
		m := map[string]any{}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || skipFields[f.Name] {
				continue
			}
			if p := r.value(v.Field(i), f.Name); p != nil {
				m[f.Name] = p
			}
		}
		if len(m) == 0 {
			return nil
		}
		return m
	case reflect.Map:
		if v.Len() == 0 {
			return nil
		}
		m := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			k := r.text(keyString(iter.Key()))
			if secretMaps[name] {
				m[k] = Redacted
				continue
			}
			if p := r.value(iter.Value(), name); p != nil {
				m[k] = p
			}
		}
		return m
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return Redacted // key bytes
		}
		s := make([]any, 0, v.Len())
		for i := range v.Len() {
			s = append(s, r.value(v.Index(i), name))
		}
		return s
	case reflect.String:
		if v.String() == "" {
			return nil
		}
		if secretFields[name] {
			return Redacted
		}
		return r.text(v.String())
	case reflect.Bool:
		if !v.Bool() {
			return nil
		}
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() == 0 {
			return nil
		}
		if st, ok := v.Interface().(fmt.Stringer); ok { // an enum (a transport)
			return st.String()
		}
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() == 0 {
			return nil
		}
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		if v.Float() == 0 {
			return nil
		}
		return v.Float()
	}
	return nil
}

func keyString(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	return ""
}

// text is s with a URL's password and every known secret replaced.
func (r redactor) text(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), Redacted)
				s = strings.Replace(u.String(), url.QueryEscape(Redacted), Redacted, 1)
			}
		}
	}
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, Redacted)
	}
	return s
}
