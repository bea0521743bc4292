package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// RawSchema is a tool schema value that carries the JSON text the upstream
// sent and the value that text decodes to (the bridge's transport taps
// record both while a tools/list response passes): the catalog keeps the
// text and the object without decoding the text again.
type RawSchema interface {
	SchemaText() (text json.RawMessage, decoded any)
}

// AsObject turns a decoded JSON value into a JSON object (nil stays nil).
func AsObject(v any) (map[string]any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

// MaxListWarnings bounds the skipped-tool warnings kept per server: a
// listing of 100,000 unusable tools must not become 100,000 strings.
const MaxListWarnings = 16

// CapWarnings keeps the first MaxListWarnings of a server's warnings and a
// count of the rest: an upstream listing 100,000 duplicate names must not
// put 100,000 strings in every ListServers answer.
func CapWarnings(ws []string) []string {
	if len(ws) <= MaxListWarnings {
		return ws
	}
	return append(ws[:MaxListWarnings:MaxListWarnings], fmt.Sprintf("%d more warnings", len(ws)-MaxListWarnings))
}
