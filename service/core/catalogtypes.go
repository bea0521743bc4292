package core

import (
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/mcpbridge/catalog"
)

// The catalog's value types, as the wires see them: they live in package
// mcpbridge/catalog (which knows no session), and the wires import the core
// only (TestWiresImportTheCoreOnly). ToolView, a principal's view as the
// bridge serves it, is the bridge's.
type (
	// Tool is one tool of the catalog under its exposed name.
	Tool = catalog.Tool
	// Snapshot is an immutable tool catalog at one revision.
	Snapshot = catalog.Snapshot
	// Catalog is the shared tool catalog (snapshots, history, signals).
	Catalog = catalog.Catalog
	// ToolView is the tool catalog as one principal sees it.
	ToolView = mcpbridge.ToolView
	// Subscription signals catalog changes (capacity 1: changes collapse).
	Subscription = catalog.Subscription
	// Resource, ResourceTemplate and Prompt are the resource catalog's
	// entries; ResourceSnapshot is the three lists at one revision.
	Resource         = catalog.Resource
	ResourceTemplate = catalog.ResourceTemplate
	Prompt           = catalog.Prompt
	ResourceSnapshot = catalog.ResourceSnapshot
	// ResourceCatalog is the shared resource catalog.
	ResourceCatalog = catalog.ResourceCatalog
)

// MaxNameLen is the longest exposed tool name.
const MaxNameLen = catalog.MaxNameLen

// Catalog helpers: revisions (content hashes) and diffs of tool lists,
// the resource lists' revision, and the naming rules.
var (
	Revision           = catalog.Revision
	Diff               = catalog.Diff
	DiffTools          = catalog.DiffTools
	ResourceRevision   = catalog.ResourceRevision
	ValidExposedName   = catalog.ValidExposedName
	ServerPrefix       = catalog.ServerPrefix
	ValidateServerName = catalog.ValidateServerName
)
