package service

import (
	"encoding/base64"
	"errors"
	"strings"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// A page token names the catalog revision its listing started from and the
// last tool name returned (keyset paging). Revisions are content-derived, so
// any replica that still has that revision can serve the next page.
const pageTokenVersion = "p1"

type pageToken struct {
	revision string
	after    string
}

func (t pageToken) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(pageTokenVersion + ":" + t.revision + ":" + t.after))
}

var errBadPageToken = errors.New("malformed page token")

func decodePageToken(s string) (pageToken, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return pageToken{}, errBadPageToken
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 || parts[0] != pageTokenVersion || !validRevision(parts[1]) || !mcpbridge.ValidExposedName(parts[2]) {
		return pageToken{}, errBadPageToken
	}
	return pageToken{revision: parts[1], after: parts[2]}, nil
}

// validRevision reports whether s has the shape of a catalog revision.
func validRevision(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
