// Package catalog holds toolsvc's merged catalogs: the tool catalog
// (catalog.go) and the resource and prompt catalog (resources.go), each a
// store of immutable snapshots swapped atomically with content-derived
// revisions, a bounded history by revision (page tokens, watch
// resumption) and capacity-1 change signals (snapshots.go); exposed names
// ("<prefix>__<tool>", naming.go); schema text and its decoded form
// (schema.go); per-principal listings merged into a principal's view
// (private.go); and the revision of successive versions of a filtered
// list at the cost of what changed (revmemo.go).
//
// It knows nothing of sessions, transports or the bridge: mcpbridge feeds
// it what its sessions list, and the wires read its types through the
// core. mcpbridge/deps_test.go keeps it so.
package catalog
