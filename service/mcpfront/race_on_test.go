//go:build race

package mcpfront

// raceBuild reports whether the race detector is on: it adds allocations
// of its own, which allocation bounds allow for.
const raceBuild = true
