package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// The resource and prompt catalog is built like the tool catalog
// (catalog.go), on the same snapshot store (snapshots.go): immutable
// entries, immutable snapshots swapped atomically, a content-derived
// revision (equal across replicas with the same upstream lists), a short
// history for page tokens and watch resumption, and capacity-1 change
// signals. It is a separate catalog so that tool clients see exactly what
// they saw before resources and prompts existed.

// Resource is one resource an upstream lists. Immutable once published.
type Resource struct {
	Server string
	R      *mcp.Resource // as listed; never modified
	hash   [32]byte
}

// ResourceTemplate is one resource template an upstream lists.
type ResourceTemplate struct {
	Server string
	T      *mcp.ResourceTemplate
	tmpl   *uritemplate.Template // nil if the template does not parse
	hash   [32]byte
}

// Matches reports whether uri is one the template yields.
func (t *ResourceTemplate) Matches(uri string) bool {
	return t.tmpl != nil && t.tmpl.Regexp().MatchString(uri)
}

// Prompt is one prompt of the merged prompt list.
type Prompt struct {
	// Name is the exposed name, "<prefix>__<prompt>", like tool names.
	Name   string
	Server string
	P      *mcp.Prompt // as listed; never modified
	hash   [32]byte
}

// ResourceSnapshot is an immutable view of every upstream's resources,
// templates and prompts.
type ResourceSnapshot struct {
	// Revision is content-derived over all three lists.
	Revision string
	// Resources sorted by (Server, URI); Templates by (Server, URITemplate);
	// Prompts by Name.
	Resources []*Resource
	Templates []*ResourceTemplate
	Prompts   []*Prompt
	Created   time.Time
}

// LookupPrompt finds a prompt by exposed name.
func (s *ResourceSnapshot) LookupPrompt(name string) (*Prompt, bool) {
	return lookupSorted(s.Prompts, name, func(p *Prompt) string { return p.Name })
}

// ServersFor returns the servers that list uri, or (when none does) the
// servers with a template matching it, sorted.
func (s *ResourceSnapshot) ServersFor(uri string) []string {
	var out []string
	for _, r := range s.Resources {
		if r.R.URI == uri && !slices.Contains(out, r.Server) {
			out = append(out, r.Server)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, t := range s.Templates {
		if t.Matches(uri) && !slices.Contains(out, t.Server) {
			out = append(out, t.Server)
		}
	}
	sort.Strings(out)
	return out
}

// resourceHistorySize is how many recent snapshots the catalog remembers.
const resourceHistorySize = 64

// ResourceCatalog is the merged resource and prompt catalog.
type ResourceCatalog struct {
	snapshots[ResourceSnapshot]

	mu      sync.Mutex // serialises writers; guards servers
	servers map[string]*resourceEntry
}

type resourceEntry struct {
	prefix    string
	resources []*Resource
	templates []*ResourceTemplate
	prompts   []*Prompt // named within the server
}

// NewResourceCatalog returns an empty catalog.
func NewResourceCatalog() *ResourceCatalog {
	c := &ResourceCatalog{servers: map[string]*resourceEntry{},
		snapshots: newSnapshots((*ResourceSnapshot).revision, func() int { return resourceHistorySize }, nil)}
	c.publish(c.buildLocked())
	return c
}

func (s *ResourceSnapshot) revision() string { return s.Revision }

// SetServer replaces one server's lists. A nil list with keep set keeps the
// server's previous list of that kind (it could not be fetched).
func (c *ResourceCatalog) SetServer(server, prefix string, res []*mcp.Resource, tmpls []*mcp.ResourceTemplate, prompts []*mcp.Prompt, keep [3]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.servers[server]
	e := &resourceEntry{prefix: prefix}
	if keep[0] && prev != nil {
		e.resources = prev.resources
	} else {
		e.resources = buildResources(server, res)
	}
	if keep[1] && prev != nil {
		e.templates = prev.templates
	} else {
		e.templates = buildTemplates(server, tmpls)
	}
	if keep[2] && prev != nil && prev.prefix == prefix {
		e.prompts = prev.prompts
	} else {
		e.prompts = buildPrompts(server, prefix, prompts)
	}
	if len(e.resources)+len(e.templates)+len(e.prompts) == 0 {
		if prev == nil {
			return
		}
		delete(c.servers, server)
	} else {
		c.servers[server] = e
	}
	c.publish(c.buildLocked())
}

// RemoveServer drops a server's entries.
func (c *ResourceCatalog) RemoveServer(server string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.servers[server]; !ok {
		return
	}
	delete(c.servers, server)
	c.publish(c.buildLocked())
}

func buildResources(server string, in []*mcp.Resource) []*Resource {
	seen := map[string]bool{}
	out := make([]*Resource, 0, len(in))
	for _, r := range in {
		if r == nil || seen[r.URI] {
			continue // the first of duplicates is used
		}
		seen[r.URI] = true
		e := &Resource{Server: server, R: r}
		e.hash = hashJSON("r", server, r)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *Resource) int { return cmp.Compare(a.R.URI, b.R.URI) })
	return out
}

func buildTemplates(server string, in []*mcp.ResourceTemplate) []*ResourceTemplate {
	seen := map[string]bool{}
	out := make([]*ResourceTemplate, 0, len(in))
	for _, t := range in {
		if t == nil || seen[t.URITemplate] {
			continue
		}
		seen[t.URITemplate] = true
		e := &ResourceTemplate{Server: server, T: t}
		if tm, err := uritemplate.New(t.URITemplate); err == nil {
			e.tmpl = tm
		}
		e.hash = hashJSON("t", server, t)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *ResourceTemplate) int { return cmp.Compare(a.T.URITemplate, b.T.URITemplate) })
	return out
}

// buildPrompts names one server's prompts like tools: "<prefix>__<name>",
// sanitised; names that collide within the server get a stable hash
// suffix (in order of original name, so the result does not depend on
// listing order).
func buildPrompts(server, prefix string, in []*mcp.Prompt) []*Prompt {
	sorted := slices.Clone(in)
	slices.SortStableFunc(sorted, func(a, b *mcp.Prompt) int {
		if a == nil || b == nil {
			return 0
		}
		return cmp.Compare(a.Name, b.Name)
	})
	used := map[string]bool{}
	seen := map[string]bool{}
	out := make([]*Prompt, 0, len(sorted))
	for _, p := range sorted {
		if p == nil || seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		name := exposedName(prefix, server, p.Name)
		for i := 0; used[name]; i++ {
			name = withSuffix(exposedName(prefix, server, p.Name), stableHash(hashSuffixLen, server, p.Name, fmt.Sprint(i)))
		}
		used[name] = true
		e := &Prompt{Name: name, Server: server, P: p}
		e.hash = promptHash(e)
		out = append(out, e)
	}
	return out
}

func promptHash(p *Prompt) [32]byte { return hashJSON("p", p.Server+"\x00"+p.Name, p.P) }

// hashJSON digests an entry's kind, server and listed form.
func hashJSON(kind, server string, v any) [32]byte {
	b, _ := json.Marshal(v)
	h := sha256.New()
	fmt.Fprintf(h, "%s:%d:%s;", kind, len(server), server)
	h.Write(b)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func (c *ResourceCatalog) buildLocked() *ResourceSnapshot {
	names := make([]string, 0, len(c.servers))
	for n := range c.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	s := &ResourceSnapshot{Created: time.Now()}
	used := map[string]bool{}
	for _, n := range names {
		e := c.servers[n]
		s.Resources = append(s.Resources, e.resources...)
		s.Templates = append(s.Templates, e.templates...)
		for _, p := range e.prompts {
			if used[p.Name] {
				// Two servers whose prefixes sanitise alike: the server that
				// sorts first keeps the name.
				np := *p
				np.Name = withSuffix(p.Name, stableHash(hashSuffixLen, p.Server, p.P.Name))
				np.hash = promptHash(&np)
				p = &np
			}
			used[p.Name] = true
			s.Prompts = append(s.Prompts, p)
		}
	}
	slices.SortFunc(s.Prompts, func(a, b *Prompt) int { return cmp.Compare(a.Name, b.Name) })
	s.Revision = ResourceRevision(s.Resources, s.Templates, s.Prompts)
	return s
}

// ResourceRevision is the content revision of (filtered, still sorted)
// resource, template and prompt lists: 32 hex digits. A snapshot's Revision
// is that of its whole lists, so equal views have equal revisions on every
// process.
func ResourceRevision(res []*Resource, tmpls []*ResourceTemplate, prompts []*Prompt) string {
	h := sha256.New()
	for _, r := range res {
		h.Write(r.hash[:])
	}
	h.Write([]byte{1})
	for _, t := range tmpls {
		h.Write(t.hash[:])
	}
	h.Write([]byte{2})
	for _, p := range prompts {
		h.Write(p.hash[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Hash digests everything a client sees of the entry.
func (r *Resource) Hash() [32]byte { return r.hash }

// Hash digests everything a client sees of the entry.
func (t *ResourceTemplate) Hash() [32]byte { return t.hash }

// Hash digests everything a client sees of the entry.
func (p *Prompt) Hash() [32]byte { return p.hash }

// ResourcesAuthName is the name authorization rules match a server's
// resources by: "<prefix>__@resources" ('@' never occurs in tool or prompt
// names, so it names no tool; "<prefix>__*" and "*" match it).
func ResourcesAuthName(prefix string) string { return prefix + NameSep + "@resources" }

// LookupTemplate finds server's resource template uriTemplate (exactly as
// listed).
func (s *ResourceSnapshot) LookupTemplate(server, uriTemplate string) (*ResourceTemplate, bool) {
	i, ok := slices.BinarySearchFunc(s.Templates, [2]string{server, uriTemplate}, func(t *ResourceTemplate, k [2]string) int {
		return cmp.Or(cmp.Compare(t.Server, k[0]), cmp.Compare(t.T.URITemplate, k[1]))
	})
	if !ok {
		return nil, false
	}
	return s.Templates[i], true
}

// ServersForTemplate returns the servers that list the resource template
// uriTemplate (exactly as listed), sorted.
func (s *ResourceSnapshot) ServersForTemplate(uriTemplate string) []string {
	var out []string
	for _, t := range s.Templates { // sorted by server
		if t.T.URITemplate == uriTemplate {
			out = append(out, t.Server)
		}
	}
	return out
}
