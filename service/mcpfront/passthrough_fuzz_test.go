package mcpfront

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzPassThrough: whatever bytes an upstream sends as a result, what the
// pass-through sends is valid JSON with no object holding a key twice (a
// client's parser and go-sdk's would otherwise read different values), and
// it says what go-sdk decodes from the upstream's bytes: the result decoded
// from what is sent equals the one decoded from what was received. Before
// 2026-07-28 it is the upstream's very bytes, less any resultType, ttlMs
// and cacheScope; after, exactly one serverInfo, resultType "complete", and
// a read's ttlMs (>= 0) and cacheScope "private".
func FuzzPassThrough(f *testing.F) {
	for _, c := range callShapes {
		f.Add([]byte(c.raw), false)
	}
	for _, c := range readShapes {
		f.Add([]byte(c.raw), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, read bool) {
		if !json.Valid(raw) {
			return // the bytes of a result go-sdk decoded: the connection parsed the line first (stdioconn.go)
		}
		var v map[string]any
		if json.Unmarshal(raw, &v) != nil {
			return // nor did go-sdk decode it (a number beyond float64, as 1e700 in structuredContent)
		}
		kind := kindCall
		if read {
			kind = kindRead
		}
		for _, era := range []bool{false, true} {
			out, ok := passThrough(raw, kind, era, era)
			if !ok {
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("passed %q as invalid JSON %q", raw, out)
			}
			if k := duplicateKey(out); k != "" {
				t.Fatalf("passed %q with the key %q twice at one level", raw, k)
			}
			var sent, got map[string]any
			if err := json.Unmarshal(out, &sent); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("%q passed but does not decode: %v", raw, err)
			}
			if !era {
				_, rt := got["resultType"]
				_, ttl := got["ttlMs"]
				_, scope := got["cacheScope"]
				if !rt && !ttl && !scope && !bytes.Equal(out, raw) {
					t.Fatalf("before 2026-07-28 passed %q as %q, want the upstream's bytes", raw, out)
				}
				for _, k := range []string{"resultType", "ttlMs", "cacheScope"} {
					if _, ok := sent[k]; ok {
						t.Fatalf("before 2026-07-28 passed %q with %s: %q", raw, k, out)
					}
					delete(got, k)
				}
			}
			if era {
				meta, _ := sent["_meta"].(map[string]any)
				if _, ok := meta[mcp.MetaKeyServerInfo]; !ok {
					t.Fatalf("2026-07-28 pass-through of %q has no serverInfo: %q", raw, out)
				}
				if sent["resultType"] != "complete" {
					t.Fatalf("2026-07-28 pass-through of %q has no resultType complete: %q", raw, out)
				}
				delete(sent, "resultType")
				delete(got, "resultType")
				if kind == kindRead { // eraResult's cache fields when the upstream sent none
					if ttl, had := got["ttlMs"]; !had && sent["ttlMs"] == 0.0 {
						delete(sent, "ttlMs")
					} else if n, _ := ttl.(float64); n < 0 && sent["ttlMs"] == 0.0 {
						sent["ttlMs"] = ttl
					}
					if sent["cacheScope"] != frontCacheScope {
						t.Fatalf("2026-07-28 read pass-through of %q has cacheScope %v: %q", raw, sent["cacheScope"], out)
					}
					delete(sent, "cacheScope")
					delete(got, "cacheScope")
				}
				gm, _ := got["_meta"].(map[string]any)
				if _, had := gm[mcp.MetaKeyServerInfo]; !had {
					delete(meta, mcp.MetaKeyServerInfo)
					if len(meta) == 0 && gm == nil {
						delete(sent, "_meta")
					}
				}
			}
			a, _ := json.Marshal(sent)
			b, _ := json.Marshal(got)
			if !bytes.Equal(a, b) {
				t.Fatalf("passed %q as %q: decodes to %s, the upstream's to %s", raw, out, a, b)
			}
		}
	})
}

// duplicateKey returns a key some object of the JSON text b holds twice,
// or "".
func duplicateKey(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, key: true})
			case '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.obj && top.key {
				if top.keys[v] {
					return v
				}
				top.keys[v] = true
				top.key = false
				continue
			}
			if top != nil && top.obj {
				top.key = true
			}
		default:
			if top != nil && top.obj {
				top.key = true
			}
		}
	}
}
