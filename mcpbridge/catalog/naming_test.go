package catalog

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestExposedName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 80)
	tests := []struct {
		server, tool string
		want         string // "" means: check only validity and length
	}{
		{"github", "create_issue", "github__create_issue"},
		{"fs", "read.file", "fs__read_file"},
		{"fs", "naïve tool/v2", "fs__na_ve_tool_v2"},
		{"my server", "x", "my_server__x"},
		{"s", "", "s___"},
		{"s", long, ""},
	}
	for _, tt := range tests {
		got := exposedName(ServerPrefix(tt.server), tt.server, tt.tool)
		if !ValidExposedName(got) {
			t.Errorf("exposedName(%q, %q) = %q, not valid for ^[a-zA-Z0-9_-]{1,64}$", tt.server, tt.tool, got)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("exposedName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}
}

func TestExposedNameTruncationIsStableAndDistinct(t *testing.T) {
	t.Parallel()
	a := strings.Repeat("a", 70) + "_one"
	b := strings.Repeat("a", 70) + "_two"
	na, nb := exposedName("srv", "srv", a), exposedName("srv", "srv", b)
	if len(na) != MaxNameLen || len(nb) != MaxNameLen {
		t.Fatalf("lengths %d, %d, want %d", len(na), len(nb), MaxNameLen)
	}
	if na == nb {
		t.Fatalf("two long names both became %q", na)
	}
	if again := exposedName("srv", "srv", a); again != na {
		t.Fatalf("exposedName not stable: %q then %q", na, again)
	}
	if !strings.HasPrefix(na, "srv__aaaa") {
		t.Fatalf("truncated name %q lost its prefix", na)
	}
}

func TestServerPrefixLong(t *testing.T) {
	t.Parallel()
	p1 := ServerPrefix(strings.Repeat("s", 50) + "1")
	p2 := ServerPrefix(strings.Repeat("s", 50) + "2")
	if len(p1) > MaxNameLen/2 || p1 == p2 {
		t.Fatalf("ServerPrefix long names: %q, %q; want distinct and at most %d", p1, p2, MaxNameLen/2)
	}
}

func TestValidateServerName(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "a__b", "_a", "a_", "my server", "a\x1b[2Jb", "a\nb", "a\u202eb", "naïve", "a/b", strings.Repeat("s", MaxServerNameLen+1)} {
		if ValidateServerName(bad) == nil {
			t.Errorf("ValidateServerName(%q) = nil, want an error", bad)
		}
	}
	for _, good := range []string{"github", "my-server", "a_b", "github.com", "Srv.v2-x_y", strings.Repeat("s", MaxServerNameLen)} {
		if err := ValidateServerName(good); err != nil {
			t.Errorf("ValidateServerName(%q) = %v, want nil", good, err)
		}
	}
}

func TestCollisionsWithinServer(t *testing.T) {
	t.Parallel()
	tools := []*mcp.Tool{{Name: "read_file"}, {Name: "read.file"}, {Name: "read file"}}
	// The result must not depend on the upstream's listing order.
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		in := []*mcp.Tool{tools[order[0]], tools[order[1]], tools[order[2]]}
		out, warnings, err := buildServerTools("fs", "fs", in, nil, true, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, tl := range out {
			if prev, dup := names[tl.Name]; dup {
				t.Fatalf("order %v: %q and %q both exposed as %q", order, prev, tl.OriginalName, tl.Name)
			}
			names[tl.Name] = tl.OriginalName
			if !ValidExposedName(tl.Name) {
				t.Errorf("invalid exposed name %q", tl.Name)
			}
		}
		// "read file" sorts first, so it keeps the plain name.
		if names["fs__read_file"] != "read file" {
			t.Errorf("order %v: fs__read_file is %q, want the first original name in sort order (%q)", order, names["fs__read_file"], "read file")
		}
		if len(warnings) != 2 {
			t.Errorf("order %v: %d warnings, want 2: %q", order, len(warnings), warnings)
		}
	}
}

func TestDuplicateToolNameFromUpstream(t *testing.T) {
	t.Parallel()
	out, warnings, _ := buildServerTools("s", "s", []*mcp.Tool{{Name: "x", Description: "first"}, {Name: "x", Description: "second"}}, nil, true, nil, nil)
	if len(out) != 1 || len(warnings) != 1 {
		t.Fatalf("got %d tools, %d warnings; want 1 and 1", len(out), len(warnings))
	}
}

// TestNamesStayWithTheirTools: an exposed name, once given, keeps meaning
// the same tool while that tool exists. A newcomer that maps to a taken
// name, even one that sorts first, gets the disambiguated form; before the
// fix "read file" (sorting before "read_file") took fs__read_file over.
// The same holds across servers.
func TestNamesStayWithTheirTools(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	byName := func(name string) *Tool {
		t.Helper()
		tl, ok := c.Current().Lookup(name)
		if !ok {
			t.Fatalf("%s missing from %v", name, names(c.Current().Tools))
		}
		return tl
	}
	c.SetServer("fs", "fs", []*mcp.Tool{{Name: "read_file"}}, true)
	c.SetServer("fs", "fs", []*mcp.Tool{{Name: "read_file"}, {Name: "read file"}}, true)
	if got := byName("fs__read_file").OriginalName; got != "read_file" {
		t.Fatalf("fs__read_file now calls %q, want the incumbent read_file", got)
	}
	if got := len(c.Current().Tools); got != 2 {
		t.Fatalf("%d tools, want 2: %v", got, names(c.Current().Tools))
	}
	if w := c.Warnings("fs"); len(w) != 1 || !strings.Contains(w[0], `"read file"`) {
		t.Errorf("warnings %q, want one about the newcomer", w)
	}
	// The incumbent leaves: the newcomer keeps its own name (names do not
	// move while their tools exist).
	moved := ""
	for _, tl := range c.Current().Tools {
		if tl.OriginalName == "read file" {
			moved = tl.Name
		}
	}
	c.SetServer("fs", "fs", []*mcp.Tool{{Name: "read file"}}, true)
	if got := byName(moved).OriginalName; got != "read file" {
		t.Fatalf("%s calls %q", moved, got)
	}

	// Across servers: "a.b" sanitises to "a_b", and server "a_b"'s prefix
	// equals it. Whichever came first keeps the name.
	c = NewCatalog()
	c.SetServer("zz", "a_b", []*mcp.Tool{{Name: "t"}}, true) // arrives first, sorts last
	c.SetServer("aa", "a_b", []*mcp.Tool{{Name: "t"}}, true)
	if got := byName("a_b__t").Server; got != "zz" {
		t.Fatalf("a_b__t now belongs to server %q, want the incumbent zz", got)
	}
	// A fresh catalog with the same content names by sort order.
	fresh := NewCatalog()
	fresh.SetServer("aa", "a_b", []*mcp.Tool{{Name: "t"}}, true)
	fresh.SetServer("zz", "a_b", []*mcp.Tool{{Name: "t"}}, true)
	if tl, _ := fresh.Current().Lookup("a_b__t"); tl == nil || tl.Server != "aa" {
		t.Fatalf("fresh catalog: a_b__t = %+v, want server aa", tl)
	}
}
