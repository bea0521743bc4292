package core

import (
	"testing"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

func TestPageTokenRoundTrip(t *testing.T) {
	t.Parallel()
	tok := pageToken{revision: "0123456789abcdef0123456789abcdef", after: "srv__tool-1"}
	got, err := decodePageToken(tok.encode())
	if err != nil || got != tok {
		t.Fatalf("decode(encode(%v)) = %v, %v", tok, got, err)
	}
}

func FuzzDecodePageToken(f *testing.F) {
	f.Add(pageToken{revision: "0123456789abcdef0123456789abcdef", after: "a__b"}.encode())
	f.Add("")
	f.Add("cDE6OjpA")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := decodePageToken(s)
		if err != nil {
			return
		}
		if !ValidRevision(tok.revision) || !mcpbridge.ValidExposedName(tok.after) {
			t.Fatalf("decodePageToken(%q) accepted %v", s, tok)
		}
	})
}
