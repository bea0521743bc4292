package core

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
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
	if len(parts) != 3 || parts[0] != pageTokenVersion || !ValidRevision(parts[1]) || !mcpbridge.ValidExposedName(parts[2]) {
		return pageToken{}, errBadPageToken
	}
	return pageToken{revision: parts[1], after: parts[2]}, nil
}

// ValidRevision reports whether s has the shape of a catalog revision.
func ValidRevision(s string) bool {
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

// malformedToken refuses a page token that is not one toolsvc made.
func malformedToken(f Fields) *Error {
	return InvalidField(f.PageToken, "malformed; pass a "+f.NextPageToken+" from a previous response, or none for the first page")
}

// expiredToken refuses a page token whose revision is no longer retained
// (neither in the history nor pinned by a listing: one the caller left
// unread for catalog.PinTTL, or made by another replica that had a revision
// this one never had).
func expiredToken(f Fields, what, rev string) *Error {
	return InvalidField(f.PageToken, fmt.Sprintf("%s revision %s is no longer retained; restart the listing without a %s", what, rev, f.PageToken))
}

// ToolCursor resolves a tool listing's page token (empty: the current
// snapshot from its start) to the snapshot it names and the exposed name
// the listing continues after; f names the token's field. Snapshots are
// the caller's view of the catalog (Tools), so the pages of a principal
// with per-principal listings continue in that principal's view.
func (s *Core) ToolCursor(ctx context.Context, token string, f Fields) (*mcpbridge.Snapshot, string, *Error) {
	cat := s.Tools(ctx)
	if token == "" {
		return cat.Current(), "", nil
	}
	tok, err := decodePageToken(token)
	if err != nil {
		return nil, "", malformedToken(f)
	}
	old, ok := cat.Snapshot(tok.revision)
	if !ok {
		return nil, "", expiredToken(f, "catalog", tok.revision)
	}
	return old, tok.after, nil
}

// ToolsAfter is the index in snap's (sorted) tools of the first tool
// after the exposed name after ("": 0).
func ToolsAfter(snap *mcpbridge.Snapshot, after string) int {
	if after == "" {
		return 0
	}
	return sort.Search(len(snap.Tools), func(i int) bool { return snap.Tools[i].Name > after })
}

// ToolPageToken is the page token that continues a listing of snap (a
// snapshot of the caller's view, from ToolCursor) after the exposed name
// after. It pins snap for the caller (catalog.PinTTL after the last page
// served from it), so a listing finishes on the revision it started from
// while the catalog moves faster than its history remembers.
func (s *Core) ToolPageToken(ctx context.Context, snap *mcpbridge.Snapshot, after string) string {
	s.Tools(ctx).Pin(snap, ToolsPrincipal(ctx))
	return pageToken{revision: snap.Revision, after: after}.encode()
}
