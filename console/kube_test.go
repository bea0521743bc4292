package console

import "testing"

// TestObjectOf: the sources kubediscovery names objects and sources by
// become kind, namespace and name; anything else is no object.
func TestObjectOf(t *testing.T) {
	for src, want := range map[string]*kubeObject{
		"mcpservers/tools/files": {Kind: "MCPServer", Namespace: "tools", Name: "files"},
		"services/tools/search":  {Kind: "Service", Namespace: "tools", Name: "search"},
		"services/tools":         {Kind: "Service", Namespace: "tools"},
		"mcpservers":             {Kind: "MCPServer"},
		"pods/tools/x":           nil,
		"services/a/b/c":         nil,
		"":                       nil,
	} {
		got, ok := objectOf(src)
		if want == nil {
			if ok {
				t.Errorf("objectOf(%q) = %+v, want none", src, got)
			}
			continue
		}
		if !ok || got != *want {
			t.Errorf("objectOf(%q) = %+v, %v; want %+v", src, got, ok, *want)
		}
	}
}
