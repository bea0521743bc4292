// Package origin is the one definition of a URL's origin that the bridge's
// redirect and credential rules (mcpbridge/transport.go) and the OAuth token
// requests (mcpbridge/oauth) share.
package origin

import (
	"net"
	"net/url"
	"strings"
)

// MaxRedirects is net/http's own limit on a redirect chain.
const MaxRedirects = 10

// Of is a URL's origin as RFC 6454 §4 defines it: scheme, host and port,
// the port made explicit, so http://h and http://h:80 are one origin and
// http://h:80 and http://h:81 are two.
func Of(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
