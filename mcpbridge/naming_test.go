package mcpbridge

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestExposedName(t *testing.T) {
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
	p1 := ServerPrefix(strings.Repeat("s", 50) + "1")
	p2 := ServerPrefix(strings.Repeat("s", 50) + "2")
	if len(p1) > MaxNameLen/2 || p1 == p2 {
		t.Fatalf("ServerPrefix long names: %q, %q; want distinct and at most %d", p1, p2, MaxNameLen/2)
	}
}

func TestValidateServerName(t *testing.T) {
	for _, bad := range []string{"", "a__b", "_a", "a_"} {
		if ValidateServerName(bad) == nil {
			t.Errorf("ValidateServerName(%q) = nil, want an error", bad)
		}
	}
	for _, good := range []string{"github", "my-server", "a_b", "my server", "github.com"} {
		if err := ValidateServerName(good); err != nil {
			t.Errorf("ValidateServerName(%q) = %v, want nil", good, err)
		}
	}
}

func TestCollisionsWithinServer(t *testing.T) {
	tools := []*mcp.Tool{{Name: "read_file"}, {Name: "read.file"}, {Name: "read file"}}
	// The result must not depend on the upstream's listing order.
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		in := []*mcp.Tool{tools[order[0]], tools[order[1]], tools[order[2]]}
		out, warnings, err := buildServerTools("fs", "fs", in, true)
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
	out, warnings, _ := buildServerTools("s", "s", []*mcp.Tool{{Name: "x", Description: "first"}, {Name: "x", Description: "second"}}, true)
	if len(out) != 1 || len(warnings) != 1 {
		t.Fatalf("got %d tools, %d warnings; want 1 and 1", len(out), len(warnings))
	}
}

func TestChildEnvScrubsSecrets(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/root", "GITHUB_TOKEN=t", "AWS_SECRET_ACCESS_KEY=s", "MY_API_KEY=k",
		"DB_PASSWORD=p", "LANG=C", "KEEP_TOKEN=k2", "OVERRIDE=old"}
	got := childEnv(environ, []string{"KEEP_TOKEN"}, map[string]string{"OVERRIDE": "new", "SERVER_TOKEN": "explicit"})
	want := map[string]bool{"PATH=/bin": true, "HOME=/root": true, "LANG=C": true, "KEEP_TOKEN=k2": true,
		"OVERRIDE=new": true, "SERVER_TOKEN=explicit": true}
	if len(got) != len(want) {
		t.Fatalf("childEnv = %q, want %v", got, want)
	}
	for _, kv := range got {
		if !want[kv] {
			t.Errorf("childEnv kept or made %q", kv)
		}
	}
}
