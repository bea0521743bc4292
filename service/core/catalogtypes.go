package core

import "github.com/toolsvc/toolsvc/mcpbridge"

// The catalog's value types, as the wires see them. The wires import the
// core only (TestLayering); these aliases are the one place that names
// where the catalog's types live, so that moving them (into their own
// package) changes this file and nothing else.
type (
	// Tool is one tool of the catalog under its exposed name.
	Tool = mcpbridge.Tool
	// Snapshot is an immutable tool catalog at one revision.
	Snapshot = mcpbridge.Snapshot
	// Catalog is the shared tool catalog (snapshots, history, signals).
	Catalog = mcpbridge.Catalog
	// ToolView is the tool catalog as one principal sees it.
	ToolView = mcpbridge.ToolView
	// Subscription signals catalog changes (capacity 1: changes collapse).
	Subscription = mcpbridge.Subscription
	// Resource, ResourceTemplate and Prompt are the resource catalog's
	// entries; ResourceSnapshot is the three lists at one revision.
	Resource         = mcpbridge.Resource
	ResourceTemplate = mcpbridge.ResourceTemplate
	Prompt           = mcpbridge.Prompt
	ResourceSnapshot = mcpbridge.ResourceSnapshot
	// ResourceCatalog is the shared resource catalog.
	ResourceCatalog = mcpbridge.ResourceCatalog
)

// MaxNameLen is the longest exposed tool name.
const MaxNameLen = mcpbridge.MaxNameLen

// Catalog helpers: revisions (content hashes) and diffs of tool lists,
// the resource lists' revision, and the naming rules.
var (
	Revision           = mcpbridge.Revision
	Diff               = mcpbridge.Diff
	DiffTools          = mcpbridge.DiffTools
	ResourceRevision   = mcpbridge.ResourceRevision
	ValidExposedName   = mcpbridge.ValidExposedName
	ServerPrefix       = mcpbridge.ServerPrefix
	ValidateServerName = mcpbridge.ValidateServerName
)
