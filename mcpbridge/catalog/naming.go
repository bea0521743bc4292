package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// MaxNameLen is the longest exposed tool name: the limit of LLM
// function-calling APIs (^[a-zA-Z0-9_-]{1,64}$).
const MaxNameLen = 64

// NameSep separates the server prefix from the tool name in exposed names.
const NameSep = "__"

// hashSuffixLen is the number of hex characters of the stable hash appended
// to shortened or de-duplicated names.
const hashSuffixLen = 8

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidExposedName reports whether name is usable as an exposed tool name.
func ValidExposedName(name string) bool { return validName.MatchString(name) }

// sanitize replaces every byte outside [a-zA-Z0-9_-] with '_'. Multi-byte
// runes become a single '_'.
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// stableHash is a short hex hash of the parts, joined unambiguously.
func stableHash(n int, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:n]
}

// exposedName builds "<prefix>__<tool>" from a sanitised server prefix and an
// upstream tool name; an empty prefix (a server with bareNames) gives the
// sanitised tool name alone. A name over MaxNameLen keeps its start and ends
// with "_" and a stable hash of (server, tool), so it stays unique and stable.
func exposedName(prefix, server, tool string) string {
	name := sanitize(tool)
	if prefix != "" {
		name = prefix + NameSep + name
	}
	if tool == "" {
		name += "_"
	}
	if len(name) <= MaxNameLen {
		return name
	}
	return withSuffix(name, stableHash(hashSuffixLen, server, tool))
}

// withSuffix cuts name so that "_"+suffix fits in MaxNameLen and appends it.
func withSuffix(name, suffix string) string {
	keep := MaxNameLen - 1 - len(suffix)
	if len(name) > keep {
		name = name[:keep]
	}
	return name + "_" + suffix
}

// ServerPrefix is the exposed-name prefix of a server name: the name with
// characters outside [a-zA-Z0-9_-] replaced, cut to leave room for a tool
// name.
func ServerPrefix(server string) string {
	p := sanitize(server)
	const maxPrefix = MaxNameLen / 2
	if len(p) > maxPrefix {
		const h = 4
		p = p[:maxPrefix-1-h] + "_" + stableHash(h, server)
	}
	return p
}

// ValidatePrefix says what is wrong with a configured namePrefix, or nil.
func ValidatePrefix(p string) error {
	switch {
	case len(p) > MaxNameLen/2:
		return fmt.Errorf("%q is longer than %d characters", p, MaxNameLen/2)
	case sanitize(p) != p || p == "":
		return fmt.Errorf("%q must match [a-zA-Z0-9_-]+", p)
	case strings.Contains(p, NameSep) || strings.HasPrefix(p, "_") || strings.HasSuffix(p, "_"):
		return fmt.Errorf("%q must not contain %q or start or end with '_'", p, NameSep)
	}
	return nil
}

// MaxServerNameLen is the longest server name. Exposed names use at most
// MaxNameLen/2 characters of it (ServerPrefix); the rest only costs room in
// statuses, logs and CLI tables.
const MaxServerNameLen = MaxNameLen

// serverNameChars are the characters of a server name: those the MCP
// specification allows in tool names (A-Z, a-z, 0-9, '_', '-', '.';
// https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names),
// so that "<server>__<tool>" stays a valid MCP tool name, and so that no
// name can carry a control character to a terminal or a log.
var serverNameChars = regexp.MustCompile(`^[A-Za-z0-9_.-]*$`)

// ValidateServerName says what is wrong with a configured server name, or
// returns nil. A name is 1 to MaxServerNameLen characters from
// [A-Za-z0-9_.-], without "__" and not starting or ending with '_'.
func ValidateServerName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("server name is empty")
	case len(name) > MaxServerNameLen:
		return fmt.Errorf("server name %.20q… is longer than %d characters", name, MaxServerNameLen)
	case !serverNameChars.MatchString(name):
		return fmt.Errorf("server name %q has characters outside [A-Za-z0-9_.-] (the MCP tool-name characters)", name)
	case strings.Contains(name, NameSep):
		return fmt.Errorf("server name %q contains %q, which separates server and tool in exposed names", name, NameSep)
	case strings.HasPrefix(name, "_") || strings.HasSuffix(name, "_"):
		return fmt.Errorf("server name %q starts or ends with '_', which makes exposed names ambiguous", name)
	}
	return nil
}
