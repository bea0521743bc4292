package config

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// isYAML says whether a file is read as YAML (by its extension).
func isYAML(file string) bool {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".yaml", ".yml":
		return true
	}
	return false
}

// yamlToJSON converts a YAML document to JSON and records the line of each
// top-level key ("/key"), auth key ("/auth.key") and list element
// ("/auth.key[i]"), server ("name") and server field ("name/field"), as
// keyLines does for JSON.
func yamlToJSON(data []byte) ([]byte, map[string]int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, err
	}
	lines := map[string]int{}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root := doc.Content[0]
		if root.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(root.Content); i += 2 {
				k, v := root.Content[i], root.Content[i+1]
				lines["/"+k.Value] = k.Line
				if k.Value == "auth" && v.Kind == yaml.MappingNode {
					for j := 0; j+1 < len(v.Content); j += 2 {
						ak, av := v.Content[j], v.Content[j+1]
						lines["/auth."+ak.Value] = ak.Line
						if av.Kind == yaml.SequenceNode {
							for n, e := range av.Content {
								lines[fmt.Sprintf("/auth.%s[%d]", ak.Value, n)] = e.Line
							}
						}
					}
				}
				if (k.Value == "mcpServers" || k.Value == "servers") && v.Kind == yaml.MappingNode {
					for j := 0; j+1 < len(v.Content); j += 2 {
						sk, sv := v.Content[j], v.Content[j+1]
						lines[sk.Value] = sk.Line
						if sv.Kind == yaml.MappingNode {
							for m := 0; m+1 < len(sv.Content); m += 2 {
								lines[sk.Value+"/"+sv.Content[m].Value] = sv.Content[m].Line
							}
						}
					}
				}
			}
		}
	}
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, lines, err
	}
	v, err := jsonable(v)
	if err != nil {
		return nil, lines, err
	}
	out, err := json.Marshal(v)
	return out, lines, err
}

// jsonable turns YAML-decoded values into JSON-encodable ones (YAML allows
// non-string map keys).
func jsonable(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			v[k] = j
		}
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = j
		}
		return m, nil
	case []any:
		for i, e := range v {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			v[i] = j
		}
		return v, nil
	}
	return v, nil
}
