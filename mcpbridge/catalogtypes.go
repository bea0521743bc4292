package mcpbridge

import "github.com/toolsvc/toolsvc/mcpbridge/catalog"

// The merged catalogs live in package catalog (mcpbridge/catalog): their
// entries, immutable snapshots, content revisions, history, change
// signals, exposed names and per-principal listings. The bridge feeds them
// from its sessions; these names keep the bridge's API whole for its
// callers.

type (
	Tool             = catalog.Tool
	Snapshot         = catalog.Snapshot
	Catalog          = catalog.Catalog
	Subscription     = catalog.Subscription
	Resource         = catalog.Resource
	ResourceTemplate = catalog.ResourceTemplate
	Prompt           = catalog.Prompt
	ResourceSnapshot = catalog.ResourceSnapshot
	ResourceCatalog  = catalog.ResourceCatalog
)

const (
	// MaxNameLen is catalog.MaxNameLen.
	MaxNameLen = catalog.MaxNameLen
	// MaxServerNameLen is catalog.MaxServerNameLen.
	MaxServerNameLen = catalog.MaxServerNameLen
)

// NewCatalog is catalog.NewCatalog.
func NewCatalog() *Catalog { return catalog.NewCatalog() }

// NewResourceCatalog is catalog.NewResourceCatalog.
func NewResourceCatalog() *ResourceCatalog { return catalog.NewResourceCatalog() }

// Revision is catalog.Revision.
func Revision(tools []*Tool) string { return catalog.Revision(tools) }

// ResourceRevision is catalog.ResourceRevision.
func ResourceRevision(res []*Resource, tmpls []*ResourceTemplate, prompts []*Prompt) string {
	return catalog.ResourceRevision(res, tmpls, prompts)
}

// Diff is catalog.Diff.
func Diff(from, to *Snapshot) (upserted []*Tool, removed []string) { return catalog.Diff(from, to) }

// DiffTools is catalog.DiffTools.
func DiffTools(a, b []*Tool) (upserted []*Tool, removed []string) { return catalog.DiffTools(a, b) }

// ValidExposedName is catalog.ValidExposedName.
func ValidExposedName(name string) bool { return catalog.ValidExposedName(name) }

// ServerPrefix is catalog.ServerPrefix.
func ServerPrefix(server string) string { return catalog.ServerPrefix(server) }

// ValidatePrefix is catalog.ValidatePrefix.
func ValidatePrefix(p string) error { return catalog.ValidatePrefix(p) }

// ValidateServerName is catalog.ValidateServerName.
func ValidateServerName(name string) error { return catalog.ValidateServerName(name) }

// ResourcesAuthName is catalog.ResourcesAuthName.
func ResourcesAuthName(prefix string) string { return catalog.ResourcesAuthName(prefix) }
